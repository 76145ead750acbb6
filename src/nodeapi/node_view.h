// Reading a node's view (GET /v1/node: NodeView, nodeapi/api_types.h) the
// way every cluster controller does: who holds an instance and under which
// key, which allocations the node shows, whether a GPU takes new placements,
// and where a record's instance is. The Slurm controller, its prolog and
// epilog, the Kubernetes engine and its node agent read the API's own types
// through these rules; no controller keeps a node type of its own.
//
// Thread-safety: pure functions of values.
#ifndef MIGSCHED_NODEAPI_NODE_VIEW_H_
#define MIGSCHED_NODEAPI_NODE_VIEW_H_

#include <string>
#include <vector>

#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"

namespace migsched {

// Who holds the instance: kIdle when it is not busy (the API shows an idle
// instance as not busy).
HolderKind HolderOf(const InstanceView& in);

// The key of the instance's holder: a daemon job's id in decimal ("12"), an
// allocation's or a reservation's owner key ("slurm:7"), "" when idle. A
// placeholder's key is the daemon's owner text, usually "".
std::string HolderKey(const InstanceView& in);

// Whether the GPU takes new placements: it is not draining and its backend
// reaches it. A GPU that does not is closed to every policy (ClusterView).
bool TakesPlacements(const GpuView& g);

// An allocation as a node's view shows it: the instances it holds carry its
// id and owner key.
struct AllocationOnNode {
  DaemonJobId id = 0;
  std::string owner;  // e.g. "slurm:1234", "k8s:<pod uid>"
  bool operator==(const AllocationOnNode&) const = default;
};
// Each allocation that holds an instance on the node, once, in the order of
// its first instance (GPU order, then the view's instance order).
std::vector<AllocationOnNode> AllocationsOn(const NodeView& v);

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_NODE_VIEW_H_
