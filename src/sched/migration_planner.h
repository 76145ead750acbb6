// The defragmentation planner of §6 of docs/algorithms.md: which running jobs
// to move, where, and in which order (the MigrationPlanner seam of
// sched/migration.h). Its rules, in the order one pass applies them:
//
//  1. Evacuation (every trigger, while a §5 reservation stands): the busy
//     instances blocking a reserved placement (those overlapping it, then, if
//     compute slices are short, the latest-ending others) that may move
//     between GPUs are moved off the reserved GPU, each to the §4 placement
//     (minimum ΔFragCost, then reuse, fewest idle instances destroyed, lower
//     util, lower GPU index, higher start; no lazy preference) on another
//     non-reserved GPU, when this makes the placement free sooner (the
//     instances that cannot move end before the ones that do) and every one
//     of them finds a target; otherwise none moves.
//  2. kFragmented (an arrival found only fragmented room, §4 step 6): for each
//     such request, oldest first, one move aimed at making room: on a GPU with
//     enough free compute slices and units but no valid placement for the
//     profile, a move of one of its instances after which the profile fits
//     there, within the GPU (preferred) or off it to the §4 placement on
//     another GPU; the least FragCost afterwards wins (ties: lower GPU index,
//     lower source start, higher target start).
//  3. kCompletion / kTick, intra-GPU: on every busy, non-reserved GPU g
//     (util(g) >= t), the move of one busy instance to another currently free
//     placement on g with the largest FragCost decrease, repeated while some
//     move decreases it, at most max_moves_per_pass times per GPU. Ties:
//     reuse of an idle instance, fewer idle instances destroyed, lower source
//     start, higher target start.
//  4. kCompletion / kTick, inter-GPU pulls: for each lazy, non-reserved GPU g
//     (util(g) < t; lowest util first, then lower index), the instances on
//     busy GPUs h with util(h) > util(g) whose leaving lowers FragCost(h)
//     (strictly: a job whose leaving does not lower it is not a candidate,
//     our reading), by largest decrease, then larger job (compute slices),
//     lower h, lower start; the first one that has a placement on g (§4 on g
//     only: minimum ΔFragCost, reuse, fewest destroys, higher start) with
//     FragCost(h) + FragCost(g) not rising is moved there. Repeated while g
//     stays lazy.
//
// Common rules: FragCost and util are those of the *settled* configuration
// (GpuState::settled_config: as if every copy in flight had switched over);
// a target must be free of busy instances now (both ends of a move are busy
// during the copy, so a target overlapping its own source is impossible and
// such a move is not made; a two-step move through a free placement happens
// only if each step is itself chosen); idle instances in its way are
// destroyed. A reserved GPU is never a target. Only jobs the context allows
// move (MigrationContext::rights: migratable != none, cool-down over, no move
// in flight; latency-sensitive jobs only within their GPU), each at most once
// per pass. Every begin plan is applied with ApplyPlan before the next move
// is chosen, so a pass never produces a plan that ApplyPlan rejects.
//
// Cost (grouping on, Cluster::representatives): every rule first tests the
// GPU *states* that matter, once per state group, and looks at the GPUs one
// by one only where a job-dependent choice is left. Targets on other GPUs
// (rules 1, 2) are found among the lowest eligible GPU of each group:
// O(groups × placements). Intra moves (3) and pulls (4): the busy GPUs whose
// state admits a FragCost-lowering move / leave (memoised per
// configuration) are kept across the passes of one planner and updated from
// the cluster's change journal (Cluster::ChangedSince): O(GPUs changed since
// the last pass + GPUs listed), O(GPUs) once for a cluster (or copy, or
// threshold) not seen before. Then O(instances × placements) on each listed
// GPU for intra moves, O(their instances) for the pull candidates; the lazy
// GPUs are walked as one stream per lazy state group in (util, index)
// order, so between two accepted pulls each lazy state is tried once
// (O(lazy groups × log) per accepted pull). With grouping off (the naive
// reference of tests and benchmarks) every GPU is scanned: the same moves in
// the same order (GroupingTest.MigrationPassesMatchTheNaiveScan).
//
// Thread-safety: a planner is used by one scheduler at a time.
#ifndef MIGSCHED_SCHED_MIGRATION_PLANNER_H_
#define MIGSCHED_SCHED_MIGRATION_PLANNER_H_

#include <memory>

#include "core/cluster.h"
#include "core/plan.h"
#include "sched/migration.h"

namespace migsched {

// The planner above (name "defrag").
std::unique_ptr<MigrationPlanner> NewDefragPlanner();

// The begin plan of `move` on `cluster` as it is now: kDestroy of the idle
// instances in the target's way, kCreate of the target unless an idle
// instance of exactly that profile and start is reused, kMigrateBegin.
Plan MigrationBeginPlan(const Cluster& cluster, const MigrationMove& move);
// The end plan (switch-over): kMigrateEnd, then kDestroy of the source unless
// `keep_source` (a policy that keeps idle instances keeps the source idle, as
// it keeps a completed job's instances: §1, §6).
Plan MigrationEndPlan(const MigrationMove& move, bool keep_source = false);

// Copy time of §6 for a `checkpoint` job whose source instance has
// `memory_mib`: fixed_s + (memory_mib / 1024) GB / gbps, seconds.
double MigrationCopySeconds(double memory_mib, const SchedulerOptions::Migration& m);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_MIGRATION_PLANNER_H_
