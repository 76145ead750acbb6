// The look-ahead reservations of one queue scan (docs/algorithms.md §5, §13) and the GPUs they,
// and the §13 evacuation holds, close to the job being tried.
//
// A scan (Scheduler::ScheduleQueue) begins with none. A waiting job that does not fit, once
// overdue (--max-skip-seconds), reserves the placements that free soonest
// (LookAheadReservations); while a later job is tried, the GPUs reserved or held for other jobs
// are closed to it (Cluster::SetReserved), except where §13 (a) lets a job that ends in time
// backfill onto them (BackfillGpus) and §13 (b) lets one fit beside a reservation that stays
// valid (KeepsReservation). The scan ends with every GPU open (End).
//
// Units: seconds on the scheduler's clock; GPUs as Cluster indexes.
//
// Thread-safety: none; owned by one Scheduler, which serialises every call. The cluster's
// reserved flags are this owner's to set during a scan and the migration pass (SetFlags).
#ifndef MIGSCHED_SCHED_SCAN_RESERVATIONS_H_
#define MIGSCHED_SCHED_SCAN_RESERVATIONS_H_

#include <functional>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "sched/evacuation_holds.h"
#include "sched/reservation.h"

namespace migsched {

// When a running job is expected to end (seconds; infinity when unknown).
using ExpectedEndFn = std::function<double(JobId)>;

// What a look-ahead reservation may be (SchedulerOptions: reservation_needs_ends,
// reservation_slack, reservation_horizon_s).
struct LookAheadRules {
  bool needs_ends = false;  // no reservation when its start is unknown
  double slack_factor = 0;  // each reservation's slack: this × the job's time limit
  double horizon_s = -1;    // none when its known start is further away (< 0: any)
};

// §5: the placements for waiting job `id` (`job`) that free soonest, one GPU per instance of a
// gang, on GPUs not reserved now: per GPU the slot whose overlapping instances, and then the
// soonest-ending others while the compute slices do not suffice, end first (ties: fewer compute
// slices waited for, then the lower GPU). A migration source frees its instance now; a hold
// never by itself. Empty when too few GPUs can ever hold it, when the start is unknown and
// `rules.needs_ends`, or when the start is known and more than `rules.horizon_s` (>= 0) after
// `now_s`.
// Each reservation's slack is rules.slack_factor × the job's time limit (0 without one).
std::vector<Reservation> LookAheadReservations(const Cluster& cluster, JobId id, const Job& job,
                                               double now_s, const ExpectedEndFn& expected_end,
                                               const LookAheadRules& rules);

// §13 (b): whether a new instance at `slot` on `gpu` keeps reservation `r` (on the same GPU)
// valid at r.start_s: the busy instances still running then (a migration source is gone; unknown
// ends count as running), the new one and the reserved placement fit together.
bool KeepsReservation(const GpuState& gpu, const Reservation& r, int slot,
                      const ExpectedEndFn& expected_end);

class ScanReservations {
 public:
  // `cluster` must outlive this owner.
  explicit ScanReservations(Cluster* cluster) : cluster_(cluster) {}

  // A scan begins: no reservation, no GPU closed by this owner.
  void Begin();
  // Adds the reservations of one waiting job.
  void Add(const std::vector<Reservation>& r);
  // Removes the reservations of `id` (an evacuation hold supersedes them).
  void DropFor(JobId id);
  bool empty() const { return all_.empty(); }
  // This scan's reservations, in the order they were made.
  const std::vector<Reservation>& all() const { return all_; }

  // Closes exactly the GPUs that this scan's reservations and `holds` keep for jobs other than
  // `id` (kNoJob: for every job), and opens the others.
  void CloseFor(JobId id, const EvacuationHolds& holds);
  // Whether CloseFor closed GPU `gpu`.
  bool closed(int gpu) const { return gpu < static_cast<int>(closed_.size()) && closed_[gpu]; }
  // Opens GPU `gpu` for one try; Restore puts back what CloseFor set.
  void Open(int gpu) { cluster_->SetReserved(gpu, false); }
  void Restore(int gpu) { cluster_->SetReserved(gpu, closed(gpu)); }

  // §13 (a): the GPUs (ascending, distinct) that job `id`, expected to end at `end_s`, may
  // backfill onto: every reservation of another job there is expected to start no earlier than
  // end_s minus its slack, and no other job's hold is there.
  std::vector<int> BackfillGpus(JobId id, double end_s, const EvacuationHolds& holds) const;
  // Per GPU: whether `id` has a reservation there.
  std::vector<char> OwnGpus(JobId id) const;
  // Whether `id` has a reservation in this scan.
  bool Has(JobId id) const;

  // The scan ends: every GPU open.
  void End(const EvacuationHolds& holds);
  // Sets the reserved flag of every GPU reserved in this scan or held in `holds` to `on` (the
  // migration pass sees them closed).
  void SetFlags(bool on, const EvacuationHolds& holds);

 private:
  Cluster* cluster_;
  std::vector<Reservation> all_;
  std::vector<char> closed_;  // per GPU: the reserved flag CloseFor set
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_SCAN_RESERVATIONS_H_
