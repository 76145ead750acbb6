// ConnectionGate: which HTTP connections a GuardedServer (guarded_server.h: the node daemon's API,
// the Kubernetes extender's and node agent's listeners) serves, so that clients
// that have not authenticated cannot starve those that have (slowloris).
//
// Every accepted connection is admitted here before it is read; it counts
// against its peer (the remote IP address) and, until a request on it carries
// the valid token (Authenticated), against the unauthenticated connections.
//   * A peer at `max_per_peer` connections: its oldest unauthenticated
//     connection is evicted to make room; if all of them are authenticated,
//     the new one is refused (Admit returns 0: the server answers 503 and
//     closes it).
//   * `max_unauthenticated` unauthenticated connections: the oldest of them
//     (any peer) is evicted.
// Evicting shuts the socket down (shutdown(2), SHUT_RDWR), so its thread's
// read ends at once and the thread closes it; the fd stays open until its
// owner calls Release, and eviction happens under the gate's lock, so a
// closed-and-reused fd is never shut down by mistake. A legitimate client
// sends its request head at once after connecting, so it is authenticated
// (or answered, /healthz) long before as many newer connections arrive as
// it would take to evict it; a trickling one is evicted or cut by the head
// deadline (ListenerLimits::header_timeout_s).
//
// Thread-safety: every method is thread-safe (one mutex).
#ifndef MIGSCHED_NODEAPI_CONNECTION_GATE_H_
#define MIGSCHED_NODEAPI_CONNECTION_GATE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace migsched {

class ConnectionGate {
 public:
  ConnectionGate(int max_per_peer, int max_unauthenticated);

  // Admits connection `fd` from `peer`: a ticket (> 0), or 0 when refused.
  uint64_t Admit(int fd, const std::string& peer);
  // A request on the connection carried the valid token. False when the connection was evicted
  // (its socket is shut down, so no answer can reach the client): the caller must not carry the
  // request out, which the client would take as lost (regression: evicted_request_carried_out,
  // a job stored whose client saw the connection drop, and might submit again).
  bool Authenticated(uint64_t ticket);
  // The connection ends (call before closing its fd).
  void Release(uint64_t ticket);

  struct Counts {
    int64_t connections = 0;      // admitted and not released, evicted ones excluded
    int64_t unauthenticated = 0;  // of them, not authenticated
    int64_t evicted = 0;          // since start
    int64_t refused = 0;          // since start
  };
  Counts counts() const;

 private:
  struct Entry {
    int fd = -1;
    std::string peer;
    bool authenticated = false;
    bool evicted = false;
  };
  // Evicts the oldest unauthenticated connection (of `peer` when not empty):
  // false when there is none.
  bool EvictOldest(const std::string& peer);

  const int max_per_peer_;
  const int max_unauthenticated_;
  mutable std::mutex mu_;  // guards everything below
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, Entry> entries_;  // by ticket = admission order
  std::map<std::string, int64_t> per_peer_;
  Counts counts_;
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_CONNECTION_GATE_H_
