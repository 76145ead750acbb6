// What the Kubernetes adapter's HTTP listeners share (the extender's verbs and probes,
// k8s/extender/extender_server.h; the node agent's probes, `migsched k8s node-agent`): each is a
// GuardedServer (nodeapi/guarded_server.h: head and body deadlines, a connection pool and gate
// that slow clients cannot exhaust, bodies bounded as sent and as decoded) answering errors as
// {"error": "METHOD PATH: why"}.
//
// Thread-safety: configure before listening.
#ifndef MIGSCHED_K8S_PROBE_LISTENER_H_
#define MIGSCHED_K8S_PROBE_LISTENER_H_

#include <httplib.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "nodeapi/guarded_server.h"

namespace migsched::k8s {

// The bound of a probe listener's bodies (its routes take none).
inline constexpr size_t kProbeMaxBodyBytes = 4096;

// {"error": "METHOD PATH: message"} ("message" alone without a request).
std::string K8sErrorBody(const httplib::Request* req, std::string_view code,
                         std::string_view message);

// The limits of a plain-HTTP probe listener (kubelet probes, Prometheus): bodies of at most
// kProbeMaxBodyBytes, at most 256 connections served at once, 64 per peer; the head within 5 s,
// idle keep-alive 5 s. `name` names it in refusals ("the extender's probe listener").
ListenerLimits ProbeListenerLimits(std::string name);

// Error answers with the JSON body: 404 (and 405) "no METHOD PATH (`serves`)", e.g. `serves` =
// "the probe listener serves GET /healthz, /readyz, /metrics";
// 413 for a body over the listener's bound, 400 for a request that cannot be read.
void AnswerErrorsAsJson(GuardedServer& s, std::string serves);

// A probe listener: GuardedServer with ProbeListenerLimits(name) and K8sErrorBody.
std::unique_ptr<GuardedServer> NewProbeListener(std::string name);

// Binds "HOST:PORT" (port 0: a free one). The port, or kUnavailable naming `what`.
StatusOr<int> BindListen(GuardedServer& s, const std::string& listen, const std::string& what);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_PROBE_LISTENER_H_
