// A placement reserved for a waiting job (docs/algorithms.md §5, §13): a
// look-ahead reservation of the starvation guard, or the placement an
// evacuation is opening for it (a hold). The scheduler makes them
// (Scheduler::reservations, evacuation_holds); the migration planner never
// targets a reserved GPU (sched/migration.h MigrationContext).
//
// Units: seconds on the scheduler's clock; GPU, profile and start as in
// sched/decision.h InstanceRef.
//
// Thread-safety: plain values.
#ifndef MIGSCHED_SCHED_RESERVATION_H_
#define MIGSCHED_SCHED_RESERVATION_H_

#include "core/job.h"

namespace migsched {

struct Reservation {
  JobId job = kNoJob;
  int gpu = -1;
  int profile = -1;
  int start = 0;
  double free_at_s = 0;  // when the placement is expected to be free (inf: unknown)
  // When the job is expected to start: the latest free_at_s of its reservations (one per
  // instance of a gang). A job that ends by then cannot delay it (EASY backfilling).
  double start_s = 0;
  bool hold = false;  // an evacuation's placement (§13): closed to every other job
  // §13 reservation slack, seconds: a job backfilled by (a) may end up to this long after
  // start_s (options.reservation_slack × the reserved job's time limit; 0 when that is unknown).
  double slack_s = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_RESERVATION_H_
