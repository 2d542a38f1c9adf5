// The HTTP transport of effects, on libcurl: one POST per call, the event as the body, the
// intent key as Idempotency-Key. libcurl is Debian's maintained HTTP client (timeouts, https,
// connection errors told apart), so nothing of HTTP is written by hand here; SHA-256 is
// OpenSSL's.
#include <curl/curl.h>
#include <openssl/evp.h>

#include <memory>
#include <mutex>

#include "evident/effects.h"

namespace evident {
namespace {

struct CurlDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct HeadersDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct DigestDeleter {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

// The answer's body as it streams in: hashed whole up to the limit, the rest discarded.
struct Body {
  EVP_MD_CTX* digest = nullptr;
  int64_t bytes = 0;
  int64_t bytes_max = 0;
  bool digest_ok = true;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t n = size * count;
  const int64_t room = body->bytes_max - body->bytes;
  const size_t taken = room <= 0 ? 0 : std::min<size_t>(n, static_cast<size_t>(room));
  if (taken > 0 && EVP_DigestUpdate(body->digest, data, taken) != 1) body->digest_ok = false;
  body->bytes += static_cast<int64_t>(taken);
  return n;  // the rest is read and dropped: the call still ends with the status
}

std::string HexDigest(EVP_MD_CTX* context) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context, out, &size) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "sha256:";
  for (unsigned int i = 0; i < size; ++i) {
    text += kHex[out[i] >> 4];
    text += kHex[out[i] & 15];
  }
  return text;
}

// Which CURLcodes mean the request certainly never reached the target.
bool NeverSent(CURLcode code, CURL* handle) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return true;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_ABORTED_BY_CALLBACK: {
      // 0: the timeout (or the abandonment) came before the request could be sent (during the
      // connection or the TLS handshake).
      curl_off_t pretransfer_us = 0;
      return curl_easy_getinfo(handle, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us) == CURLE_OK &&
             pretransfer_us == 0;
    }
    default:
      return false;
  }
}

// libcurl's progress callback, at least about once a second during a transfer: a nonzero
// answer aborts it (CURLE_ABORTED_BY_CALLBACK) once the call is abandoned.
int OnProgress(void* abandon, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/,
               curl_off_t /*ulnow*/) {
  const auto* token = static_cast<const CancelToken*>(abandon);
  return token != nullptr && token->cancelled() ? 1 : 0;
}

// The call's headers; null when out of memory. The trace context goes as W3C Trace Context
// asks, in headers of its own (texts checked by the caller: a traceparent that parsed, a
// printable-ASCII tracestate).
std::unique_ptr<curl_slist, HeadersDeleter> RequestHeaders(const EffectCall& call) {
  std::unique_ptr<curl_slist, HeadersDeleter> headers;
  const auto add = [&headers](const std::string& line) {
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (grown == nullptr) {
      headers.reset();  // out of memory: the call is not made
      return false;
    }
    (void)headers.release();
    headers.reset(grown);
    return true;
  };
  bool ok = add("Content-Type: application/cloudevents+json") &&
            add("Idempotency-Key: " + call.key) && add("Expect:");
  if (ok && !call.traceparent.empty()) {
    ok = add("traceparent: " + call.traceparent) &&
         (call.tracestate.empty() || add("tracestate: " + call.tracestate));
  }
  return ok ? std::move(headers) : nullptr;
}

class HttpTransport final : public EffectTransport {
 public:
  explicit HttpTransport(int64_t response_bytes_max) : response_bytes_max_(response_bytes_max) {}

  CallResult Post(const EffectCall& call) override {
    CallResult result;
    std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
    std::unique_ptr<EVP_MD_CTX, DigestDeleter> digest(EVP_MD_CTX_new());
    if (!handle || !digest || EVP_DigestInit_ex(digest.get(), EVP_sha256(), nullptr) != 1) {
      result.error = "cannot set up an HTTP call (out of memory)";
      return result;  // kNotSent: nothing left this process
    }
    std::unique_ptr<curl_slist, HeadersDeleter> headers = RequestHeaders(call);
    if (!headers) {
      result.error = "cannot set up an HTTP call (out of memory)";
      return result;
    }
    Body body{digest.get(), 0, response_bytes_max_};
    CURL* h = handle.get();
    // Every option is checked: a call made without one of them (no timeout, another protocol)
    // is not the call the effect declares.
    const CURLcode set[] = {
        curl_easy_setopt(h, CURLOPT_URL, call.url.c_str()),
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L),
        curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1)),
        curl_easy_setopt(h, CURLOPT_POST, 1L),
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, call.body.data()),
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size())),
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get()),
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(call.timeout_ms)),
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody),
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &body),
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https"),
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, call.abandon == nullptr ? 1L : 0L),
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress),
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, static_cast<const void*>(call.abandon)),
    };
    for (const CURLcode c : set) {
      if (c != CURLE_OK) {
        result.error = std::string("cannot set up the HTTP call: ") + curl_easy_strerror(c);
        return result;  // kNotSent
      }
    }
    const CURLcode code = curl_easy_perform(h);
    if (code == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      result.outcome = CallOutcome::kAnswered;
      result.http_status = status;
      result.digest = body.digest_ok ? HexDigest(digest.get()) : std::string();
      return result;
    }
    result.error = curl_easy_strerror(code);
    if (NeverSent(code, h)) {
      result.outcome = CallOutcome::kNotSent;
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
      result.outcome = CallOutcome::kTimeout;
      result.error = "no answer within " + std::to_string(call.timeout_ms) + " ms";
    } else if (code == CURLE_ABORTED_BY_CALLBACK) {
      result.outcome = CallOutcome::kReset;
      result.error = "abandoned before an answer came: the runner was stopping";
    } else {
      result.outcome = CallOutcome::kReset;
    }
    return result;
  }

 private:
  int64_t response_bytes_max_;
};

}  // namespace

Result<std::unique_ptr<EffectTransport>> NewHttpTransport(int64_t response_bytes_max) {
  static std::once_flag once;
  static CURLcode init = CURLE_OK;
  std::call_once(once, [] { init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init != CURLE_OK) {
    return Status::Internal(std::string("libcurl does not initialise: ") +
                            curl_easy_strerror(init));
  }
  if (response_bytes_max < 0) return Status::InvalidArgument("response_bytes_max < 0");
  return std::unique_ptr<EffectTransport>(new HttpTransport(response_bytes_max));
}

}  // namespace evident
