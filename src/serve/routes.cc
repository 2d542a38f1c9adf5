#include "serve/routes.h"

#include <openssl/crypto.h>
#include <strings.h>

#include <algorithm>

#include "evident/clock.h"
#include "json/files.h"
#include "serve/assets.h"
#include "transport/http/intake.h"

namespace evident::serve {

using http::RefusalBody;

MHD_Result Routes::Refuse(MHD_Connection* connection, int status, std::string_view reason,
                          std::string_view message, std::string_view allow) {
  std::vector<std::pair<std::string, std::string>> extra;
  if (status == 503) extra.emplace_back("Retry-After", "1");
  if (!allow.empty()) extra.emplace_back("Allow", std::string(allow));
  return responder_.Respond(connection, status, RefusalBody(status, reason, message),
                            "application/json", extra);
}

MHD_Result Routes::Dispatch(MHD_Connection* connection, std::string_view url,
                            std::string_view method, std::string_view body) {
  if (url == "/events") {
    if (method == "OPTIONS") return Handshake(connection);
    return Refuse(connection, 405, "method-not-allowed", "/events takes POST (and OPTIONS)",
                  "POST, OPTIONS");
  }
  const bool known = url == "/healthz" || url == "/readyz" || url == "/metrics" ||
                     url == "/metrics/history" || url == "/" || FindAsset(url).has_value();
  if (!known) return Refuse(connection, 404, "not-found", "no route " + std::string(url));
  if (method != "GET" && method != "HEAD") {
    return Refuse(connection, 405, "method-not-allowed", std::string(url) + " takes GET",
                  "GET, HEAD");
  }
  if (url == "/healthz") {
    return responder_.Respond(connection, 200, "{\"status\":\"up\"}", "application/json", {});
  }
  if (url == "/readyz") return Ready(connection);
  if (url == "/metrics") {
    return responder_.Respond(connection, 200, metrics_.Render(SystemClock().NowMs()),
                              "text/plain; version=0.0.4; charset=utf-8", {});
  }
  if (url == "/metrics/history") {
    return responder_.Respond(connection, 200, metrics_.RenderHistory(), "application/json", {});
  }
  return Page(connection, url);
}

// The operator page's files: compiled in; EVIDENT_PAGE_DIR, when set, serves them from that
// directory instead (for working on the page without a rebuild). MHD_NO: no such file.
MHD_Result Routes::Page(MHD_Connection* connection, std::string_view url) {
  const std::string name = url == "/" ? "/index.html" : std::string(url);
  std::optional<std::string_view> bytes = FindAsset(name);
  if (!bytes) return Refuse(connection, 404, "not-found", "no route " + name);
  std::string from_disk;
  if (const char* dir = std::getenv("EVIDENT_PAGE_DIR"); dir != nullptr && *dir != '\0') {
    Result<std::string> read = ReadFileToString(std::string(dir) + name, size_t{4} << 20);
    if (read.ok()) {
      from_disk = *std::move(read);
      bytes = from_disk;
    }
  }
  std::string_view type = "text/html; charset=utf-8";
  if (name.size() > 3 && name.substr(name.size() - 3) == ".js") {
    type = "text/javascript; charset=utf-8";
  } else if (name.size() > 4 && name.substr(name.size() - 4) == ".css") {
    type = "text/css; charset=utf-8";
  }
  return responder_.Respond(
      connection, 200, *bytes, type,
      {{"Content-Security-Policy",
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"},
       {"X-Content-Type-Options", "nosniff"},
       {"Cache-Control", "no-store"}});
}

// Ready: the loop runs, the daemon is not stopping, and the store answers a read.
MHD_Result Routes::Ready(MHD_Connection* connection) {
  std::string why;
  if (responder_.Stopping()) {
    why = "stopping";
  } else if (!responder_.LoopRunning()) {
    why = "the consume loop is not running (the store failed; it is started again)";
  } else if (std::string trouble = responder_.StoreTrouble(); !trouble.empty()) {
    why = "the store failed: " + trouble;
  } else if (reader_ == nullptr) {
    why = "no store handle";
  } else if (Result<std::unique_ptr<Snapshot>> read = reader_->Read(); !read.ok()) {
    why = "the store does not answer: " + read.status().ToString();
  } else {
    why = responder_.BrokerTrouble();
  }
  if (why.empty()) {
    return responder_.Respond(connection, 200, "{\"status\":\"ready\"}", "application/json", {});
  }
  return Refuse(connection, 503, "not-ready", why);
}

// The CloudEvents webhook abuse protection (HTTP 1.1 Web Hooks for Event Delivery, 4.1): an
// OPTIONS request names its origin in WebHook-Request-Origin; an allowed origin is echoed in
// WebHook-Allowed-Origin, with the rate this daemon accepts (any).
MHD_Result Routes::Handshake(MHD_Connection* connection) {
  const char* origin =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "WebHook-Request-Origin");
  std::vector<std::pair<std::string, std::string>> extra = {{"Allow", "POST, OPTIONS"}};
  if (origin == nullptr) return responder_.Respond(connection, 200, "", "text/plain", extra);
  const std::vector<std::string>& allowed = options_.allowed_origins;
  const bool any = std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
  const auto same = [origin](const std::string& a) { return ::strcasecmp(a.c_str(), origin) == 0; };
  if (!any && std::none_of(allowed.begin(), allowed.end(), same)) {
    return Refuse(connection, 403, "origin-not-allowed",
                  std::string("this daemon does not take events from origin '") + origin + "'");
  }
  extra.emplace_back("WebHook-Allowed-Origin", any ? "*" : origin);
  extra.emplace_back("WebHook-Allowed-Rate", "*");
  return responder_.Respond(connection, 200, "", "text/plain", extra);
}

namespace {

// Counts the request's Authorization headers (MHD compares header names case-insensitively).
MHD_Result CountAuthorization(void* count, MHD_ValueKind /*kind*/, const char* key,
                              const char* /*value*/) {
  if (key != nullptr && strcasecmp(key, "Authorization") == 0) ++*static_cast<int*>(count);
  return MHD_YES;
}

}  // namespace

// The token compared in constant time (for equal lengths; a length differs in any case). A
// request with more than one Authorization header is refused whatever they hold: which one a
// proxy or a server reads is not for this daemon to guess.
bool Routes::Authorized(MHD_Connection* connection) const {
  int headers = 0;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &CountAuthorization, &headers);
  if (headers != 1) return false;
  const char* header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization");
  if (header == nullptr) return false;
  std::string_view value(header);
  constexpr std::string_view kBearer = "Bearer ";
  if (value.size() <= kBearer.size() || value.substr(0, kBearer.size()) != kBearer) return false;
  value.remove_prefix(kBearer.size());
  const std::string& token = options_.admin_token;
  return value.size() == token.size() &&
         CRYPTO_memcmp(value.data(), token.data(), token.size()) == 0;
}

bool Routes::AdminGate(MHD_Connection* connection, MHD_Result& refused) {
  if (options_.admin_token.empty()) {
    refused = Refuse(connection, 403, "admin-disabled",
                     "the admin API is disabled (start the daemon with --admin-token-file)");
    return false;
  }
  if (!Authorized(connection)) {
    refused = Refuse(connection, 401, "unauthorized",
                     "the admin API needs one 'Authorization: Bearer <token>' header");
    return false;
  }
  return true;
}

}  // namespace evident::serve
