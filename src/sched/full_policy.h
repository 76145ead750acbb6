// `full`: the last rung of the ablation ladder (§11): the lb+frag placement
// of §4 (lazy/busy balancing, FragCost or the --metric, reuse of idle
// instances, full-size reserve) with the migration planner of §6
// (sched/migration_planner.h) on: the option SchedulerOptions::migration.enabled
// (--migration), which `full`'s defaults turn on. The registry (sched/policy.h)
// makes `full` as the lb+frag policy named "full"; what makes it `full` is
// only its defaults.
//
// FullDefaults below, registered with the policy in the registry: the
// migration planner, and the best combination of the remedies for the
// full-GPU gap measured in docs/results.md (section 3).
//
// Thread-safety: as any PlacementPolicy; the functions below are reentrant.
#ifndef MIGSCHED_SCHED_FULL_POLICY_H_
#define MIGSCHED_SCHED_FULL_POLICY_H_

#include <string_view>

#include "sched/options.h"

namespace migsched {

// The defaults `full` runs with where they differ from SchedulerOptions'. The metric was chosen
// in an earlier, unreplicated study (docs/results.md, section 3, "The metric"): the
// demand-weighted metric (§2) lowered mean JCT against FragCost on paper-mix and the Alibaba
// trace with the 7g p95 wait within seed noise; the full-size reserve (§4 step 7) changed little
// and stays off.
inline constexpr std::string_view kFullDefaultMetric = "demand-weighted";
// The migration planner of §6 and the evacuations of §13 (SchedulerOptions::migration.enabled):
// what distinguishes `full` from `lb+frag` on the ablation ladder (§11).
inline constexpr bool kFullDefaultMigration = true;
inline constexpr int kFullDefaultReserveFull = 0;  // GPUs; 0 = off
// Reuse first (§4 step 2, SchedulerOptions::reuse_first): chosen on the tuning set (docs/results.md
// section 2, "Reuse first", 10 paired replicas): reconfigurations 0.28-0.76x of the best baseline
// against 0.33-0.79x without it, mean JCT level or lower in all five settings.
inline constexpr bool kFullDefaultReuseFirst = true;
// Anchored together (§4 step 2, SchedulerOptions::anchored_together): a job that can never leave
// its GPU is placed where such jobs run already whenever one of those GPUs has room. Chosen on the
// tuning set after two settings with long services beside batch joined it (docs/results.md
// "Anchored jobs together", 30 paired replicas): mean JCT level over the 14 queue settings (0.855
// against 0.855 of the best baseline), the full-GPU p95 wait 0.777 -> 0.753 on average (0.72 ->
// 0.36 on the services setting at load 0.75), no setting significantly worse on mean JCT.
inline constexpr bool kFullDefaultAnchoredTogether = true;
// The queue order (§5, SchedulerOptions::queue_order): by response ratio, (wait + time limit) /
// time limit, so a job's wait counts against its own expected run time and a short job is not
// held for hours behind long ones, while a long job still rises as it waits. Chosen on the
// tuning set (docs/results.md section 2, "Queue order by response ratio", 10 paired replicas):
// mean JCT 0.72-0.87x of the best baseline against 0.88-0.93x in FIFO order, every profile's p95
// wait at most 1.30x (up to 2.12x in FIFO order); the 7g p95 rises from 0.61-0.71x to
// 0.68-0.84x.
inline constexpr QueueOrder kFullDefaultQueueOrder = QueueOrder::kResponseRatio;
// Limits weighed by what they predict (§5, SchedulerOptions::limit_power): among the waiting
// jobs of one request, a limit counts with the power learned from the jobs that ended (the
// slope of log run time on log limit, sched/limit_model.h), so where users' limits say little a
// long limit no longer makes a job wait behind equal ones that arrived after it. Chosen on the
// tuning set by the rule of the overtaking guard (docs/results.md section 2, "Limits weighed by
// what they predict", 30 paired replicas): every profile's p95 wait at most 1.25x the best
// baseline's (worst 1.48x with the ratio's own order), then the lowest mean JCT (0.834x against
// the guard's 0.868x; 0.808x with the ratio's own order, which fails the first part).
inline constexpr double kFullDefaultLimitPower = kLimitPowerLearned;
// The large-job mechanisms of §13, chosen in docs/results.md (section 3, "The defaults of
// `full`") by the criterion stated there before the replicated runs: among `--evacuation queue`
// alone and with the look-ahead reservation at each reservation slack F in {0, 0.25, 0.5, 1, 2,
// 4}, those never significantly worse than the best baseline on mean JCT in any of the 19
// settings; among them the lowest mean over the settings of the mean-JCT ratio; ties within
// 0.01: the lower mean 7g p95 ratio. The pick: evacuation for any waiting job, the starvation
// guard after 1800 s (§5, EASY) and slack F = 1 (a job may backfill onto a reserved GPU when it
// ends by the reservation's expected start plus the reserved job's time limit). Where the
// scheduler knows no expected end of the jobs blocking a reservation (daemon jobs without
// time_limit_s, Slurm jobs with TimeLimit=UNLIMITED) the reservation could only be strict (its
// start unknown, nothing without a known end backfills onto the GPU), which measured
// significantly worse than the best baseline in 13 of 19 settings (Alibaba 5.62x mean JCT,
// docs/results.md section 3, the simulator's `--expected-ends unknown`); so `full` makes no
// reservation then (`--reservation-unknown-ends skip`) and behaves as `--evacuation queue` alone.
inline constexpr double kFullDefaultMaxSkipSeconds = 1800;  // seconds; < 0 = off
inline constexpr double kFullDefaultReservationSlack = 1;   // × the reserved job's time limit
// The reservation horizon (SchedulerOptions::reservation_horizon_s): 30 min, and reservation
// keeping (SchedulerOptions::reservation_keep): on. First chosen on the tuning set on 2026-12-04
// (docs/results.md "The reservation horizon", 30 replicas): with the response-ratio order,
// reservations predicted far ahead from time limits held GPUs back from long jobs for hours and
// raised every profile's p95 wait on the training setting (7g 1.14x -> 0.59x, the worst profile
// 1.62x -> 1.03x of the best baseline at 2 h). Chosen again, with keeping, on 2026-12-06 after a
// heavy-tailed serving setting joined the tuning set (docs/results.md "Reservation keeping", 30
// replicas): there the reservation passed from one short-limit job to the next and each left a
// GPU half drained, and 2-instance services waited 2.20x as long at p95 as under the best
// baseline; among the variants with every worst profile <= 1.25x, mean JCT and the 7g p95 tied
// within 0.01, and keeping with H = 30 min had the largest horizon (the rule stated there).
inline constexpr double kFullDefaultReservationHorizonS = 1800;  // seconds; < 0 = any start
inline constexpr bool kFullDefaultReservationKeep = true;
// The reservation for the overdue job that has waited longest (SchedulerOptions::
// reservation_oldest): on. Chosen on 2026-12-06 (docs/results.md "The reservation for the job
// that has waited longest", 30 paired replicas): on the tuning set mean JCT and the 7g p95
// tied with the first overdue job's reservation (0.836 against 0.835, 0.810 against 0.800 of
// the best baseline) and the worst profile fell from 1.18x to 1.13x; on the probe set, where
// the response-ratio order had left long-limit services of mid-sized profiles 1.43x the best
// baseline's p95 wait, no profile is significantly above 1.25x any more.
inline constexpr bool kFullDefaultReservationOldest = true;
inline constexpr bool kFullDefaultReservationNeedsEnds = true;  // reservation-unknown-ends skip
inline constexpr EvacuationScope kFullDefaultEvacuation = EvacuationScope::kQueue;
// Room kept for small jobs (SchedulerOptions::evacuation_keeps_room): an evacuation may not take
// the last free placement of the smallest recent size. Chosen on the tuning set on 2026-12-05
// (docs/results.md "Room kept for small jobs", 30 paired replicas, with a light-load setting
// added for it): at load 0.6 the 1g.5gb p95 wait went from 5.61x of the best baseline's
// (significant) to 2.04x (not significant) with the same mean JCT; at load 0.7-1.1 mean JCT rose
// 0-3% (significant on two of five settings) and the 7g p95 3-10%; on the churn and paper-mix
// settings moves 19-31% fewer and reconfigurations 6-11% fewer. Since 2026-12-06 an overdue job
// is not held to it (results.md "The room kept, and overdue jobs": on the tuning set's overload
// setting the 3g.40gb p95 1.31x -> 1.18x of the best baseline's, mean JCT and 7g p95 better),
// unless its start is unknown (no reservation under skip; "Overdue jobs whose start is unknown":
// churn without time limits, 1g.5gb p95 1.37x -> 1.12x of the best baseline's).
inline constexpr bool kFullDefaultEvacuationKeepsRoom = true;
// No completion or periodic migration pass (SchedulerOptions::Migration::passes): every move of
// `full` is asked for by a waiting job, an evacuation (weighed against the wait it saves) or a
// move aimed at an arrival's fragmented room. Chosen on the tuning set on 2026-12-05
// (docs/results.md "Moves asked for by a waiting job", 30 paired replicas, against the passes
// while some job waits): mean JCT 1.00 on all six settings (none significant), 17-89% fewer
// moves, reconfigurations 0-3% fewer.
inline constexpr DefragPasses kFullDefaultDefragPasses = DefragPasses::kOff;
// No lazy/busy split (§3; t = 1 puts every GPU in one class, so the choice is by the metric alone,
// which packs), in queue and admission mode. Spreading jobs to lazy GPUs leaves fewer whole GPUs
// for the large profiles: where jobs are turned away a large job that finds none is lost (chosen
// on the tuning set's admission setting, docs/algorithms.md §13 "The admission move budget");
// where they wait, jobs that cannot move to another GPU (latency-sensitive, or `none`) stay
// spread until they end. In queue mode chosen on 2026-12-07 (docs/results.md "The lazy/busy split
// in queue mode"): on the tuning set level with t = 0.4 (30 paired replicas: mean JCT 0.833
// against 0.832 of the best baseline, the full-GPU p95 0.737 against 0.739, the worst profile
// 1.16x in both); on a user's inference workload of long latency-sensitive services and bursts
// of full-GPU jobs, which no set had, t = 0.4 was 1.11-1.36x the best baseline's mean JCT over
// ten independent draws of it (significantly worse at every load) and t = 1 1.01-1.06x (level).
// With the completion or periodic passes on (--defrag-passes while-waiting|always), whose rules 3
// and 4 (§6) act on busy GPUs only, `full` keeps the global t = 0.4 instead.
inline constexpr double kFullDefaultThreshold = 1;

// `options` with full's defaults above for each of migration, metric, reserve_full, reuse_first,
// anchored_together, queue_order, max_skip_seconds, reservation_slack, reservation_horizon_s,
// reservation_keep, reservation_oldest, reservation_needs_ends, evacuation, evacuation_keeps_room,
// migration.passes and threshold that `set` does not mark (the registry's defaults of `full`,
// sched/policy.h PolicyOptions).
SchedulerOptions FullDefaults(SchedulerOptions options, const ExplicitOptions& set);

// Joint placement of the waiting jobs (§12, SchedulerOptions::joint_placement) is on by default
// for the policies of our own (`lb+frag`, its alias `frag-aware`, and `full`), chosen in
// docs/results.md ("Joint placement of waiting jobs") by the criterion stated there; the
// baselines stand for systems that place one job at a time and keep it off. The registry
// (sched/policy.h PolicyInfo::joint_placement) holds it per policy.
inline constexpr bool kJointPlacementDefault = true;

}  // namespace migsched

#endif  // MIGSCHED_SCHED_FULL_POLICY_H_
