// What an HTTP listener of ours that is built on a plain cpp-httplib server needs: bodies are
// refused before they are read where cpp-httplib would read them whole. The node daemon's API,
// the Kubernetes extender and the probe listeners of the extender and the node agent are
// GuardedServers (guarded_server.h: body bounds, head and body deadlines, a connection pool and
// gate); the one listener here is the Slurm controller's status listener.
//
// Thread-safety: install before the server listens; the handler is reentrant.
#ifndef MIGSCHED_NODEAPI_HTTP_GUARD_H_
#define MIGSCHED_NODEAPI_HTTP_GUARD_H_

#include <httplib.h>

#include <cstddef>
#include <string>

namespace migsched {

// Installs `s`'s pre-routing handler (it must have none): a request with a Transfer-Encoding
// (a chunked body) is answered 411 Length Required with a JSON {"error": ...} naming `listener`
// and `max_body_bytes` (what the listener's set_payload_max_length allows), before any of the body
// is read, with Connection: close. cpp-httplib 0.11 applies set_payload_max_length to a
// Content-Length only (it refuses a longer one unread): a chunked body was read whole into memory
// whatever its size (regression: chunked_body_past_max_body_bytes, hundreds of MB on a probe
// port). kube-scheduler, kubelet probes and Prometheus send no chunked bodies.
void RefuseUnboundedBodies(httplib::Server& s, size_t max_body_bytes, std::string listener);

// The refusal of a chunked body: "a chunked body is not accepted; send it with a Content-Length
// (at most N bytes) (LISTENER)". RefuseUnboundedBodies' and GuardedServer's (guarded_server.h).
std::string ChunkedBodyRefusal(size_t max_body_bytes, const std::string& listener);

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_HTTP_GUARD_H_
