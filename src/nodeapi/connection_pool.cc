#include "nodeapi/connection_pool.h"

#include <chrono>
#include <thread>
#include <utility>

namespace migsched {

ConnectionPool::ConnectionPool(size_t max_threads, double linger_s)
    : max_threads_(max_threads > 0 ? max_threads : 1), linger_s_(linger_s) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> fn) {
  bool spawn = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return;  // httplib closes nothing after shutdown: nothing arrives then
    tasks_.push_back(std::move(fn));
    if (idle_ < tasks_.size() && threads_ < max_threads_) {
      ++threads_;
      spawn = true;
    }
  }
  if (spawn) {
    std::thread([this] { Work(); }).detach();
  } else {
    cv_.notify_one();
  }
}

void ConnectionPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (tasks_.empty()) {
      if (shutdown_) break;
      ++idle_;
      const bool got = cv_.wait_for(lock, std::chrono::duration<double>(linger_s_),
                                    [this] { return shutdown_ || !tasks_.empty(); });
      --idle_;
      if (!got) break;  // idle too long: end this thread
      continue;
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
  --threads_;
  done_cv_.notify_all();
}

void ConnectionPool::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
  done_cv_.wait(lock, [this] { return threads_ == 0; });
}

size_t ConnectionPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

}  // namespace migsched
