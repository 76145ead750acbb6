// ListenerLimits: what bounds one HTTP listener of ours (the node daemon's API, the Kubernetes
// extender's verbs, the probe listeners): bodies, threads, deadlines and admission, as
// GuardedServer (nodeapi/guarded_server.h) applies them. Units: bytes, connections, seconds.
// A plain value; kept apart from guarded_server.h so that a listener's options (the daemon's
// HttpServerOptions) carry it without cpp-httplib.
#ifndef MIGSCHED_NODEAPI_LISTENER_LIMITS_H_
#define MIGSCHED_NODEAPI_LISTENER_LIMITS_H_

#include <cstddef>
#include <string>

namespace migsched {

struct ListenerLimits {
  size_t max_body_bytes = 1 << 20;  // larger bodies (decoded ones too): 413
  int max_connections = 1024;       // threads serving connections at once
  double idle_timeout_s = 5;        // keep-alive idle limit
  double request_timeout_s = 10;    // per read while a request arrives
  double header_timeout_s = 5;  // a request head, in all (from the connection or its first byte)
  double body_timeout_s = 30;   // a request body, in all (from the end of the head)
  int max_connections_per_peer = 256;  // connections from one remote address
  // Connections not yet authenticated, in all (at most max_connections - 1, so that a thread is
  // always left for an authenticated one).
  int max_unauthenticated_connections = 256;
  // Whether a PostBody route reads a chunked body (bounded as any); false: 411 Length Required,
  // unread, as on every other route.
  bool chunked_bodies = true;
  // Names the listener (or its limit) in refusals, e.g. "the extender's max_body_bytes".
  std::string name = "max_body_bytes";
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_LISTENER_LIMITS_H_
