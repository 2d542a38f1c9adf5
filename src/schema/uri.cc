#include "schema/uri.h"

#include <cctype>

namespace evident::schema::internal {
namespace {

std::string RemoveDotSegments(std::string_view input) {
  std::string out;
  std::string in(input);
  size_t i = 0;
  // A loop bound: every iteration consumes at least one character of `in`.
  while (i < in.size()) {
    std::string_view rest(in.data() + i, in.size() - i);
    if (rest.starts_with("../")) {
      i += 3;
    } else if (rest.starts_with("./")) {
      i += 2;
    } else if (rest.starts_with("/./")) {
      i += 2;
    } else if (rest == "/.") {
      in.replace(i, 2, "/");
    } else if (rest.starts_with("/../") || rest == "/..") {
      if (rest == "/..") {
        in.replace(i, 3, "/");
      } else {
        i += 3;
      }
      const size_t slash = out.rfind('/');
      out.erase(slash == std::string::npos ? 0 : slash);
    } else if (rest == "." || rest == "..") {
      i = in.size();
    } else {
      size_t next = in.find('/', i + (rest[0] == '/' ? 1 : 0));
      if (next == std::string::npos) next = in.size();
      out.append(in, i, next - i);
      i = next;
    }
  }
  return out;
}

std::string MergePaths(const UriParts& base, const std::string& ref_path) {
  if (base.has_authority && base.path.empty()) return "/" + ref_path;
  const size_t slash = base.path.rfind('/');
  if (slash == std::string::npos) return ref_path;
  return base.path.substr(0, slash + 1) + ref_path;
}

void Lower(std::string& s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

UriParts SplitUri(std::string_view uri) {
  UriParts p;
  const size_t hash = uri.find('#');
  if (hash != std::string_view::npos) {
    p.has_fragment = true;
    p.fragment = std::string(uri.substr(hash + 1));
    uri = uri.substr(0, hash);
  }
  const size_t question = uri.find('?');
  if (question != std::string_view::npos) {
    p.has_query = true;
    p.query = std::string(uri.substr(question + 1));
    uri = uri.substr(0, question);
  }
  // A scheme is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) followed by ":".
  size_t colon = uri.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      std::isalpha(static_cast<unsigned char>(uri[0]))) {
    bool scheme_ok = true;
    for (size_t i = 0; i < colon; ++i) {
      const char c = uri[i];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
        scheme_ok = false;
        break;
      }
    }
    if (scheme_ok) {
      p.has_scheme = true;
      p.scheme = std::string(uri.substr(0, colon));
      uri = uri.substr(colon + 1);
    }
  }
  if (uri.starts_with("//")) {
    p.has_authority = true;
    uri = uri.substr(2);
    const size_t slash = uri.find('/');
    p.authority = std::string(uri.substr(0, slash));
    uri = slash == std::string_view::npos ? std::string_view() : uri.substr(slash);
  }
  p.path = std::string(uri);
  return p;
}

std::string JoinUri(const UriParts& p) {
  std::string out;
  if (p.has_scheme) out += p.scheme + ":";
  if (p.has_authority) out += "//" + p.authority;
  out += p.path;
  if (p.has_query) out += "?" + p.query;
  if (p.has_fragment && !p.fragment.empty()) out += "#" + p.fragment;
  return out;
}

std::string ResolveUri(std::string_view base_text, std::string_view reference) {
  const UriParts ref = SplitUri(reference);
  const UriParts base = SplitUri(base_text);
  UriParts t;
  if (ref.has_scheme) {
    t = ref;
    t.path = RemoveDotSegments(ref.path);
  } else {
    t.has_scheme = base.has_scheme;
    t.scheme = base.scheme;
    if (ref.has_authority) {
      t.has_authority = true;
      t.authority = ref.authority;
      t.path = RemoveDotSegments(ref.path);
      t.has_query = ref.has_query;
      t.query = ref.query;
    } else {
      t.has_authority = base.has_authority;
      t.authority = base.authority;
      if (ref.path.empty()) {
        t.path = base.path;
        t.has_query = ref.has_query || base.has_query;
        t.query = ref.has_query ? ref.query : base.query;
      } else {
        if (ref.path[0] == '/') {
          t.path = RemoveDotSegments(ref.path);
        } else {
          t.path = RemoveDotSegments(MergePaths(base, ref.path));
        }
        t.has_query = ref.has_query;
        t.query = ref.query;
      }
    }
    t.has_fragment = ref.has_fragment;
    t.fragment = ref.fragment;
  }
  Lower(t.scheme);
  // Host names are case-insensitive; user info and port are not affected by lower-casing digits.
  Lower(t.authority);
  return JoinUri(t);
}

void SplitFragment(std::string_view uri, std::string& without_fragment, std::string& fragment) {
  const size_t hash = uri.find('#');
  if (hash == std::string_view::npos) {
    without_fragment = std::string(uri);
    fragment.clear();
    return;
  }
  without_fragment = std::string(uri.substr(0, hash));
  fragment = std::string(uri.substr(hash + 1));
}

}  // namespace evident::schema::internal
