// serve/http_test_client.h — a blocking HTTP/1.1 client over a loopback socket, for the daemon's
// tests: it sends the bytes it is given (so a test can send malformed requests too) and reads
// the answer until the server closes the connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace evident::serve::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (the connection closed or timed out first)
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

// A connected socket to 127.0.0.1:port with `timeout_ms` on reads and writes; -1 on failure.
inline int Connect(int port, int timeout_ms = 10'000) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Everything the server sends until it closes (or the read times out).
inline std::string ReadAll(int fd) {
  std::string out;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

inline HttpAnswer ParseAnswer(const std::string& raw) {
  HttpAnswer answer;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return answer;
  answer.status = std::atoi(raw.c_str() + 9);
  size_t line = raw.find("\r\n") + 2;
  while (line < head_end) {
    const size_t end = raw.find("\r\n", line);
    const std::string header = raw.substr(line, end - line);
    const size_t colon = header.find(':');
    if (colon != std::string::npos) {
      std::string name = header.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t value = colon + 1;
      while (value < header.size() && header[value] == ' ') ++value;
      answer.headers[name] = header.substr(value);
    }
    line = end + 2;
  }
  answer.body = raw.substr(head_end + 4);
  return answer;
}

// Sends `raw` as it is on a new connection and reads the answer.
inline HttpAnswer SendRaw(int port, std::string_view raw, int timeout_ms = 10'000) {
  const int fd = Connect(port, timeout_ms);
  if (fd < 0) return {};
  HttpAnswer answer;
  if (SendAll(fd, raw)) answer = ParseAnswer(ReadAll(fd));
  ::close(fd);
  return answer;
}

// One request with Connection: close.
inline HttpAnswer Http(int port, std::string_view method, std::string_view path,
                       const std::vector<std::pair<std::string, std::string>>& headers = {},
                       std::string_view body = {}, int timeout_ms = 10'000) {
  std::string raw;
  raw.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  raw.append("Connection: close\r\nContent-Length: ").append(std::to_string(body.size()));
  raw.append("\r\n");
  for (const auto& [name, value] : headers)
    raw.append(name).append(": ").append(value).append("\r\n");
  raw.append("\r\n").append(body);
  return SendRaw(port, raw, timeout_ms);
}

}  // namespace evident::serve::testing
