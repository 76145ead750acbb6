// The extender's HTTP server (cpp-httplib): kube-scheduler POSTs to
// <urlPrefix>/<verb>; migsched serves
//
//   POST /filter, /prioritize, /bind   the verbs (k8s/extender/extender.h)
//   GET  /healthz                      {"status":"ok"} while the process serves
//   GET  /readyz                       200 when `ready()` says so, else 503 with the reason
//   GET  /metrics                      Prometheus text: calls per verb, bind errors,
//                                      unreadable bodies
//
// Every other path or method is a 404 with a JSON error. A body longer than
// `max_body_bytes`, as sent or once decoded (Content-Encoding: gzip, deflate,
// br), is refused with 413 and a JSON error, never read into memory past the
// bound (the default, kMaxBodyBytes, holds a NodeList of about a thousand
// nodes, for kube-scheduler configurations without nodeCacheCapable); a chunked
// one with 411, unread. Both listeners are GuardedServers
// (nodeapi/guarded_server.h, k8s/probe_listener.h), as the node daemon's API
// is: a request head must arrive within header_timeout_s (the TLS handshake
// included) and its body within body_timeout_s, else the connection is closed;
// connections are served by a pool of up to max_connections threads, at most
// max_connections_per_peer per remote address, and connections that have not
// authenticated (no verified client certificate: on the probe listener, all)
// evict the oldest of them beyond their cap; so slow clients cannot hold every
// worker (regression: slow_clients_starve_extender).
//
// With ExtenderServerOptions' TLS files the server speaks HTTPS and checks the
// caller's client certificate against `client_ca_file` (mutual TLS, as
// kube-scheduler's extender tlsConfig certFile/keyFile/caFile present it): a
// client without a certificate signed by that CA fails the TLS handshake and
// never reaches a handler. StartProbes() adds a second, plain-HTTP listener
// that serves only /healthz, /readyz and /metrics, for the kubelet's probes and
// Prometheus, which present no client certificate.
//
// Thread-safety: Start/StartProbes/Stop from one thread; requests run on the
// servers' connection pools.
#ifndef MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_
#define MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "k8s/extender/extender.h"

namespace migsched {
class GuardedServer;
}

namespace migsched::k8s {

inline constexpr size_t kMaxBodyBytes = 16u << 20;

struct ExtenderServerOptions {
  // PEM files. All empty: plain HTTP. Otherwise all three are needed: the
  // server's certificate and key, and the CA that signs its callers' client
  // certificates.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  size_t max_body_bytes = kMaxBodyBytes;  // bytes; a longer body gets 413
  double header_timeout_s = 5;            // a request head (and TLS handshake), in all
  double body_timeout_s = 30;             // a request body, in all
  double idle_timeout_s = 5;              // keep-alive idle limit
  // Connections served at once (a bind may wait for its node's kubelet, bind_wait_s: a waiting
  // bind holds one), and per remote address.
  int max_connections = 1024;
  int max_connections_per_peer = 256;

  bool tls() const { return !cert_file.empty(); }
};

class ExtenderServer {
 public:
  // `ready` returns "" when ready, else why not (shown by /readyz).
  ExtenderServer(Extender* extender, std::function<std::string()> ready,
                 ExtenderServerOptions options = {});
  ~ExtenderServer();  // Stop()

  // Binds host:port (port 0: the kernel picks) and serves on a thread.
  // Returns the port. kUnavailable when the address cannot be bound;
  // kInvalidArgument when the TLS files are incomplete or cannot be loaded
  // (the message names them).
  StatusOr<int> Start(const std::string& host, int port);
  // The plain-HTTP probe listener (/healthz, /readyz, /metrics only). Returns
  // the port; kUnavailable when the address cannot be bound.
  StatusOr<int> StartProbes(const std::string& host, int port);
  // `gate` returns "" while this replica may bind, else why not (e.g. "not
  // the leader"): a /bind then answers that Error without calling the
  // extender, so kube-scheduler retries the pod (another replica binds it).
  // Set before Start.
  void set_bind_gate(std::function<std::string()> gate) { bind_gate_ = std::move(gate); }
  void Stop();

 private:
  void AddProbeRoutes(GuardedServer& s);
  StatusOr<int> Listen(GuardedServer& s, const std::string& host, int port, std::thread* thread);

  Extender* const extender_;
  std::function<std::string()> ready_;
  const ExtenderServerOptions options_;
  std::function<std::string()> bind_gate_;
  std::unique_ptr<GuardedServer> server_;
  std::unique_ptr<GuardedServer> probes_;
  std::thread thread_;
  std::thread probes_thread_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_EXTENDER_EXTENDER_SERVER_H_
