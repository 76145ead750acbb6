// NodeState: what a cluster controller knows about one node, as the node
// daemon reports it (its node API, docs/api.md): the managed GPUs, every MIG
// instance and who holds it, the reservations and allocations of the cluster
// engines, and a generation number that changes with every state change.
//
// These are plain values, independent of how they were fetched (HTTP in the
// controllers, hand-written in tests), so the planner (cluster/planner.h) is
// a pure function of them.
//
// Thread-safety: values.
#ifndef MIGSCHED_CLUSTER_NODE_STATE_H_
#define MIGSCHED_CLUSTER_NODE_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nodeapi/api_types.h"

namespace migsched {

struct NodeGpu {
  int index = 0;      // NVML index (the node API's GPU number)
  std::string uuid;   // "GPU-..."
  std::string model;  // a catalog name, e.g. "A100 40GB"
  bool drained = false;
};

struct NodeInstance {
  int gpu = 0;  // NVML index
  std::string profile;
  int start = 0;
  int size = 0;  // placement units
  std::string mig_uuid;
  HolderKind holder = HolderKind::kIdle;
  std::string owner;  // daemon job id, allocation owner key or reservation key; "" when idle
};

struct AllocatedInstance {
  PlacementRef placement;
  std::string mig_uuid;
  std::string gpu_uuid;
};

struct NodeAllocation {
  int64_t id = 0;
  std::string owner;  // e.g. "slurm:1234"
  std::string state;  // the daemon's job state, e.g. "running"
  std::vector<AllocatedInstance> instances;
};

struct NodeState {
  std::string node;  // the node's name (the engine's name for it)
  uint64_t generation = 0;
  std::vector<NodeGpu> gpus;  // ascending index
  std::vector<NodeInstance> instances;
  // Placements held for an owner key until `expires_at` (Unix seconds), the
  // daemon's own records (nodeapi/api_types.h). A reserved placement may have
  // an idle instance on it or none yet.
  std::vector<ReservationRecord> reservations;
  std::vector<NodeAllocation> allocations;
  std::string policy;  // the daemon's scheduler policy
};

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_NODE_STATE_H_
