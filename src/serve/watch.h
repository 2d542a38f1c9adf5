// serve/watch.h — the header deadline libmicrohttpd lacks: its connection timeout counts only
// silence, so a client that sends its headers a byte at a time would hold a connection slot
// forever. Every connection is tracked from its opening (and again after each answer, waiting
// for the next request); one whose request headers have not all come within header_ms_max is
// shut down. shutdown(2), not close: the descriptor stays libmicrohttpd's, which sees the end
// of the stream and closes the connection itself.
//
// Thread-safety: Opened/Closed/Started/Answered on the HTTP thread, Sweep on another; a mutex
// covers the set. libmicrohttpd closes a descriptor only after its CLOSED notification
// returns, and that notification waits for the mutex, so Sweep never shuts a reused descriptor.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "evident/clock.h"

namespace evident::serve {

class ConnectionWatch {
 public:
  // Times are `clock`'s MonotonicMs; it must outlive the watch.
  explicit ConnectionWatch(Clock& clock) : clock_(clock) {}

  struct Link {
    int fd = -1;
    int64_t waiting_since_ms = 0;
    bool in_request = false;  // the headers of the current request have come
    bool answered = false;    // a request was answered: an idle keep-alive connection
    bool shut = false;
  };

  Link* Opened(int fd) {
    auto* link = new Link{fd, clock_.MonotonicMs(), false, false, false};
    std::lock_guard<std::mutex> lock(mu_);
    links_.insert(link);
    return link;
  }
  void Closed(Link* link) {
    std::lock_guard<std::mutex> lock(mu_);
    links_.erase(link);
    delete link;
  }
  void Started(Link* link) {
    std::lock_guard<std::mutex> lock(mu_);
    link->in_request = true;
  }
  void Answered(Link* link) {
    std::lock_guard<std::mutex> lock(mu_);
    link->in_request = false;
    link->answered = true;
    link->waiting_since_ms = clock_.MonotonicMs();
  }
  // Shuts the connections that waited for headers longer than `header_ms_max` since they
  // opened, or longer than `idle_ms_max` since their last answer (a keep-alive connection may
  // idle as long as the read timeout lets it); returns how many.
  int64_t Sweep(int64_t header_ms_max, int64_t idle_ms_max) {
    const int64_t now_ms = clock_.MonotonicMs();
    int64_t shut = 0;
    std::lock_guard<std::mutex> lock(mu_);
    for (Link* link : links_) {
      const int64_t allowed_ms = link->answered ? idle_ms_max : header_ms_max;
      if (link->in_request || link->shut || now_ms - link->waiting_since_ms <= allowed_ms) continue;
      ::shutdown(link->fd, SHUT_RDWR);
      link->shut = true;
      ++shut;
    }
    return shut;
  }

 private:
  Clock& clock_;
  std::mutex mu_;
  std::unordered_set<Link*> links_;
};

}  // namespace evident::serve
