// Parsing and validating a user-written list of instances on one GPU,
// "PROFILE@START[,PROFILE@START...]" (e.g. "3g.20gb@4,1g.5gb@0"), against
// the §1 validity rules of docs/algorithms.md.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_CORE_INSTANCE_LIST_H_
#define MIGSCHED_CORE_INSTANCE_LIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/config_table.h"
#include "core/gpu_model.h"
#include "core/gpu_state.h"
#include "core/status.h"

namespace migsched {

struct InstanceSpec {
  int profile = -1;  // index into the model's profiles
  int start = 0;     // placement units
};

// Parses and validates `list` on `model`. Empty or blank `list` = no instances.
// kInvalidArgument, naming the instance by position and text and saying why:
//   instance 2 'foo@0': unknown profile 'foo' on A100 40GB (profiles: ...)
//   instance 1 '3g.20gb@2': start 2 is not a placement of 3g.20gb (valid starts: 0, 4)
//   instance 2 '2g.10gb@2' overlaps instance 1 '3g.20gb@0' (placement units 2-3)
//   the instances use 8 compute slices; A100 40GB has 7
//   instance 3 '1g.5gb+me@2': 1g.5gb+me allows at most 1 instance(s) per GPU
StatusOr<std::vector<InstanceSpec>> ParseInstanceList(std::string_view list, const GpuModel& model);

// A GpuState holding `instances`, all busy (job ids 0, 1, ...) when `busy`,
// else idle. REQUIRES: `instances` came from ParseInstanceList on the same model.
StatusOr<GpuState> MakeGpuState(const GpuModel& model, const ConfigTable& table,
                                const std::vector<InstanceSpec>& instances, bool busy);

}  // namespace migsched

#endif  // MIGSCHED_CORE_INSTANCE_LIST_H_
