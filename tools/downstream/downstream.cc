// tools/downstream/downstream.cc — evident-downstream, the scripted HTTP target of effects.
//
// evident's effect runner POSTs an event (CloudEvents structured JSON) with an Idempotency-Key
// header and classifies the answer: 2xx done; 4xx other than 408/429 failed; a timeout, a 5xx or
// a reset connection unknown. The tests and the demo need a downstream that answers in a scripted
// order (200, 409, 500, "slow": performed but answered too late, "reset": no answer at all), that
// can honour Idempotency-Key (--dedupe), and that logs every request it decided and how many times
// each key was performed, so they can assert "each intent performed exactly once across retries,
// kill -9 of the runner and restarts".
//
// It is written by hand on POSIX sockets and the standard library because no maintained library
// on Debian offers a scriptable test HTTP endpoint that de-duplicates by Idempotency-Key. It is
// test and demo tooling, not part of the library: one thread per connection (a slow answer never
// blocks other requests), one request per connection (Connection: close), state under one mutex.
//
//   evident-downstream --listen 127.0.0.1:PORT [--port-file FILE] [--log FILE]
//                      [--answer MATCH=LIST]... [--slow-ms N] [--dedupe]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::size_t kMaxHead = 64 * 1024;           // request line + headers + blank line
constexpr std::uint64_t kMaxBody = 16 * 1024 * 1024;  // Content-Length limit
constexpr int kIoTimeoutSeconds = 30;                 // a silent client is treated as gone

volatile std::sig_atomic_t g_stop = 0;

constexpr const char* kUsage =
    "usage: evident-downstream --listen 127.0.0.1:PORT [--port-file FILE] [--log FILE]\n"
    "                          [--answer MATCH=LIST]... [--slow-ms N] [--dedupe]\n"
    "  --answer MATCH=LIST  the first rule whose MATCH is a substring of the Idempotency-Key\n"
    "                       (empty MATCH: every request) answers with LIST, comma-separated,\n"
    "                       one per request, the last repeating: a status 100..599, slow, reset\n";

struct Answer {
  enum Kind { kStatus, kSlow, kReset } kind = kStatus;
  int status = 200;
};

struct Rule {
  std::string match;
  std::vector<Answer> answers;
  std::size_t used = 0;
};

struct Options {
  in_addr host{};
  int port = 0;
  std::string port_file, log;
  std::vector<Rule> rules;
  int slow_ms = 3000;
  bool dedupe = false;
};

struct Request {
  std::string method, path;
  std::optional<std::string> key, content_type, content_length, expect;
  bool transfer_encoding = false;
  std::uint64_t body_bytes = 0;
};

// What the connection thread does once the request is decided.
struct Decision {
  Answer action;
  std::string body;
};

struct Stored {
  int status;
  std::string body;
};

// Everything the connection threads share; guarded by mu.
struct State {
  Options opt;
  std::mutex mu;
  std::FILE* log = nullptr;
  long seq = 0;
  long keyless_performed = 0;
  std::unordered_map<std::string, long> performed;
  std::unordered_map<std::string, Stored> stored;  // --dedupe: the answer of the performer
};

[[noreturn]] void Usage(const std::string& message) {
  std::fprintf(stderr, "evident-downstream: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "evident-downstream: %s\n", message.c_str());
  std::_Exit(1);
}

bool ParseInt(std::string_view text, long low, long high, long& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && out >= low && out <= high;
}

// Length of the valid UTF-8 sequence starting at s[i], 0 when there is none.
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  std::uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  return cp >= 0xD800 && cp <= 0xDFFF ? 0 : n;
}

// A JSON string literal; bytes that are not UTF-8 become U+FFFD.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

std::string QuoteOrNull(const std::optional<std::string>& s) { return s ? Quote(*s) : "null"; }

// ---- command line ----

void ParseListen(const std::string& value, Options& opt) {
  const std::size_t colon = value.rfind(':');
  long port = 0;
  if (colon == std::string::npos ||
      !ParseInt(std::string_view(value).substr(colon + 1), 0, 65535, port))
    Usage("--listen wants HOST:PORT, got '" + value + "'");
  const std::string host = value.substr(0, colon);
  if (inet_pton(AF_INET, host.c_str(), &opt.host) != 1 || (ntohl(opt.host.s_addr) >> 24) != 127)
    Usage("--listen HOST must be a loopback IPv4 address (127.x.x.x), got '" + host + "'");
  opt.port = static_cast<int>(port);
}

Answer ParseAnswer(const std::string& item) {
  if (item == "slow") return {Answer::kSlow, 200};
  if (item == "reset") return {Answer::kReset, 0};
  long status = 0;
  if (!ParseInt(item, 100, 599, status))
    Usage("an answer is a status 100..599, slow or reset, got '" + item + "'");
  return {Answer::kStatus, static_cast<int>(status)};
}

Rule ParseRule(const std::string& value) {
  const std::size_t eq = value.find('=');
  if (eq == std::string::npos) Usage("--answer wants MATCH=LIST, got '" + value + "'");
  Rule rule{value.substr(0, eq), {}, 0};
  const std::string list = value.substr(eq + 1);
  for (std::size_t start = 0;;) {
    const std::size_t comma = list.find(',', start);
    rule.answers.push_back(ParseAnswer(list.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return rule;
}

Options ParseArgs(int argc, char** argv) {
  Options opt;
  bool listen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--dedupe") {
      opt.dedupe = true;
      continue;
    }
    if (i + 1 >= argc) Usage("unknown option or missing value: '" + arg + "'");
    const std::string value = argv[++i];
    long ms = 0;
    if (arg == "--listen") {
      ParseListen(value, opt), listen = true;
    } else if (arg == "--port-file") {
      opt.port_file = value;
    } else if (arg == "--log") {
      opt.log = value;
    } else if (arg == "--answer") {
      opt.rules.push_back(ParseRule(value));
    } else if (arg == "--slow-ms") {
      if (!ParseInt(value, 0, 86'400'000, ms)) Usage("--slow-ms wants milliseconds, got " + value);
      opt.slow_ms = static_cast<int>(ms);
    } else {
      Usage("unknown option '" + arg + "'");
    }
  }
  if (!listen) Usage("--listen is required");
  return opt;
}

// ---- the shared state: deciding and logging ----

long& PerformedCount(State& st, const std::optional<std::string>& key) {
  return key ? st.performed[*key] : st.keyless_performed;
}

std::string ResponseBody(const std::optional<std::string>& key, long count, int status) {
  return "{\"key\":" + QuoteOrNull(key) + ",\"performed_count\":" + std::to_string(count) +
         ",\"status\":" + std::to_string(status) + "}";
}

// Appends the request's log line; called under st.mu.
void LogLine(State& st, const Request& req, const std::string& answer, bool performed,
             bool replayed, long count) {
  ++st.seq;
  if (!st.log) return;
  const std::string line = "{\"seq\":" + std::to_string(st.seq) +
                           ",\"key\":" + QuoteOrNull(req.key) + ",\"method\":" + Quote(req.method) +
                           ",\"path\":" + Quote(req.path) + ",\"answer\":" + Quote(answer) +
                           ",\"performed\":" + (performed ? "true" : "false") +
                           ",\"replayed\":" + (replayed ? "true" : "false") +
                           ",\"performed_count\":" + std::to_string(count) +
                           ",\"body_bytes\":" + std::to_string(req.body_bytes) +
                           ",\"content_type\":" + QuoteOrNull(req.content_type) + "}\n";
  if (std::fwrite(line.data(), 1, line.size(), st.log) != line.size() || std::fflush(st.log) != 0)
    Die("cannot write the log " + st.opt.log + ": " + std::strerror(errno));
}

// The answer of the first rule matching the key, consumed; 200 when no rule matches.
Answer PickAnswer(State& st, const std::optional<std::string>& key) {
  for (Rule& rule : st.opt.rules) {
    if (!rule.match.empty() && (!key || key->find(rule.match) == std::string::npos)) continue;
    const std::size_t i = std::min(rule.used, rule.answers.size() - 1);
    ++rule.used;
    return rule.answers[i];
  }
  return {Answer::kStatus, 200};
}

std::string AnswerName(const Answer& a) {
  return a.kind == Answer::kSlow    ? "slow"
         : a.kind == Answer::kReset ? "reset"
                                    : std::to_string(a.status);
}

Decision Decide(State& st, const Request& req) {
  std::lock_guard lock(st.mu);
  long& count = PerformedCount(st, req.key);
  if (st.opt.dedupe && req.key) {
    if (auto it = st.stored.find(*req.key); it != st.stored.end()) {
      LogLine(st, req, std::to_string(it->second.status), false, true, count);
      return {{Answer::kStatus, it->second.status}, it->second.body};
    }
  }
  const Answer answer = PickAnswer(st, req.key);
  const bool performed =
      answer.kind == Answer::kSlow || (answer.kind == Answer::kStatus && answer.status / 100 == 2);
  if (performed) ++count;
  const std::string body = ResponseBody(req.key, count, answer.status);
  if (performed && st.opt.dedupe && req.key) st.stored[*req.key] = {answer.status, body};
  LogLine(st, req, AnswerName(answer), performed, false, count);
  return {answer, body};
}

// A request refused before the rules see it (400, 405, 411, 413, 431).
Decision Refuse(State& st, const Request& req, int status) {
  std::lock_guard lock(st.mu);
  const long count = PerformedCount(st, req.key);
  LogLine(st, req, std::to_string(status), false, false, count);
  return {{Answer::kStatus, status}, ResponseBody(req.key, count, status)};
}

// ---- the connection ----

// Appends what the peer sends next; false when it closed, reset or stayed silent too long.
bool RecvSome(int fd, std::string& buf) {
  char chunk[16384];
  for (;;) {
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client is gone: nothing left to tell it
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads the header section into head (ending with its CRLF) and what follows it into rest.
// Returns 0, 431 when the section exceeds kMaxHead, or -1 when the client went away.
int ReadHead(int fd, std::string& head, std::string& rest) {
  std::string buf;
  for (;;) {
    const std::size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      if (end + 4 > kMaxHead) return 431;
      head = buf.substr(0, end + 2);
      rest = buf.substr(end + 4);
      return 0;
    }
    if (buf.size() >= kMaxHead) return 431;
    if (!RecvSome(fd, buf)) return -1;
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// Records one header field; false when it is malformed.
bool AddHeader(std::string_view line, Request& req) {
  const std::size_t colon = line.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  const std::string name = Lower(std::string(line.substr(0, colon)));
  if (name.find_first_of(" \t") != std::string::npos) return false;
  std::string value = Trim(line.substr(colon + 1));
  if (name == "content-length") {
    if (req.content_length && *req.content_length != value) return false;
    req.content_length = std::move(value);
  } else if (name == "idempotency-key") {
    if (!req.key) req.key = std::move(value);
  } else if (name == "content-type") {
    if (!req.content_type) req.content_type = std::move(value);
  } else if (name == "expect") {
    req.expect = Lower(std::move(value));
  } else if (name == "transfer-encoding") {
    req.transfer_encoding = true;
  }
  return true;
}

// Parses the request line and the headers; false when they are malformed.
bool ParseHead(std::string_view head, Request& req) {
  std::size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp1 == 0 || sp2 == sp1 + 1) return false;
  req.method = std::string(line.substr(0, sp1));
  req.path = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!line.substr(sp2 + 1).starts_with("HTTP/1.")) return false;
  for (std::size_t start = eol + 2; start < head.size(); start = eol + 2) {
    eol = head.find("\r\n", start);
    if (!AddHeader(head.substr(start, eol - start), req)) return false;
  }
  return true;
}

// The status that refuses the request before its body is read, or 0 when the body is wanted.
int Check(const std::string& head, Request& req, std::uint64_t& length) {
  if (!ParseHead(head, req)) return 400;
  if (req.method != "POST") return 405;
  if (!req.content_length || req.transfer_encoding) return 411;
  const std::string& text = *req.content_length;
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return 400;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
  if (ec != std::errc() || length > kMaxBody) return 413;
  return 0;
}

// Reads the body to its end, counting it; false when the client went away.
bool ReadBody(int fd, Request& req, std::string& rest, std::uint64_t length) {
  if (rest.size() < length && req.expect == "100-continue")
    SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  req.body_bytes = std::min<std::uint64_t>(rest.size(), length);
  while (req.body_bytes < length) {
    rest.clear();
    if (!RecvSome(fd, rest)) return false;
    req.body_bytes = std::min<std::uint64_t>(req.body_bytes + rest.size(), length);
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

void SendResponse(int fd, int status, const std::string& body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  const bool no_body = status < 200 || status == 204 || status == 304;
  if (status == 405) out += "Allow: POST\r\n";
  if (!no_body) {
    out +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  out += "Connection: close\r\n\r\n";
  if (!no_body) out += body;
  SendAll(fd, out);
}

// Half-closes, then reads what the client still sends for up to a second, so that unread bytes
// do not turn the close into a reset that could destroy the answer in flight.
void CloseGracefully(int fd) {
  shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  char sink[16384];
  for (auto now = std::chrono::steady_clock::now(); now < deadline;
       now = std::chrono::steady_clock::now()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || recv(fd, sink, sizeof sink, 0) <= 0) break;
  }
  close(fd);
}

void CloseWithReset(int fd) {
  const linger hard{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

// True when the client closed or reset its side (e.g. it timed out during a slow answer).
bool ClientGone(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void Carry(const State& st, int fd, const Decision& d) {
  switch (d.action.kind) {
    case Answer::kReset:
      CloseWithReset(fd);
      return;
    case Answer::kSlow:
      std::this_thread::sleep_for(std::chrono::milliseconds(st.opt.slow_ms));
      if (ClientGone(fd)) {
        close(fd);
        return;
      }
      SendResponse(fd, 200, d.body);
      CloseGracefully(fd);
      return;
    case Answer::kStatus:
      SendResponse(fd, d.action.status, d.body);
      CloseGracefully(fd);
      return;
  }
}

void Serve(State& st, int fd) {
  Request req;
  std::string head, rest;
  std::uint64_t length = 0;
  int refusal = ReadHead(fd, head, rest);
  if (refusal == 0) refusal = Check(head, req, length);
  if (refusal < 0 || (refusal == 0 && !ReadBody(fd, req, rest, length))) {
    close(fd);  // the client went away mid-request: nothing to log
    return;
  }
  Carry(st, fd, refusal ? Refuse(st, req, refusal) : Decide(st, req));
}

// ---- the listener ----

void OnSignal(int) { g_stop = 1; }

void InstallSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int Listen(const Options& opt) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) Die(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr = opt.host;
  addr.sin_port = htons(static_cast<std::uint16_t>(opt.port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    Die("cannot listen on port " + std::to_string(opt.port) + ": " + std::strerror(errno));
  if (listen(fd, 128) != 0) Die(std::string("listen: ") + std::strerror(errno));
  return fd;
}

int BoundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    Die(std::string("getsockname: ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

// Writes PORT\n to path.tmp and renames it over path, so a reader never sees half of it.
void WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) Die("cannot create " + tmp + ": " + std::strerror(errno));
  const bool written = std::fprintf(f, "%d\n", port) > 0;
  if (std::fclose(f) != 0 || !written) Die("cannot write " + tmp + ": " + std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    Die("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

void SetIoTimeouts(int fd) {
  const timeval tv{kIoTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void AcceptLoop(State& st, int listener) {
  while (!g_stop) {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;  // timeout or EINTR: look at g_stop again
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    SetIoTimeouts(fd);
    try {
      std::thread([&st, fd] { Serve(st, fd); }).detach();
    } catch (const std::system_error&) {
      close(fd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  State st;
  st.opt = ParseArgs(argc, argv);
  InstallSignals();
  if (!st.opt.log.empty()) {
    st.log = std::fopen(st.opt.log.c_str(), "a");
    if (!st.log) Die("cannot open the log " + st.opt.log + ": " + std::strerror(errno));
  }
  const int listener = Listen(st.opt);
  if (!st.opt.port_file.empty()) WritePortFile(st.opt.port_file, BoundPort(listener));
  AcceptLoop(st, listener);
  close(listener);
  // Connection threads may still run (slow sleepers): take the lock so no log line is half
  // written, close the log, and leave without running destructors under their feet.
  st.mu.lock();
  if (st.log && std::fclose(st.log) != 0)
    Die("cannot close the log " + st.opt.log + ": " + std::strerror(errno));
  std::_Exit(0);
}
