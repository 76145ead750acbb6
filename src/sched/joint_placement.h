// Joint placement of the waiting jobs (§12 of docs/algorithms.md): within one
// queue scan, a job that finds no placement on its own is placed together with
// the jobs the scan has already placed, re-laying them (and the idle
// instances under them) on the GPUs they were given, or moving some of them
// to other GPUs, when that makes room for it. Nothing starts until the scan
// ends, so moving a placement of the scan costs nothing but its plan.
//
// The rule (lexicographic in queue order): every job the scan started stays
// started; a later job starts too when some placement of all of them exists.
// Among those placements the search prefers (1) with --reserve-full, fewer
// GPUs short of the full-size reserve, (2) fewer reconfigurations, (3) the
// lower sum of the configured metric's changes (--metric, §2), (4) fewer of
// the scan's instances moved to another GPU.
//
// Bounds (the decision cost does not grow with the cluster): the job and the
// scan's placements on at most kMaxGpus GPUs (first those whose state before
// the scan admits the job, then the other GPUs of the scan, then the
// lowest-index other GPUs), plus, for each request among them, the GPU the
// policy would give it outside those; at most kMaxNodes placements tried in
// the search. Per GPU the layout is exact (LayoutSolver, sched/gpu_layout.h).
// When the bound cuts the search before any placement of all of them is found,
// the job waits, as it would one job at a time.
//
// Thread-safety: thread-compatible; owned by one Scheduler.
#ifndef MIGSCHED_SCHED_JOINT_PLACEMENT_H_
#define MIGSCHED_SCHED_JOINT_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"
#include "sched/decision.h"
#include "sched/gpu_layout.h"
#include "sched/joint_search.h"
#include "sched/metrics.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

class JointPlacer {
 public:
  static constexpr int kMaxGpus = 4;
  static constexpr int kMaxNodes = 4096;

  // Scores by options.metric (demand window options.demand_window); the
  // full-size reserve is options.reserve_full. REQUIRES: options valid.
  explicit JointPlacer(const SchedulerOptions& options);

  // Feeds the demand-weighted metric's window (Scheduler::ObserveArrival).
  void ObserveArrival(const Cluster& cluster, const Job& job) {
    scorer_.ObserveArrival(cluster, job);
  }

  // ---- The round: the placements of one queue scan ----

  struct Entry {
    JobId id = kNoJob;
    Job job;
    Decision decision;
  };
  // Starts a scan: no placements, no saved states.
  void BeginRound();
  // Saves `gpu`'s state the first time the scan is about to change it.
  void Touch(const Cluster& cluster, int gpu);
  // Whether the round has changed `gpu` (its state before the scan is saved).
  bool Touched(int gpu) const { return saved_.count(gpu) > 0; }
  // A placement made by the scan (its plan already applied), in scan order.
  void Add(JobId id, const Job& job, Decision decision);
  // The placements, in scan order (their plans may have been rewritten).
  std::vector<Entry>& entries() { return entries_; }

  // Places `job` (id `id`), for which no single placement exists now, jointly
  // with the round's placements, as described above: on success re-lays the
  // GPUs concerned on `cluster` (their plans rewritten; every step applied
  // with ApplyPlan), appends the job's entry and returns true; false when no
  // joint placement was found (nothing changed). Reserved GPUs (§5; drained
  // ones in the daemon) are left alone. `policy` picks, for a moved request,
  // the GPU outside the searched ones (its Choose, those closed). kInternal if
  // a rewritten plan is rejected (a bug).
  StatusOr<bool> Place(Cluster* cluster, PlacementPolicy* policy, JobId id, const Job& job);

  // Counters since construction.
  struct Stats {
    int64_t searches = 0;          // Place calls that searched
    int64_t placed = 0;            // of which found a joint placement
    int64_t budget_exhausted = 0;  // searches cut by kMaxNodes
    int64_t nodes = 0;             // placements tried, in all
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Saved {
    GpuState state;
    std::string key;
  };
  // One instance of a search: the `inst`-th of round entry `entry` (-1: of the
  // waiting job).
  struct ItemRef {
    int entry = -1;
    int inst = 0;
  };
  class RoundIndex;
  struct Problem;
  const Saved& PreState(const Cluster& cluster, int gpu);
  // The GPUs whose round instances may move (empty: none could hold the job).
  std::vector<int> GpusToSearch(const Cluster& cluster, const Job& job,
                                const RoundIndex& round) const;
  // The targets (those GPUs, then the policy's GPU outside them for each
  // request), the items and the search's input.
  void BuildSearch(Cluster* cluster, PlacementPolicy* policy, JobId id, const Job& job,
                   const RoundIndex& round, Problem* problem);
  // Re-lays the changed targets as `result` says and appends the job's entry.
  Status Apply(Cluster* cluster, JobId id, const Job& job, const RoundIndex& round,
               const Problem& problem, const JointSearchResult& result);

  int reserve_full_;
  MetricScorer scorer_;
  LayoutSolver solver_;
  std::vector<Entry> entries_;
  std::unordered_map<int, Saved> saved_;
  std::vector<int> touched_;  // GPUs in the order the round first changed them
  Stats stats_;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_JOINT_PLACEMENT_H_
