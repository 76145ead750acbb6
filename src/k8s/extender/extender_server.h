// The extender's HTTP server (cpp-httplib): kube-scheduler POSTs to
// <urlPrefix>/<verb>; migsched serves
//
//   POST /filter, /prioritize, /bind   the verbs (k8s/extender/extender.h)
//   GET  /healthz                      {"status":"ok"} while the process serves
//   GET  /readyz                       200 when `ready()` says so, else 503 with the reason
//   GET  /metrics                      Prometheus text: calls per verb, bind errors,
//                                      unreadable bodies
//
// Every other path or method is a 404 with a JSON error. Bodies up to
// kMaxBodyBytes (a NodeList of thousands of nodes, without nodeCacheCapable).
//
// Thread-safety: Start/Stop from one thread; requests run on httplib's pool.
#ifndef MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_
#define MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "k8s/extender/extender.h"

namespace httplib {
class Server;
}

namespace migsched::k8s {

inline constexpr size_t kMaxBodyBytes = 64u << 20;
inline constexpr size_t kServerThreads = 64;  // requests served at once

class ExtenderServer {
 public:
  // `ready` returns "" when ready, else why not (shown by /readyz).
  ExtenderServer(Extender* extender, std::function<std::string()> ready);
  ~ExtenderServer();  // Stop()

  // Binds host:port (port 0: the kernel picks) and serves on a thread.
  // Returns the port. kUnavailable when the address cannot be bound.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();

 private:
  Extender* const extender_;
  std::function<std::string()> ready_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_
