// serve/admin_worker.h — the admin API's requests, answered on a thread of their own: an action
// may wait for the store's write lock (its busy timeout), which must not stop the HTTP thread
// from serving everyone else. A request waits (its connection suspended) until the worker
// answers it through its Exchange.
//
// Thread-safety: Submit from the HTTP thread; Stop from any thread (once).
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "serve/admin.h"
#include "transport/http/intake.h"

namespace evident::serve {

using http::Exchange;  // transport/http/intake.h
using http::RefusalBody;

class AdminWorker {
 public:
  struct Task {
    std::string path, method, body;
    std::map<std::string, std::string> query;
    std::shared_ptr<Exchange> exchange;
  };

  AdminWorker(const Config& config, const ServeOptions& options, size_t queue_max = 64)
      : admin_(config, options), options_(options), queue_max_(queue_max) {}
  ~AdminWorker() { Stop(); }

  // Opens the worker's read-only store handle and starts the thread.
  Status Start();
  // Queues `task`; false when the queue is full (the caller answers 503).
  bool Submit(Task&& task);
  // Answers what is queued with 503 once the task in hand is done, and ends the thread.
  void Stop();

 private:
  void Run();

  Admin admin_;
  const ServeOptions& options_;
  const size_t queue_max_;
  std::unique_ptr<Store> reader_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace evident::serve
