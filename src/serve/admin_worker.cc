#include "serve/admin_worker.h"

namespace evident::serve {

Status AdminWorker::Start() {
  EVIDENT_ASSIGN_OR_RETURN(reader_, options_.open_store(true));
  admin_.SetReader(reader_.get());
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

bool AdminWorker::Submit(Task&& task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || queue_.size() >= queue_max_) return false;
  queue_.push_back(std::move(task));
  ready_.notify_one();
  return true;
}

void AdminWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    ready_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::deque<Task> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (Task& task : left) {
    task.exchange->Answer(503, RefusalBody(503, "shutting-down", "the daemon is stopping"));
  }
}

void AdminWorker::Run() {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    const AdminAnswer answer =
        admin_.Handle(task.path, task.method, task.body, [&task](const char* name) -> const char* {
          auto found = task.query.find(name);
          return found == task.query.end() ? nullptr : found->second.c_str();
        });
    task.exchange->Answer(answer.status, answer.body);
  }
}

}  // namespace evident::serve
