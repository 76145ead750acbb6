// ConnectionPool: the task queue of every GuardedServer (guarded_server.h). cpp-httplib
// serves each connection, for as long as it is kept alive, on one task of
// its queue; its own fixed ThreadPool lets a few idle or streaming
// connections (16 idle sockets, 16 `logs -f` followers) take every thread
// and block every other client. This pool starts a thread whenever a task
// arrives and none is idle, up to `max_threads`; a thread idle for
// `linger_s` ends. Beyond `max_threads` tasks wait for a thread.
//
// Thread-safety: enqueue and shutdown are thread-safe (httplib calls enqueue
// from its accept thread, shutdown once at the end).
#ifndef MIGSCHED_NODEAPI_CONNECTION_POOL_H_
#define MIGSCHED_NODEAPI_CONNECTION_POOL_H_

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace migsched {

class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t max_threads, double linger_s = 30);
  ~ConnectionPool() override;

  void enqueue(std::function<void()> fn) override;
  // Lets the threads finish their tasks (and the queued ones), then returns.
  void shutdown() override;

  size_t threads() const;  // alive now (tests)

 private:
  void Work();

  const size_t max_threads_;
  const double linger_s_;
  mutable std::mutex mu_;            // guards everything below
  std::condition_variable cv_;       // tasks or shutdown
  std::condition_variable done_cv_;  // a thread ended
  std::deque<std::function<void()>> tasks_;
  size_t threads_ = 0;
  size_t idle_ = 0;
  bool shutdown_ = false;
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_CONNECTION_POOL_H_
