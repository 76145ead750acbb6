// SchedulerOptions: the knobs of placement (§3, §4 of docs/algorithms.md).
//
// Each field has a default and its source. Validate() runs once, before a
// scheduler is built.
#ifndef MIGSCHED_SCHED_OPTIONS_H_
#define MIGSCHED_SCHED_OPTIONS_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// §13: who gets a look-ahead reservation once overdue: the head of the queue
// (EASY backfilling) or each of the first reservation_depth waiting jobs
// (conservative backfilling).
enum class ReservationMode { kEasy, kConservative };
std::string_view ReservationModeName(ReservationMode m);  // "easy" | "conservative"
StatusOr<ReservationMode> ParseReservationMode(std::string_view s);

// §5: the order in which a queue scan tries the waiting jobs: arrival order
// (FIFO, with backfill) or by response ratio, (wait + limit) / limit, highest
// first (ties: arrival order), with the job's time limit as its expected run
// time (a job without one counts as kUnknownLimitForOrderS long).
enum class QueueOrder { kFifo, kResponseRatio };
std::string_view QueueOrderName(QueueOrder o);  // "fifo" | "response-ratio"
// The run time a job without a time limit is ranked with under
// QueueOrder::kResponseRatio, seconds. Where no job has a limit (Kubernetes,
// daemon jobs without time_limit_s) every job has the same one, and the order
// is arrival order.
inline constexpr double kUnknownLimitForOrderS = 3600;
// SchedulerOptions::limit_power's value for "learned from the jobs that ended" (`learned`).
inline constexpr double kLimitPowerLearned = -1;

// §6, §13: when the completion and periodic migration passes of §6 run: never (every move is
// then asked for by a waiting job: an evacuation of §13, or a move aimed at the fragmented room
// an arrival found, §6 step 2), only while some job waits, or at every completion and tick.
enum class DefragPasses { kOff, kWhileWaiting, kAlways };
std::string_view DefragPassesName(DefragPasses p);  // "off" | "while-waiting" | "always"

// §13: which waiting jobs may have running jobs moved to open a placement for
// them now: none, the head of the queue, or any waiting job.
enum class EvacuationScope { kOff, kHead, kQueue };
std::string_view EvacuationScopeName(EvacuationScope s);  // "off" | "head" | "queue"
StatusOr<EvacuationScope> ParseEvacuationScope(std::string_view s);

// §4 step 3: score a candidate by the change of FragCost (the default) or by
// the FragCost after placing ("post", the other reading of the seed paper).
enum class FragObjective { kDelta, kPost };
std::string_view FragObjectiveName(FragObjective o);
StatusOr<FragObjective> ParseFragObjective(std::string_view s);  // "delta" | "post"

struct SchedulerOptions {
  // Lazy/busy threshold t (§3): a GPU is lazy when util(g) < t. Default 0.4,
  // the seed paper's tuned value; operators tune it by about ±0.1. In [0, 1].
  double threshold = 0.4;
  // §4 step 3 objective.
  FragObjective frag_objective = FragObjective::kDelta;
  // Name of the per-model fixed layout the `static` policy creates on every
  // GPU (GpuModel::Spec::static_layouts); "all-balanced" is mig-parted's.
  // "best-for-mix" (the `static` policy's registry default): the layouts
  // chosen from the workload known in advance (sched/policies/policies.h).
  std::string static_layout = "all-balanced";

  // ---- Metric, queue and retention options (each implemented by the file named).

  // §2 metric used to score candidates: "fragcost" (default), "blocked-placements",
  // "demand-weighted". [sched/metrics, policies]
  std::string metric = "fragcost";
  // demand-weighted (§2): sliding window of recent arrivals giving p_m. Default 1,000 jobs.
  // Also the window of evacuation_keeps_room's smallest recent size (§13).
  int demand_window = 1000;
  // §4 step 7 full-size reserve: candidates that would leave fewer than N GPUs able to host
  // the model's largest profile are used only if no other candidate exists. 0 = off.
  int reserve_full = 0;
  // §4 step 2 reuse first: when some GPU, lazy or busy, holds an idle instance of exactly the
  // requested profile that is a candidate, choose among those reuses (by the metric, then step
  // 4) before the lazy/busy split, instead of creating an instance on a lazy GPU; every reuse
  // saves a MIG create and, later, a destroy. Off by default; `full` has it on (full_policy.h).
  bool reuse_first = false;
  // §4 step 2 anchored together: a job that can never leave its GPU (Job::anchors(): migratable
  // `none` or latency-sensitive) is placed on a GPU that already runs such a job (an anchored
  // GPU, Cluster::anchored) whenever one of them has a candidate, by the same choice (reuse
  // first, the lazy/busy split, the metric, step 4) among those GPUs only; on any GPU otherwise.
  // So the GPUs that hold only jobs that can move stay GPUs that evacuation (§13) can drain for
  // a large job. Off by default; `full`: its own (full_policy.h).
  bool anchored_together = false;
  // §5 the order of the queue scan. FIFO by default; `full` orders by response ratio
  // (full_policy.h). The Slurm controller always keeps Slurm's priority order (cluster/planner.h).
  QueueOrder queue_order = QueueOrder::kFifo;
  // §5 overtaking guard (with QueueOrder::kResponseRatio only; ours): among the waiting jobs of
  // one request (RequestKeyOf: the same profile or fraction and count), a job that has waited
  // more than overtake_guard times the median wait of them all is not passed by a later one of
  // them: those jobs go first, in arrival order, in the places the response ratio gives the
  // request's jobs, and the others follow in the ratio's order. It bounds how long a job whose
  // limit is long (often a user's overestimate) waits behind equal jobs that arrived after it,
  // while jobs of different requests are still ordered by the ratio alone. < 0 = off (the default
  // of every policy, `full` included: docs/results.md "Overtaking among equal requests"); 0 =
  // arrival order within each request.
  double overtake_guard = -1;
  // §5 limits weighed by what they predict (with QueueOrder::kResponseRatio only; ours): after
  // the ratio's sort, the places it gave the waiting jobs of one request (RequestKeyOf) go to
  // them by wait / limit^limit_power, highest first, so that among jobs that compete for the
  // same room a limit counts as much as it predicts run times; jobs of different requests keep
  // the ratio's order. A number in [0, 1]: 1 = the ratio's own order, 0 = arrival order within
  // each request; kLimitPowerLearned: the power learned from the jobs that ended
  // (sched/limit_model.h). Default: 1 (`full`: its own, full_policy.h).
  double limit_power = 1;
  // §5/§13 look-ahead reservation (the starvation guard): once a waiting job that does not fit
  // has waited longer than this, it reserves the placement that frees soonest and only jobs that
  // do not delay it may start. Seconds; < 0 = off (default; `full` has its own, full_policy.h).
  double max_skip_seconds = -1;
  // §13: the head only (EASY) or the first reservation_depth overdue waiting jobs (conservative).
  ReservationMode reservation = ReservationMode::kEasy;
  int reservation_depth = 8;  // >= 1; conservative only
  // §13 reservation slack F, the knob that trades large-job against small-job waits: a job may
  // backfill onto a reserved GPU when it ends no later than the reservation's expected start
  // plus F × the reserved job's time limit (0 when that is unknown). 0 = strict EASY or
  // conservative backfilling (default, the large jobs' side); larger F lets more small jobs
  // through, and F large against every job's limit is the same as no reservation. >= 0.
  double reservation_slack = 0;
  // §13 reservation horizon H, seconds: a look-ahead reservation is made only when the job's
  // expected start (its reserved placements' latest expected free time) is at most H from now;
  // < 0 = any start (default). A reservation keeps its GPUs from every job that could delay it
  // for as long as its start is away, and that start is predicted from time limits, which users
  // overestimate: the further away, the more capacity it holds back on a guess. Beyond H the
  // job waits like any other (in its queue order, evacuation if on) until its room is expected
  // within H. An unknown start is not a prediction: reservation_needs_ends alone decides for it.
  // `full`: 1800 (sched/full_policy.h).
  double reservation_horizon_s = -1;
  // §13 reservation ageing a (with a horizon, reservation_horizon_s >= 0): the horizon of a job
  // that has waited W seconds is max(H, a × W), so that a job the queue order keeps passing
  // over may in time reserve room predicted as far ahead as it has waited (a starvation bound:
  // its wait is at most about (1 + 1/a) times the predicted drain of the room it needs). 0 =
  // off (default, `full` too: docs/results.md "Reservations beyond the horizon" weighs what it
  // moves: the long gangs gain, the full-GPU profile and one-GPU clusters pay). >= 0, finite.
  double reservation_ageing = 0;
  // §13 reservation keeping (easy reservation only): once a job has been given the look-ahead
  // reservation, each later scan reserves for it first, before any job's turn, while it waits,
  // is overdue and its reservation can be made (within the horizon; a known start where
  // reservation_needs_ends); only then may another job be given one. False (default): each
  // scan's first overdue job that does not fit, in queue order, reserves, so under the
  // response-ratio order the reservation moves from job to job and GPU to GPU, and each move
  // leaves room held back that no reserved job used. `full`: true (sched/full_policy.h).
  bool reservation_keep = false;
  // §13 the reservation for the job that has waited longest (easy reservation only): at the
  // start of each scan, after a kept reservation if any, the overdue job queued first (ties:
  // queue order) is given the look-ahead reservation if it can be made (within the horizon; a
  // known start where reservation_needs_ends), whether it fits now or not (then it starts at
  // its turn on room no earlier job took); only when it cannot does the first overdue job that
  // does not fit, in queue order, reserve at its turn. False (default): that first job, as in
  // EASY backfilling, where the head of a FIFO queue is also the job that has waited longest.
  // Under the response-ratio order the first overdue job is the one with the shortest limit,
  // and a job with a long limit, past the bound, is not protected while shorter ones keep
  // arriving. `full`: true (sched/full_policy.h).
  bool reservation_oldest = false;
  // §13: whether a look-ahead reservation needs a known start. When the placement an overdue job
  // would reserve frees at an unknown time (a blocker without an expected end: the daemon's jobs
  // without a time limit, Slurm's with TimeLimit=UNLIMITED):
  //   false ("strict", default): it is reserved anyway, a strict starvation guard: its expected
  //     start is unknown, so on that GPU only jobs with a time limit start, and the others only
  //     beside the reserved placement;
  //   true ("skip", `full`'s default, sched/full_policy.h): no reservation is made for the job
  //     then; it waits as any other (evacuation, if on, still opens room for it).
  bool reservation_needs_ends = false;
  // §13 evacuation (with migration on): moves of running jobs that open a placement for a
  // waiting job now. Which waiting jobs may trigger it: scope, at least this wait (seconds) and
  // at least this many compute slices (of the profile on the first model offering it).
  EvacuationScope evacuation = EvacuationScope::kOff;  // `full`: queue (sched/full_policy.h)
  double evacuation_min_wait_s = 0;
  int evacuation_min_slices = 0;
  // When: at the job's turn in the scan, before later jobs backfill (false), or after the scan,
  // with the room backfill left (true).
  bool evacuation_after_backfill = false;
  // §13 room kept for small jobs: an evacuation is taken only if, where some GPU has a free
  // placement of the smallest size (compute slices) among the last demand_window arrivals,
  // smaller than the waiting job's, some GPU still has one after it (the candidates are tried in
  // their order, the first that keeps it wins; none: no evacuation for the job now). Where the
  // job would otherwise be turned away (max_wait_s >= 0), or is overdue (has waited longer than
  // max_skip_seconds >= 0), the first plan is taken as without it.
  // Off by default; `full`: on (sched/full_policy.h).
  bool evacuation_keeps_room = false;
  // §13 order at an instant with a completion (with migration on): the §6 pass before the
  // queue scan (true) or after it (false, default).
  bool migrate_before_scan = false;
  // §5: a job whose wait exceeds this is rejected and counted. Seconds; < 0 = none (default).
  double max_wait_s = -1;
  // Idle-instance retention: an idle instance is destroyed after this many seconds unused.
  // < 0 = keep until its space is needed (default).
  double idle_ttl_s = -1;
  // §12 joint placement of the waiting jobs: a queue scan places a job that does not fit on its
  // own together with the jobs it placed before (Scheduler::ScheduleQueue). Off by default here;
  // `lb+frag` and `full` turn it on (OptionsForPolicy, sched/full_policy.h, docs/results.md).
  bool joint_placement = false;

  // §6 migration: the migration planner and evacuation (§13).
  struct Migration {
    // Whether the scheduler runs the §6 migration planner at all: the completion, periodic and
    // fragmented passes, and the evacuations of §13 (`evacuation` says for which waiting jobs).
    // Off by default; `full` has it on (sched/full_policy.h): `full` is `lb+frag` with migration.
    // Needs a policy that creates instances (not `static`; MakePolicy refuses the pair).
    bool enabled = false;
    double defrag_interval_s = 300;  // periodic pass; 0 disables
    int max_moves_per_pass = 8;      // intra-GPU moves per pass and GPU
    double cooldown_s = 120;         // a job moves at most once per cool-down
    double fixed_s = 2;     // migration_seconds = fixed_s + memory_gb / gbps (our assumption)
    double gbps = 10;       // state copy bandwidth, GB/s (our assumption)
    double switch_s = 0.5;  // pause at switch-over, the only time the job does not progress
    double checkpoint_interval_s = 600;  // `restart` jobs lose progress since their last checkpoint
    // When the completion and periodic passes (§6) run: also while no job waits (kAlways), only
    // while some job waits (kWhileWaiting, the default: with nothing waiting a move has nothing
    // to gain and costs its pause, and a `restart` job's work since its last checkpoint), or
    // never (kOff, `full`'s default, sched/full_policy.h). docs/algorithms.md §13 "Moves that pay
    // for themselves". The passes of an arrival's fragmented room and the evacuations run in
    // every case.
    DefragPasses passes = DefragPasses::kWhileWaiting;
    // Where jobs can be turned away (max_wait_s >= 0: admission mode, or a bounded wait), moves
    // per job started: a move begins only while the moves begun so far, with it, stay within this
    // many per job started (the one it admits counted). An evacuation that would pass it is not
    // begun (the job is then turned away as without migration); a completion, periodic or
    // fragmented pass runs only while at least one more move fits (its own moves count too).
    // Every policy's default: 0.02, at most 2% of admitted jobs moved on average. < 0 = unbounded;
    // no effect where no job is ever turned away (max_wait_s < 0). docs/algorithms.md §13.
    double admission_move_budget = 0.02;
  } migration;

  // kInvalidArgument naming the field when out of range.
  Status Validate() const;
};

// Which of the options that some policy has defaults of its own for (the
// policy registry, sched/policy.h) the user set explicitly (on the command
// line, in the daemon's config file): those keep the user's value.
struct ExplicitOptions {
  bool threshold = false;          // --threshold / scheduler.threshold
  bool metric = false;             // --metric / scheduler.metric
  bool reserve_full = false;       // --reserve-full / scheduler.reserve-full
  bool reuse_first = false;        // --reuse-first / scheduler.reuse-first
  bool anchored_together = false;  // --anchored-together / scheduler.anchored-together
  bool migration = false;          // --migration / scheduler.migration
  bool queue_order = false;        // --queue-order / scheduler.queue-order
  bool max_skip_seconds = false;   // --max-skip-seconds / scheduler.max-skip-seconds
  bool overtake_guard = false;     // --overtake-guard / scheduler.overtake-guard
  bool limit_power = false;        // --limit-power / scheduler.limit-power
  bool joint_placement = false;    // --joint-placement / scheduler.joint-placement
  // §13 (`full` has a default of its own for evacuation, sched/full_policy.h).
  bool reservation = false;               // --reservation
  bool reservation_slack = false;         // --reservation-slack
  bool reservation_horizon = false;       // --reservation-horizon
  bool reservation_ageing = false;        // --reservation-ageing
  bool reservation_keep = false;          // --reservation-keep
  bool reservation_oldest = false;        // --reservation-oldest
  bool reservation_unknown_ends = false;  // --reservation-unknown-ends
  bool evacuation = false;                // --evacuation
  bool evacuation_min_wait = false;       // --evacuation-min-wait
  bool evacuation_min_slices = false;     // --evacuation-min-slices
  bool evacuation_when = false;           // --evacuation-when
  bool evacuation_keeps_room = false;     // --evacuation-keeps-room
  bool migration_order = false;           // --migration-order
  bool defrag_passes = false;             // --defrag-passes
  bool static_layout = false;             // --static-layout (`static` has a default of its own)
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_OPTIONS_H_
