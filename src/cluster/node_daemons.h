// NodeDaemons: what a cluster controller asks of the node daemons (their node
// API, docs/api.md), in the API's own types (nodeapi/api_types.h, read through
// nodeapi/node_view.h): a node's view, reservations (hold placements for an
// owner key, renewed by repeating the call, dropped by the daemon when their
// time runs out), allocations (instances with no process, bound to an owner
// key; "bind any reservation of these profiles under a key prefix") and their
// release. The controllers and the engine hooks use it; the implementation
// over the daemons' HTTP API (NodeClient) is cluster/http_node_daemons.h; tests use their own.
//
// Errors: kUnavailable (the daemon cannot be reached or answered 5xx),
// kFailedPrecondition (409: a placement is not free, a reservation is held by
// another owner), kNotFound, kInvalidArgument (400), kUnauthenticated (401);
// the message is the daemon's.
//
// Thread-safety: implementations must allow concurrent calls for different
// nodes.
#ifndef MIGSCHED_CLUSTER_NODE_DAEMONS_H_
#define MIGSCHED_CLUSTER_NODE_DAEMONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "cluster/planner.h"
#include "core/status.h"
#include "nodeapi/node_view.h"

namespace migsched {

// An allocation to create on a node: `instances` of the given profiles,
// bound (consumed) from reservations whose key starts with
// `reservation_prefix` when non-empty (any such reservation of the profile),
// else placed by the daemon. `idempotency_key`: a repeated request with the
// same key answers the first one's allocation.
struct BindRequest {
  std::string owner;  // e.g. "slurm:1234"
  std::string idempotency_key;
  std::vector<ProfileCount> instances;
  std::string reservation_prefix;  // e.g. "slurm-room:"
  // The job never leaves its GPUs (not migratable, or latency-sensitive): the allocation anchors
  // them in every view (AllocationRequest::anchors, §4 step 2).
  bool anchors = false;
};

class NodeDaemons {
 public:
  virtual ~NodeDaemons() = default;
  // The node's view (GET /v1/node): its GPUs, their instances and holders,
  // its reservations and its generation.
  virtual StatusOr<NodeView> State(const std::string& node) = 0;
  // Holds `placements` under `key` for `ttl_s` seconds; the same key again renews. `anchors`:
  // held for a job that never leaves its GPUs (ReservationRequest::anchors, §4 step 2).
  virtual Status Reserve(const std::string& node, const std::string& key,
                         const std::vector<PlacementRef>& placements, double ttl_s,
                         bool anchors) = 0;
  // Drops the reservation `key` (OK if there is none).
  virtual Status Unreserve(const std::string& node, const std::string& key) = 0;
  // Creates the allocation once it is durable and answers its record (state
  // running, its instances with their MIG UUIDs); kFailedPrecondition when no
  // reservation / room fits, or the daemon stored the allocation as failed,
  // naming why.
  virtual StatusOr<DaemonJobRecord> Allocate(const std::string& node,
                                             const BindRequest& request) = 0;
  // Releases an allocation (its instances are kept idle or destroyed, as the
  // daemon does for jobs). OK if it is already gone.
  virtual Status Release(const std::string& node, int64_t allocation_id) = 0;
};

// Every node's view (NodeDaemons::State), at most `parallel` calls at once (at least one), in
// the order of `nodes`. A node that answers has its view, whose `name` is its name here (the
// engine's name); one that does not has none, and the error's message. Thread-safety: `daemons`
// must allow concurrent State calls (NewHttpNodeDaemons does). The one parallel read of the Slurm
// controller's tick and the Kubernetes engine's snapshot.
std::vector<NodeInput> ReadNodeStates(NodeDaemons* daemons, const std::vector<std::string>& nodes,
                                      int parallel);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_NODE_DAEMONS_H_
