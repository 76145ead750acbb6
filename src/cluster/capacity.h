// Capacity: how many instances of each MIG profile a node's GPUs can hold at
// once, from the catalog alone (no state). This is what a cluster engine is
// told a node has at most: the GRES counts of slurm.conf, the device count of
// a Kubernetes device-plugin resource.
//
// Thread-safety: pure functions; `tables` is not safe for concurrent use.
#ifndef MIGSCHED_CLUSTER_CAPACITY_H_
#define MIGSCHED_CLUSTER_CAPACITY_H_

#include <string>
#include <utility>
#include <vector>

#include "core/config_table.h"
#include "core/gpu_model.h"

namespace migsched {

// The most instances of profile `profile` (an index into model.profiles(),
// base or media-extension variant) one empty GPU of `model` holds at once:
// feasible_m of the empty configuration (§2) for its base profile, which
// counts placements, compute slices and the profile's max_instances; for a
// variant also at most its own max_instances (docs/mig-hardware.md §1).
// A100 40GB: 1g.5gb 7, 1g.10gb 4, 2g.10gb 3, 3g.20gb 2, 4g.20gb 1, 7g.40gb 1.
int MaxInstancesAtOnce(const GpuModel& model, const ConfigTable& table, int profile);

// One profile of a node and how many instances of it the node holds at once.
struct ProfileCapacity {
  std::string profile;  // profile name as the catalog writes it, e.g. "3g.20gb"
  int count = 0;        // summed over the node's GPUs that offer the profile
  bool operator==(const ProfileCapacity&) const = default;
};

// Every profile some GPU of `gpus` offers, with the sum over those GPUs of
// MaxInstancesAtOnce. Order: the profiles of the first GPU in catalog order,
// then the profiles only later GPUs offer, in their catalog order. A profile
// name two models share (e.g. "1g.10gb" on A100 80GB and on H100 80GB) is one
// entry, summed over both.
std::vector<ProfileCapacity> NodeCapacity(const std::vector<const GpuModel*>& gpus,
                                          ConfigTableCache* tables);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_CAPACITY_H_
