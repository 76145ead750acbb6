#include "sched/full_policy.h"

#include <string>

namespace migsched {

SchedulerOptions FullDefaults(SchedulerOptions options, const ExplicitOptions& set) {
  if (!set.migration) options.migration.enabled = kFullDefaultMigration;
  if (!set.metric) options.metric = std::string(kFullDefaultMetric);
  if (!set.reserve_full) options.reserve_full = kFullDefaultReserveFull;
  if (!set.reuse_first) options.reuse_first = kFullDefaultReuseFirst;
  if (!set.anchored_together) options.anchored_together = kFullDefaultAnchoredTogether;
  if (!set.queue_order) options.queue_order = kFullDefaultQueueOrder;
  if (!set.limit_power) options.limit_power = kFullDefaultLimitPower;
  if (!set.max_skip_seconds) options.max_skip_seconds = kFullDefaultMaxSkipSeconds;
  if (!set.reservation_slack) options.reservation_slack = kFullDefaultReservationSlack;
  if (!set.reservation_horizon) options.reservation_horizon_s = kFullDefaultReservationHorizonS;
  if (!set.reservation_keep) options.reservation_keep = kFullDefaultReservationKeep;
  if (!set.reservation_oldest) options.reservation_oldest = kFullDefaultReservationOldest;
  if (!set.reservation_unknown_ends)
    options.reservation_needs_ends = kFullDefaultReservationNeedsEnds;
  if (!set.evacuation) options.evacuation = kFullDefaultEvacuation;
  if (!set.evacuation_keeps_room) options.evacuation_keeps_room = kFullDefaultEvacuationKeepsRoom;
  if (!set.defrag_passes) options.migration.passes = kFullDefaultDefragPasses;
  // The completion and periodic passes' rules 3 and 4 (§6) act on busy GPUs only: with them on, t
  // keeps the global default, so that they still have GPUs to work on.
  if (!set.threshold) {
    options.threshold = options.migration.passes == DefragPasses::kOff
                            ? kFullDefaultThreshold
                            : SchedulerOptions().threshold;
  }
  return options;
}

}  // namespace migsched
