// Why a MIG profile has no free placement on a GPU, in the words an operator
// reads in `kubectl describe pod` (FailedScheduling events carry the
// extender's reason per node):
//
//   "no 4g.20gb placement free: slices 4-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)"
//
// Slices are placement units (memory slices, docs/mig-hardware.md §1), a free
// slice is one no busy instance covers (an idle instance there is destroyed to
// make room, §4), and the placements are the model's (docs/algorithms.md §1).
// Nothing here is a decision: the placement itself is the scheduler core's.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_K8S_ENGINE_FIT_REASON_H_
#define MIGSCHED_K8S_ENGINE_FIT_REASON_H_

#include <cstdint>
#include <string>

#include "core/gpu_state.h"

namespace migsched::k8s {

// "" when `profile` (an index into gs.model().profiles()) has a placement no
// busy instance covers and the GPU has the compute slices and instance count
// for it; otherwise what stands in the way, without the "no <profile>
// placement free: " prefix, e.g.
//   "slices 4-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)"
//   "no slice free"
//   "slices 6 free but 2g.10gb needs 2"
//   "only 1 of 7 compute slices free, 2g.10gb needs 2"
//   "already 7 instances of 1g.5gb, the most a GPU has"
std::string NoPlacementReason(const GpuState& gs, int profile);

// Placement units of `mask` as ranges: 0b11110000 -> "4-7", 0b101 -> "0, 2".
std::string UnitRanges(uint64_t mask, int units);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_FIT_REASON_H_
