// Migration's vocabulary (docs/algorithms.md §6, §13) and its books.
//
// The types a migration pass speaks (what started it, one move, a begun move,
// what a job may do, what a pass may use), the seam of the planner that
// chooses moves (MigrationPlanner; the §6 rules: sched/migration_planner.h),
// and MoveBook, the scheduler's books of moves: the move in flight of each
// job (one at most), when each job last moved (the cool-down), where each
// running job's checkpoints start (the work a `restart` job loses when moved)
// and the counts of the admission move budget (§13).
//
// Units: seconds on the scheduler's clock.
//
// Thread-safety: the types are plain values; a MoveBook and a planner have no
// lock of their own and are used by one Scheduler, which serialises every call.
#ifndef MIGSCHED_SCHED_MIGRATION_H_
#define MIGSCHED_SCHED_MIGRATION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"
#include "sched/decision.h"
#include "sched/options.h"
#include "sched/reservation.h"

namespace migsched {

// What started a migration pass.
enum class MigrationTrigger {
  kCompletion,  // a job ended (intra-GPU moves, inter-GPU pulls)
  kTick,        // the periodic pass every defrag_interval_s (same moves)
  kFragmented,  // an arrival found only fragmented room (§4 step 6: moves aimed at making room)
};
std::string_view MigrationTriggerName(MigrationTrigger t);  // "completion" | "tick" | "fragmented"

// One move of one instance of a job, make-before-break (§6).
struct MigrationMove {
  JobId job = kNoJob;
  InstanceRef from;  // the source (where the job runs now)
  InstanceRef to;    // the target (created for it)
  bool inter() const { return from.gpu != to.gpu; }
  bool operator==(const MigrationMove&) const = default;
};

// A move that has begun: its begin plan (kDestroy of idle instances in the
// target's way, kCreate of the target unless an idle one is reused,
// kMigrateBegin) was applied to the cluster.
struct MigrationStart {
  MigrationMove move;
  Plan plan;
  // An evacuation's move (§13): the waiting job whose placement it opens.
  JobId for_job = kNoJob;
};

// May a job move now (the scheduler's rules, §6)?
enum class MoveRights {
  kNone,   // migratable == none, a move already in flight, cool-down running, or the driver says no
  kIntra,  // latency-sensitive: only within its GPU
  kAny,
};

// What a pass may use. Functions are never empty.
struct MigrationContext {
  MigrationTrigger trigger = MigrationTrigger::kCompletion;
  const SchedulerOptions* options = nullptr;
  double now_s = 0;
  std::function<MoveRights(JobId)> rights;
  std::function<const Job*(JobId)> job;         // the request of a running job
  std::function<double(JobId)> expected_end_s;  // inf when unknown
  // GPUs reserved for a waiting job: never targets; evacuated first.
  std::vector<Reservation> reservations;
  // kFragmented: the requests that found only fragmented room, oldest first.
  std::vector<const Job*> fragmented;
};

// Plans one pass and begins its moves. Implementations: sched/migration_planner.h.
class MigrationPlanner {
 public:
  virtual ~MigrationPlanner() = default;
  virtual std::string_view name() const = 0;
  // Chooses moves and applies each begin plan to `cluster` with ApplyPlan
  // before choosing the next (so later choices see earlier ones); returns the
  // moves begun, in order. kInternal if a plan is rejected (a bug).
  virtual StatusOr<std::vector<MigrationStart>> RunPass(Cluster* cluster,
                                                        const MigrationContext& ctx) = 0;
};

// The books of moves. Every job is a running job of the scheduler that owns the
// book; the book never looks at the cluster (the scheduler applies the plans).
class MoveBook {
 public:
  // Job `id` started at `now_s`: its checkpoints start then; one more job started (the admission
  // move budget counts per started job).
  void Started(JobId id, double now_s);
  // Job `id` ended (released): every book of it is dropped, its move in flight included.
  void Ended(JobId id);

  // Whether `id` has a move in flight.
  bool Moving(JobId id) const { return in_flight_.count(id) > 0; }
  // Its move in flight, or nullptr.
  const MigrationMove* InFlight(JobId id) const;
  // Begins `mv` at `now_s`: the job's move in flight, its last move (the cool-down counts from
  // now), one more move begun. False, and nothing booked, when the job already has a move in
  // flight (one move per job at a time, §6: the caller's bug).
  bool Begin(const MigrationMove& mv, double now_s);
  // The move of `id` switched over at `now_s`; `restarted`: the job was restarted on its target
  // (a `restart` job), so its checkpoints start again now. Returns the move; kNotFound when none
  // is in flight.
  StatusOr<MigrationMove> Finish(JobId id, double now_s, bool restarted);
  // The move of `id` was abandoned (the job stays on its source; it still counts as moved for the
  // cool-down). Returns the move; kNotFound when none is in flight.
  StatusOr<MigrationMove> Abandon(JobId id);

  // Whether `id` moved less than `cooldown_s` seconds before `now_s` (§6 cool-down).
  bool CoolingDown(JobId id, double now_s, double cooldown_s) const;
  // Seconds since `id`'s checkpoints started (its start or its last restart), or nullopt for a
  // job the book does not know.
  std::optional<double> SinceCheckpointOrigin(JobId id, double now_s) const;
  // Whether a move restarted `id` (Finish with `restarted`) and it has not reached a checkpoint
  // since: less than `checkpoint_interval_s` (> 0) has passed since that restart. Such a job must
  // not move again (§6: moving it would throw away all its work since the restart, and a job
  // moved like that at every pass never ends).
  bool RestartedSinceCheckpoint(JobId id, double now_s, double checkpoint_interval_s) const;

  // The admission move budget (§13, SchedulerOptions::Migration::admission_move_budget):
  // whether `moves` more moves keep the moves begun within `budget` × (jobs started + 1), the
  // job they would admit counted. `budget` < 0: unbounded.
  bool BudgetAllows(int64_t moves, double budget) const;

 private:
  std::unordered_map<JobId, MigrationMove> in_flight_;
  std::unordered_map<JobId, double> last_move_s_;
  std::unordered_map<JobId, double> checkpoint_origin_s_;
  std::unordered_set<JobId> restarted_;  // restarted by a move
  int64_t jobs_started_ = 0;
  int64_t moves_begun_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_MIGRATION_H_
