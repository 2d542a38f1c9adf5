// A JetStream connection's servers, credentials and TLS (nats_client.h).
#include "transport/jetstream/nats_client.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "evident/redact.h"

namespace evident::jetstream {
namespace {

// Where Debian keeps the certificate authorities the system trusts (ca-certificates): the
// trust of `tls=true` without tls.ca.
constexpr const char* kSystemCaFile = "/etc/ssl/certs/ca-certificates.crt";

constexpr std::array<std::string_view, 11> kKeys = {
    "user", "password", "password_file", "token",   "token_file",  "creds",
    "tls",  "tls.ca",   "tls.cert",      "tls.key", "tls.hostname"};

// Bounds on what a user hands in: a secret file's first line, the servers of a seed list, and
// --broker-config options (a NATS connection takes 11 keys; more options are a mistake).
constexpr size_t kSecretBytesMax = 64 << 10;
constexpr size_t kSeedServersMax = 64;
constexpr size_t kPropertiesMax = 64;

std::string KnownKeys() {
  std::string out;
  for (const std::string_view key : kKeys) out += (out.empty() ? "" : ", ") + std::string(key);
  return out;
}

// The field of `s` that `key` sets; null for an unknown key (tls, a flag, is apart).
std::string* FieldOf(ClientSettings& s, std::string_view key) {
  if (key == "user") return &s.user;
  if (key == "password") return &s.password;
  if (key == "password_file") return &s.password_file;
  if (key == "token") return &s.token;
  if (key == "token_file") return &s.token_file;
  if (key == "creds") return &s.creds;
  if (key == "tls.ca") return &s.tls_ca;
  if (key == "tls.cert") return &s.tls_cert;
  if (key == "tls.key") return &s.tls_key;
  if (key == "tls.hostname") return &s.tls_hostname;
  return nullptr;
}

Status SetOne(ClientSettings& s, std::string_view key, std::string value) {
  if (key == "tls") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument("--broker-config tls takes true or false");
    }
    s.tls = s.tls || value == "true";
    return Status::Ok();
  }
  std::string* field = FieldOf(s, key);
  if (field == nullptr) {
    return Status::InvalidArgument("--broker-config: a NATS connection takes no '" +
                                   std::string(key) + "' (it takes " + KnownKeys() + ")");
  }
  if (!field->empty()) {
    return Status::InvalidArgument("--broker-config " + std::string(key) + " is given twice");
  }
  *field = std::move(value);
  if (key.substr(0, 4) == "tls.") s.tls = true;
  return Status::Ok();
}

// The combinations that cannot be: one way to say who the client is, and a key with its
// certificate.
Status CheckCombination(const ClientSettings& s) {
  const bool user = !s.user.empty();
  const bool password = !s.password.empty() || !s.password_file.empty();
  const bool token = !s.token.empty() || !s.token_file.empty();
  if (!s.password.empty() && !s.password_file.empty()) {
    return Status::InvalidArgument("--broker-config: password or password_file, not both");
  }
  if (!s.token.empty() && !s.token_file.empty()) {
    return Status::InvalidArgument("--broker-config: token or token_file, not both");
  }
  if (password && !user) {
    return Status::InvalidArgument("--broker-config: a password needs its user");
  }
  if (static_cast<int>(user) + static_cast<int>(token) + static_cast<int>(!s.creds.empty()) > 1) {
    return Status::InvalidArgument(
        "--broker-config: a connection says who it is one way: user (and password), token, or "
        "creds");
  }
  if (s.tls_cert.empty() != s.tls_key.empty()) {
    return Status::InvalidArgument(
        "--broker-config: tls.cert and tls.key go together (the client's certificate and its "
        "private key)");
  }
  return Status::Ok();
}

// A secret kept in a file: its first line, without the line end, read up to kSecretBytesMax (a
// file of one endless line is refused, not read whole).
Result<std::string> ReadSecret(std::string_view key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kSecretBytesMax + 1, '\0');
  if (in) in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (!in && !in.eof()) {
    return Status::InvalidArgument("--broker-config " + std::string(key) + ": cannot read " + path);
  }
  head.resize(static_cast<size_t>(in.gcount()));
  const size_t end = head.find('\n');
  if (end == std::string::npos && head.size() > kSecretBytesMax) {
    return Status::InvalidArgument("--broker-config " + std::string(key) + ": the first line of " +
                                   path + " is longer than " + std::to_string(kSecretBytesMax) +
                                   " bytes");
  }
  std::string line = head.substr(0, end);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    return Status::InvalidArgument("--broker-config " + std::string(key) + ": " + path +
                                   " begins with an empty line");
  }
  return line;
}

Status Readable(std::string_view key, const std::string& path) {
  if (path.empty()) return Status::Ok();
  std::ifstream in(path);
  if (!in) {
    return Status::InvalidArgument("--broker-config " + std::string(key) + ": cannot read " + path);
  }
  return Status::Ok();
}

// Whether `one` can name a server: [nats:// or tls://][user information@]HOST[:PORT], PORT in
// 1..65535. A malformed entry is refused, not tried again and again as an unreachable one is.
bool ServerUrl(std::string_view one) {
  if (const size_t scheme = one.find("://"); scheme != std::string_view::npos) {
    const std::string_view name = one.substr(0, scheme);
    if (name != "nats" && name != "tls") return false;
    one.remove_prefix(scheme + 3);
  }
  if (const size_t at = one.rfind('@'); at != std::string_view::npos) one.remove_prefix(at + 1);
  const size_t bracket = one.rfind(']');  // an IPv6 address: [::1]:4222
  const size_t colon = one.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    const std::string_view port = one.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    const int number = std::stoi(std::string(port));
    if (number < 1 || number > 65535) return false;
    one = one.substr(0, colon);
  }
  return !one.empty() && one.find_first_of(" /?#") == std::string_view::npos;
}

// The servers of `url`: one URL, or a comma-separated seed list (libnats's SetURL takes one URL
// only; its SetServers, the list). kInvalidArgument naming an entry that is no server's URL.
Status SetServers(natsOptions* opts, const std::string& url) {
  std::vector<std::string> servers;
  for (const std::string_view entry : UriListEntries(url)) {
    std::string one(entry);
    one.erase(0, one.find_first_not_of(' '));
    one.erase(one.find_last_not_of(' ') + 1);
    if (!one.empty() && !ServerUrl(one)) {
      return Status::InvalidArgument("'" + RedactUri(one) + "' in '" + RedactUri(url) +
                                     "' is no server's URL (nats://HOST:PORT)");
    }
    if (!one.empty()) servers.push_back(std::move(one));
  }
  if (servers.size() > kSeedServersMax) {
    return Status::InvalidArgument("'" + RedactUri(url) + "' names " +
                                   std::to_string(servers.size()) + " servers; at most " +
                                   std::to_string(kSeedServersMax));
  }
  if (servers.empty()) {
    return Status::InvalidArgument("no server in '" + RedactUri(url) + "' (nats://HOST:PORT)");
  }
  std::vector<const char*> list;
  list.reserve(servers.size());
  for (const std::string& one : servers) list.push_back(one.c_str());
  const natsStatus n = servers.size() == 1 ? natsOptions_SetURL(opts, list.front())
                                           : natsOptions_SetServers(opts, list.data(),
                                                                    static_cast<int>(list.size()));
  if (n != NATS_OK) {
    return Status::InvalidArgument("'" + RedactUri(url) + "': " + natsStatus_GetText(n));
  }
  return Status::Ok();
}

Status Failed(std::string_view what, natsStatus s) {
  std::string m = "--broker-config " + std::string(what) + ": " + natsStatus_GetText(s);
  if (const char* detail = nats_GetLastError(nullptr); detail != nullptr && *detail != '\0') {
    m += ": " + std::string(detail);
  }
  return Status::InvalidArgument(std::move(m));
}

Status ApplyTls(natsOptions* opts, const ClientSettings& s) {
  natsStatus n = natsOptions_SetSecure(opts, true);
  if (n != NATS_OK) return Failed("tls (this libnats may be built without TLS)", n);
  const std::string& ca = s.tls_ca.empty() ? std::string(kSystemCaFile) : s.tls_ca;
  n = natsOptions_LoadCATrustedCertificates(opts, ca.c_str());
  if (n != NATS_OK) return Failed(s.tls_ca.empty() ? "tls (the system's CAs)" : "tls.ca", n);
  if (!s.tls_cert.empty()) {
    n = natsOptions_LoadCertificatesChain(opts, s.tls_cert.c_str(), s.tls_key.c_str());
    if (n != NATS_OK) return Failed("tls.cert and tls.key", n);
  }
  if (!s.tls_hostname.empty()) {
    n = natsOptions_SetExpectedHostname(opts, s.tls_hostname.c_str());
    if (n != NATS_OK) return Failed("tls.hostname", n);
  }
  return Status::Ok();
}

}  // namespace

Result<ClientSettings> ParseClientSettings(const std::vector<std::string>& properties) {
  ClientSettings s;
  if (properties.size() > kPropertiesMax) {
    return Status::InvalidArgument("--broker-config is given " + std::to_string(properties.size()) +
                                   " times; a NATS connection takes at most " +
                                   std::to_string(kPropertiesMax));
  }
  for (const std::string& text : properties) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--broker-config takes KEY=VALUE (a NATS connection takes " +
                                     KnownKeys() + ")");
    }
    const std::string_view key = std::string_view(text).substr(0, eq);
    if (eq + 1 == text.size()) {
      return Status::InvalidArgument("--broker-config " + std::string(key) + " has no value");
    }
    EVIDENT_RETURN_IF_ERROR(SetOne(s, key, text.substr(eq + 1)));
  }
  EVIDENT_RETURN_IF_ERROR(CheckCombination(s));
  return s;
}

Status CheckClientFiles(const ClientSettings& s) {
  if (!s.password_file.empty()) {
    EVIDENT_RETURN_IF_ERROR(ReadSecret("password_file", s.password_file).status());
  }
  if (!s.token_file.empty()) {
    EVIDENT_RETURN_IF_ERROR(ReadSecret("token_file", s.token_file).status());
  }
  EVIDENT_RETURN_IF_ERROR(Readable("creds", s.creds));
  EVIDENT_RETURN_IF_ERROR(Readable("tls.ca", s.tls_ca));
  EVIDENT_RETURN_IF_ERROR(Readable("tls.cert", s.tls_cert));
  return Readable("tls.key", s.tls_key);
}

Status ApplyClientSettings(natsOptions* opts, const std::string& url, const ClientSettings& s) {
  EVIDENT_RETURN_IF_ERROR(SetServers(opts, url));
  natsStatus n = NATS_OK;
  if (!s.user.empty()) {
    std::string password = s.password;
    if (!s.password_file.empty()) {
      EVIDENT_ASSIGN_OR_RETURN(password, ReadSecret("password_file", s.password_file));
    }
    n = natsOptions_SetUserInfo(opts, s.user.c_str(),
                                password.empty() ? nullptr : password.c_str());
    if (n != NATS_OK) return Failed("user", n);
  }
  if (!s.token.empty() || !s.token_file.empty()) {
    std::string token = s.token;
    if (!s.token_file.empty()) {
      EVIDENT_ASSIGN_OR_RETURN(token, ReadSecret("token_file", s.token_file));
    }
    n = natsOptions_SetToken(opts, token.c_str());
    if (n != NATS_OK) return Failed("token", n);
  }
  if (!s.creds.empty()) {
    n = natsOptions_SetUserCredentialsFromFiles(opts, s.creds.c_str(), nullptr);
    if (n != NATS_OK) return Failed("creds", n);
  }
  if (s.tls) return ApplyTls(opts, s);
  return Status::Ok();
}

}  // namespace evident::jetstream
