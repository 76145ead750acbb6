// The NodeDaemons (cluster/node_daemons.h) of the cluster controllers and the
// engine hooks over the node daemons' HTTP API (nodeapi/node_client.h):
// a fixed set of nodes, each a name, its daemon's URL and its bearer token.
// Engine-neutral: the Slurm adapter describes its configured nodes with it
// (slurm/controller_config.h NodeDaemonsOf), the Kubernetes one the
// node-agent pods it found (k8s/engine/node_daemons_http.h).
//
// Errors: as NodeDaemons, each message prefixed "node NAME (URL): ". A node
// not in the description is kNotFound naming `origin`. A token that cannot
// be had (no token and no token file, a token file missing or empty) makes
// that node's calls kUnavailable with the reason; the other nodes still work.
//
// Tokens: read at construction, and again before the next call while a node
// has none, and once when a daemon answers 401 (kUnauthenticated; a daemon
// restarted with a new token), the call then retried once with the new one.
//
// Timeouts: every call's connect and read are each bounded by `timeout_s`; a
// daemon that does not answer in time is kUnavailable.
//
// Thread-safety: calls for different nodes may run concurrently; calls for
// one node are serialized (one keep-alive connection per node, guarded by
// that node's mutex, held during the HTTP call).
#ifndef MIGSCHED_CLUSTER_HTTP_NODE_DAEMONS_H_
#define MIGSCHED_CLUSTER_HTTP_NODE_DAEMONS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/node_daemons.h"
#include "core/status.h"

namespace migsched {

// One node daemon: `token` if non-empty, else the first line of `token_file`
// (trailing CR and spaces dropped).
struct NodeDaemonEndpoint {
  std::string name;  // the engine's node name
  std::string url;   // http://host:port
  std::string token;
  std::string token_file;
};

struct HttpNodeDaemonsConfig {
  std::string origin;  // names the configuration in messages, e.g. the file
  std::vector<NodeDaemonEndpoint> nodes;
  double timeout_s = 5;  // one call's connect and read limit, seconds
};

// The node's token (NodeDaemonEndpoint's rules). Errors: kInvalidArgument
// naming `origin` when there is neither token nor token file; kUnavailable
// when the file cannot be read or its first line is empty; kFailedPrecondition
// when others may read it or its group write it (the clients' rule,
// nodeapi/token.h CheckClientTokenMode: group-readable is allowed).
StatusOr<std::string> NodeDaemonToken(const NodeDaemonEndpoint& node, std::string_view origin);

// One client per node of `config.nodes` (names are unique: a later one of the
// same name replaces the earlier). Never fails today: a node's token problem
// shows on its calls.
StatusOr<std::unique_ptr<NodeDaemons>> NewHttpNodeDaemons(HttpNodeDaemonsConfig config);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_HTTP_NODE_DAEMONS_H_
