// schema/uri.h — RFC 3986 reference resolution and JSON Pointer helpers for $id / $ref.
//
// Only what schema identification needs: split a URI, resolve a reference against a base, and
// normalize the result so that equal identifiers compare equal as strings. No I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "json/pointer.h"

namespace evident::schema::internal {

struct UriParts {
  bool has_scheme = false;
  bool has_authority = false;
  bool has_query = false;
  bool has_fragment = false;
  std::string scheme, authority, path, query, fragment;
};

UriParts SplitUri(std::string_view uri);
std::string JoinUri(const UriParts& parts);

// Resolves `reference` against `base` (RFC 3986 section 5.2) and normalizes: lower-case scheme
// and host, dot segments removed, an empty trailing fragment ("#") dropped.
std::string ResolveUri(std::string_view base, std::string_view reference);

// Splits "abs#frag" into ("abs", "frag"); the fragment is returned still percent-encoded.
void SplitFragment(std::string_view uri, std::string& without_fragment, std::string& fragment);

// JSON Pointer tokens and fragments (json/pointer.h).
using json::EscapePointerToken;
using json::PercentDecode;

}  // namespace evident::schema::internal
