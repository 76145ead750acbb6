// PlacementRef: one placement on one GPU of a node, the node API's name for
// where an instance is or may be (docs/api.md). Every type of the API that
// says where an instance is holds one: a record's instance (JobInstance), a
// reservation's placement, a request's exact placement
// (RequestedInstance::placement), the extender's reserved instance, the Slurm
// binding.
//
// Units: `gpu` is the GPU's NVML index (nodeapi/nvml_index.h), `start` the
// placement's first memory slice in placement units (docs/algorithms.md §1),
// `profile` an exact profile name of the GPU's model ("3g.20gb").
//
// Thread-safety: a value.
#ifndef MIGSCHED_NODEAPI_PLACEMENT_H_
#define MIGSCHED_NODEAPI_PLACEMENT_H_

#include <string>

#include "nodeapi/nvml_index.h"

namespace migsched {

struct PlacementRef {
  NvmlIndex gpu{0};
  std::string profile;
  int start = 0;  // placement units
  bool operator==(const PlacementRef&) const = default;
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_PLACEMENT_H_
