// Hand-derived traces through the online simulator for §5 (starvation guard,
// --max-wait), idle-instance retention and §6 (make-before-break migration,
// restart jobs). Every expected value is worked out in the comment next to
// it; r = 0.023 s is one MIG create or destroy; contention is off (rate 1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config_table.h"
#include "sched/candidates.h"
#include "sched/migration_planner.h"
#include "sim/online_mode.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

constexpr double kMigR = 0.023;

SimOptions MigOptions(double reconfig_ms = 23) {
  static ManualClock clock;
  SimOptions o;
  o.reconfig_ms = reconfig_ms;
  o.clock = &clock;
  o.self_check = true;
  o.contention = false;
  return o;
}

// Places each job where its name says ("g0s5": GPU 0, start 5); RunScripted turns migration on.
class Scripted : public PlacementPolicy {
 public:
  std::string_view name() const override { return "scripted"; }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    int gpu = 0, start = 0;
    if (std::sscanf(req.spec->name.c_str(), "g%ds%d", &gpu, &start) != 2) return std::nullopt;
    std::vector<Candidate> cands;
    AppendCandidates(cluster, gpu, req.ProfileOn(cluster.gpu(gpu).model()), true, &cands);
    for (const Candidate& c : cands) {
      if (c.start == start) return c;
    }
    return std::nullopt;
  }
};

SimResult RunScripted(const std::vector<WorkloadJob>& jobs, const SchedulerOptions& o,
                      int gpus = 1) {
  ConfigTableCache tables;
  Cluster cluster(std::vector<const GpuModel*>(gpus, &Model("A100-40GB")), &tables);
  ManualClock clock;
  SchedulerOptions with_moves = o;
  with_moves.migration.enabled = true;  // the §6 planner, as `full`'s defaults have it
  Scheduler scheduler(&cluster, std::make_unique<Scripted>(), with_moves, &clock);
  EXPECT_TRUE(scheduler.Setup().ok());
  auto tracker = ClusterTracker::Create(cluster, true);
  EXPECT_TRUE(tracker.ok());
  SimResult result;
  Status st = RunOnlineMode(jobs, MigOptions(), &scheduler, &*tracker, &result);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return result;
}

// One A100, all at t = 0: A 1g@0, B 1g@1 (`none`, 1000 s), C 1g@5 (1000 s),
// E 1g@6 (`none`, 10 s). The four creates run one after the other: A starts
// at r, B 2r, C 3r, E 4r; E ends at 10 + 4r. The pass after that completion
// (threshold 0.4; {0,1,5}: util 3/7, FragCost 0.5) moves C 5 -> 3 (FragCost
// 0.3, see sched/migration_planner_test.cc; E's idle 1g@6 is not in the
// way). The target is created on the GPU's operation queue, free since 4r:
// ready at 10 + 5r.
std::vector<WorkloadJob> MoveTrace(Migratable c) {
  return {AJob("1g.5gb").Named("g0s0").Runs(1000), AJob("1g.5gb").Named("g0s1").Runs(1000),
          AJob("1g.5gb").Named("g0s5").Runs(1000).Moves(c), AJob("1g.5gb").Named("g0s6").Runs(10)};
}

// A planner that moves every job it may move between 1g@5 and 1g@3 of GPU 0 at every pass (a
// livelock of moves, for the stall guard below).
class PingPong : public MigrationPlanner {
 public:
  std::string_view name() const override { return "ping-pong"; }
  StatusOr<std::vector<MigrationStart>> RunPass(Cluster* cluster,
                                                const MigrationContext& ctx) override {
    std::vector<MigrationStart> out;
    const GpuState& g = cluster->gpu(0);
    for (const Instance& in : g.instances()) {
      if (!in.runs_job() || ctx.rights(in.job) == MoveRights::kNone) continue;
      if (in.start != 3 && in.start != 5) continue;
      MigrationMove mv{in.job, {0, in.profile, in.start}, {0, in.profile, 8 - in.start}};
      Plan plan = MigrationBeginPlan(*cluster, mv);
      RETURN_IF_ERROR(ApplyPlan(plan, cluster));
      out.push_back({mv, plan});
      break;
    }
    return out;
  }
};

// SimOptions::stall_event_times (what `migsched stress` sets): one checkpoint job of 1000 s on
// 1g@5, moved 5 -> 3 -> 5 ... by every periodic pass (every 10 s, no cool-down). Each move is
// three event times (the target ready, the copy done, the switch-over's end) besides its tick,
// and no job event happens between the job's start (t = r) and its end, so with the guard at 50
// event times the run stops with kInternal naming a livelock; with the guard off (the default)
// the same run completes.
TEST(MigrationSimTest, AStallOfEventTimesWithoutAJobEventIsReportedAsALivelock) {
  const std::vector<WorkloadJob> jobs = {
      AJob("1g.5gb").Named("g0s5").Runs(1000).Moves(Migratable::kCheckpoint)};
  for (const int64_t stall : {int64_t{50}, int64_t{0}}) {
    SCOPED_TRACE(stall);
    ConfigTableCache tables;
    Cluster cluster({&Model("A100-40GB")}, &tables);
    ManualClock clock;
    SchedulerOptions o;
    o.migration.enabled = true;
    o.migration.passes = DefragPasses::kAlways;
    o.migration.defrag_interval_s = 10;
    o.migration.cooldown_s = 0;
    Scheduler scheduler(&cluster, std::make_unique<Scripted>(), o, &clock);
    scheduler.SetMigrationPlanner(std::make_unique<PingPong>());
    ASSERT_TRUE(scheduler.Setup().ok());
    auto tracker = ClusterTracker::Create(cluster, true);
    ASSERT_TRUE(tracker.ok());
    SimOptions sim = MigOptions();
    sim.stall_event_times = stall;
    SimResult result;
    const Status st = RunOnlineMode(jobs, sim, &scheduler, &*tracker, &result);
    if (stall > 0) {
      EXPECT_EQ(st.code(), StatusCode::kInternal);
      EXPECT_THAT(st.message(), ::testing::HasSubstr("in 50 event times"));
      EXPECT_THAT(st.message(), ::testing::HasSubstr("a livelock (a bug)"));
    } else {
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(result.metrics.jobs_completed, 1);
      EXPECT_GT(result.metrics.migrations, 50 / 4);
    }
  }
}

// The moves below are begun by a completion pass with nothing waiting: the passes run always
// (their default runs them only while a job waits: docs/algorithms.md §13).
TEST(MigrationSimTest, CheckpointMoveIsMakeBeforeBreak) {
  // Copy: fixed 2 s + 4864 MiB / 1024 = 4.75 GB at 10 GB/s = 2.475 s, from
  // 10 + 5r to 12.475 + 5r; C keeps running. Switch-over: paused 0.5 s until
  // 12.975 + 5r; then it runs on 1g@3. C does 1000 s of work over
  // [3r, end] minus the 0.5 s pause: end = 3r + 1000 + 0.5 = 1000.569.
  // Later passes (A, B `none`; C cooling down until 10 + 4r + 120, then
  // {0,1,3} has no decreasing move) move nothing.
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;
  const SimResult r = RunScripted(MoveTrace(Migratable::kCheckpoint), o);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_NEAR(r.jobs[2].end_s, 3 * kMigR + 1000.5, 1e-9);
  EXPECT_EQ(r.jobs[2].migrations, 1);
  EXPECT_NEAR(r.jobs[0].end_s, kMigR + 1000, 1e-9);  // A: unaffected
  EXPECT_NEAR(r.jobs[3].end_s, 4 * kMigR + 10, 1e-9);
  const Metrics& m = r.metrics;
  EXPECT_EQ(m.migrations, 1);
  EXPECT_EQ(m.migrations_intra, 1);
  EXPECT_EQ(m.migrations_inter, 0);
  EXPECT_NEAR(m.migration_bytes_gb, 4.75, 1e-12);
  EXPECT_NEAR(m.migration_pause_s, 0.5, 1e-12);
  EXPECT_EQ(m.migration_work_lost_s, 0);
  // 4 placements + the target; the source is kept idle at the switch-over (§6), as E's instance
  // is at its end: nothing is destroyed.
  EXPECT_EQ(m.creates, 5);
  EXPECT_EQ(m.destroys, 0);
}

// The same move, then two 1g.5gb jobs for the two idle instances, F at 1g@5 (the move's source)
// and G at 1g@6 (E's), arriving at 20 (after the switch-over at 12.975 + 5r) and running 100 s.
// Both reuse an idle instance: 5 creates as above and 2 reuses, no destroy; F and G start at their
// arrival (no reconfiguration) and end at 120. When the source was destroyed at the switch-over,
// F needed a create (6 creates, 1 destroy) and started at 20 + r.
TEST(MigrationSimTest, AMovesSourceIsReusedByTheNextJobOfItsProfile) {
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;
  std::vector<WorkloadJob> jobs = MoveTrace(Migratable::kCheckpoint);
  jobs.push_back(AJob("1g.5gb").Named("g0s5").ArrivesAt(20).Runs(100));
  jobs.push_back(AJob("1g.5gb").Named("g0s6").ArrivesAt(20).Runs(100));
  const SimResult r = RunScripted(jobs, o);
  ASSERT_EQ(r.jobs.size(), 6u);
  EXPECT_EQ(r.jobs[2].migrations, 1);
  EXPECT_NEAR(r.jobs[4].start_s, 20, 1e-9);
  EXPECT_NEAR(r.jobs[5].start_s, 20, 1e-9);
  EXPECT_EQ(r.metrics.creates, 5);
  EXPECT_EQ(r.metrics.reuses, 2);
  EXPECT_EQ(r.metrics.destroys, 0);
}

TEST(MigrationSimTest, RestartMoveLosesWorkSinceTheLastCheckpoint) {
  // Restart, checkpoints every 4 s from C's start 3r: at 3r + 8 the work
  // left was 992 s. No copy: the switch-over begins when the target is
  // ready, 10 + 5r, with 1000 - (10 + 2r) = 989.954 s left: 2.046 s lost.
  // Paused until 10.5 + 5r, then 992 s on 1g@3: end = 1002.5 + 5r.
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;
  o.migration.checkpoint_interval_s = 4;
  const SimResult r = RunScripted(MoveTrace(Migratable::kRestart), o);
  EXPECT_NEAR(r.jobs[2].end_s, 1002.5 + 5 * kMigR, 1e-9);
  EXPECT_EQ(r.jobs[2].migrations, 1);
  EXPECT_NEAR(r.metrics.migration_work_lost_s, 2 + 2 * kMigR, 1e-9);
  EXPECT_EQ(r.metrics.migration_bytes_gb, 0);
  EXPECT_NEAR(r.metrics.migration_pause_s, 0.5, 1e-12);
}

// Regression (a_moved_job_is_not_ended_by_the_limit_of_its_first_run): a moved job's time limit
// counts from its relaunch on the target, as the daemon and Slurm's requeue count it, so a move
// never costs a job its limit. C as above, with a limit equal to its 1000 s of work (a user at
// the limit). Before: the limit ran from C's first start, 3r + 1000, and C, which the move set
// back to 1002.5 + 5r, ended there as `timeout`.
TEST(MigrationSimTest, AMovedJobIsNotEndedByTheLimitOfItsFirstRun) {
  std::vector<WorkloadJob> jobs = MoveTrace(Migratable::kRestart);
  jobs[2] = AJob("1g.5gb").Named("g0s5").Runs(1000).Limit(1000).Moves(Migratable::kRestart);
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;
  o.migration.checkpoint_interval_s = 4;
  const SimResult r = RunScripted(jobs, o);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_EQ(r.jobs[2].migrations, 1);
  // Relaunched at 10.5 + 5r: its limit ends at 1010.5 + 5r, after its 992 s of work left.
  EXPECT_EQ(r.jobs[2].outcome, JobOutcome::kCompleted);
  EXPECT_NEAR(r.jobs[2].end_s, 1002.5 + 5 * kMigR, 1e-9);
  EXPECT_EQ(r.metrics.jobs_timeout, 0);
  // A checkpoint job alike: relaunched at 12.975 + 5r, it ends at 3r + 1000.5 (above), within.
  jobs[2] = AJob("1g.5gb").Named("g0s5").Runs(1000).Limit(1000).Moves(Migratable::kCheckpoint);
  const SimResult c = RunScripted(jobs, o);
  EXPECT_EQ(c.jobs[2].migrations, 1);
  EXPECT_EQ(c.jobs[2].outcome, JobOutcome::kCompleted);
  EXPECT_NEAR(c.jobs[2].end_s, 3 * kMigR + 1000.5, 1e-9);
  // Not moved, the limit still ends a job: E's 10 s of work under a 5 s limit.
  jobs[3] = AJob("1g.5gb").Named("g0s6").Runs(10).Limit(5);
  const SimResult e = RunScripted(jobs, o);
  EXPECT_EQ(e.jobs[3].outcome, JobOutcome::kTimeout);
  EXPECT_NEAR(e.jobs[3].end_s, 4 * kMigR + 5, 1e-9);
}

TEST(MigrationSimTest, NoMoveWhenTheJobIsNotMigratable) {
  // Same trace with C `none`: nothing moves, C ends at 3r + 1000.
  const SimResult r = RunScripted(MoveTrace(Migratable::kNone), SchedulerOptions{});
  EXPECT_NEAR(r.jobs[2].end_s, 3 * kMigR + 1000, 1e-9);
  EXPECT_EQ(r.metrics.migrations, 0);
  EXPECT_EQ(r.metrics.creates, 4);
}

TEST(MigrationSimTest, MaxWaitRejectsAJobStillQueued) {
  // first-fit, no reconfiguration cost. X (7g, 0-100) holds the GPU. Y (7g,
  // t = 10) reaches --max-wait 50 at 60, still queued: rejected. Z (7g,
  // t = 50) reaches it at 100, the instant X ends: the scan of that instant
  // starts Z first, so Z runs 100-110.
  SchedulerOptions o;
  o.max_wait_s = 50;
  auto r = RunSimulation(
      {&Model("A100-40GB")},
      {AJob("7g.40gb").Named("x").Runs(100), AJob("7g.40gb").Named("y").ArrivesAt(10).Runs(10),
       AJob("7g.40gb").Named("z").ArrivesAt(50).Runs(10)},
      "first-fit", o, MigOptions(0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs[1].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r->jobs[1].reason, "waited longer than --max-wait");
  EXPECT_TRUE(std::isnan(r->jobs[1].start_s));
  EXPECT_EQ(r->jobs[2].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r->jobs[2].start_s, 100);
  EXPECT_EQ(r->jobs[2].end_s, 110);
  EXPECT_EQ(r->metrics.rejected, 1);
  EXPECT_EQ(r->metrics.jobs_completed, 2);
  EXPECT_EQ(r->metrics.per_profile.at("7g.40gb").rejected, 1);
}

// first-fit on one A100 without reconfiguration cost: a 7g (100 s) arrives at
// t = 5 behind a stream of 1g jobs (60 s) arriving every 10 s from t = 0 to
// 190. At most 6 of them run at once, so a 1g always fits and the GPU is
// never empty until the last one ends at 250: without the guard the 7g
// starts at 250. With --max-skip-seconds 30 the 7g, head of the queue, is
// overdue from t = 40 (waited 35 > 30): the GPU is reserved, the 1g's of
// t = 40.. wait, and the four running ones (t = 0..30) end by 90: the 7g
// starts at 90.
TEST(MigrationSimTest, StarvationGuardStopsBackfillFromStarvingAFullGpuJob) {
  std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Named("s0").Runs(60),
                                   AJob("7g.40gb").Named("big").ArrivesAt(5).Runs(100)};
  for (int k = 1; k < 20; ++k)
    jobs.push_back(AJob("1g.5gb").Named("s" + std::to_string(k)).ArrivesAt(10.0 * k).Runs(60));
  for (double skip : {-1.0, 30.0}) {
    SchedulerOptions o;
    o.max_skip_seconds = skip;
    auto r = RunSimulation({&Model("A100-40GB")}, jobs, "first-fit", o, MigOptions(0));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->jobs[1].start_s, skip < 0 ? 250 : 90) << "max skip " << skip;
    EXPECT_EQ(r->metrics.jobs_completed, 21);
  }
}

// The evacuation case of the next three tests: a 3g.20gb on GPU 0 (start 4), two movable 1g.5gb
// jobs on GPU 1 (starts 0 and 6), and a 7g.40gb for GPU 1 arriving at 10.
std::vector<WorkloadJob> EvacuationCase() {
  return {AJob("3g.20gb").Named("g0s4").Runs(5000),
          AJob("1g.5gb").Named("g1s0").Runs(1000).Moves(Migratable::kCheckpoint),
          AJob("1g.5gb").Named("g1s6").Runs(1000).Moves(Migratable::kCheckpoint),
          AJob("7g.40gb").Named("g1s0").ArrivesAt(10).Runs(100)};
}

// §13 evacuation through the simulator, to the millisecond, with migration
// costs of its own (copy: fixed 1 s + memory / 9.5 GB/s; switch-over 2 s; no
// periodic pass). Two A100s, all placed as named: r (3g.20gb, `none`, 5000 s)
// on GPU 0 at 3g@4 by r = 0.023; a and b (1g.5gb, checkpoint, 1000 s) on GPU 1
// at 1g@0 (by r) and 1g@6 (by 2r). t = 10: d (7g.40gb, 100 s) asks for 7g@0
// on GPU 1 and does not fit. Evacuation (`head`): GPU 0's blocker r may not
// move; GPU 1's a and b may, to GPU 0's free units 0-3 (make-before-break):
// GPU 1 is held for d. The targets are created on GPU 0 by 10 + r = 10.023
// and 10 + 2r = 10.046; each copy takes 1 + 4864 MiB / 1024 / 9.5 = 1.5 s
// (to 11.523 and 11.546); each pause 2 s (to 13.523 and 13.546), then each
// source on GPU 1 is destroyed (13.523-13.546 and 13.546-13.569): not kept
// idle, as GPU 1 is held for d (§6). The scan at
// b's switch-over (13.546) places d; its create queues behind b's destroy:
// d starts at 13.569 + r = 13.592 and ends at 113.592. a and b lose no work
// and end 2 s (the pause) after 1000 s of running: 1002.023 and 1002.046.
// Without evacuation d waits for both: a ends at 1000.023 and b at 1000.046;
// their instances stay idle until the space is needed, so the scan at b's end
// places d and GPU 1 destroys both (to 1000.069, 1000.092) and creates 7g@0:
// d starts at 1000.115 = 1000 + 5r.
TEST(MigrationSimTest, EvacuationMovesTwoSmallJobsAndStartsTheSevenSliceJobToTheMillisecond) {
  const std::vector<WorkloadJob> jobs = EvacuationCase();
  SchedulerOptions o;
  o.migration.defrag_interval_s = 0;
  o.migration.fixed_s = 1;
  o.migration.gbps = 9.5;
  o.migration.switch_s = 2;
  o.evacuation = EvacuationScope::kHead;
  const SimResult r = RunScripted(jobs, o, /*gpus=*/2);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_NEAR(r.jobs[3].start_s, 13.592, 1e-9);
  EXPECT_NEAR(r.jobs[3].end_s, 113.592, 1e-9);
  EXPECT_THAT(r.jobs[3].instances, ::testing::StartsWith("1:7g.40gb@0"));
  // Each moved once (`instances` is where a job was first placed; the two
  // inter-GPU moves below are theirs).
  EXPECT_EQ(r.jobs[0].migrations, 0);
  EXPECT_EQ(r.jobs[1].migrations, 1);
  EXPECT_EQ(r.jobs[2].migrations, 1);
  EXPECT_NEAR(r.jobs[1].end_s, 1002 + kMigR, 1e-9);
  EXPECT_NEAR(r.jobs[2].end_s, 1002 + 2 * kMigR, 1e-9);
  const Metrics& m = r.metrics;
  EXPECT_EQ(m.evacuations, 1);
  EXPECT_EQ(m.migrations, 2);
  EXPECT_EQ(m.migrations_inter, 2);
  EXPECT_NEAR(m.migration_bytes_gb, 2 * 4.75, 1e-12);
  EXPECT_NEAR(m.migration_pause_s, 2 * 2.0, 1e-12);
  EXPECT_EQ(m.migration_work_lost_s, 0);
  // Off: no move, d starts after a and b have ended and b's instance is destroyed.
  o.evacuation = EvacuationScope::kOff;
  const SimResult off = RunScripted(jobs, o, /*gpus=*/2);
  EXPECT_EQ(off.metrics.migrations, 0);
  EXPECT_NEAR(off.jobs[3].start_s, 1000 + 5 * kMigR, 1e-9);
}

// Admission mode (--max-wait 0): the same jobs. d, which fits nowhere at its arrival, is admitted
// with the evacuation that opens its room instead of being turned away: it starts when the moves
// are over, at 13.592 as in queue mode above. Without evacuation it is rejected at its arrival.
// The admission move budget allows it: 3 jobs started before d, d would be the 4th, and its 2
// moves are within 0.5 x 4 = 2.
TEST(MigrationSimTest, InAdmissionModeAnEvacuationAdmitsAJobInsteadOfRejectingIt) {
  const std::vector<WorkloadJob> jobs = EvacuationCase();
  SchedulerOptions o;
  o.migration.defrag_interval_s = 0;
  o.migration.fixed_s = 1;
  o.migration.gbps = 9.5;
  o.migration.switch_s = 2;
  o.max_wait_s = 0;
  o.evacuation = EvacuationScope::kHead;
  o.migration.admission_move_budget = 0.5;
  const SimResult r = RunScripted(jobs, o, /*gpus=*/2);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_EQ(r.metrics.rejected, 0);
  EXPECT_EQ(r.jobs[3].outcome, JobOutcome::kCompleted);
  EXPECT_NEAR(r.jobs[3].start_s, 13.592, 1e-9);
  EXPECT_EQ(r.metrics.migrations, 2);
  o.evacuation = EvacuationScope::kOff;
  const SimResult off = RunScripted(jobs, o, /*gpus=*/2);
  EXPECT_EQ(off.metrics.rejected, 1);
  EXPECT_EQ(off.jobs[3].outcome, JobOutcome::kRejected);
}

// The admission move budget (docs/algorithms.md §13): the case above, where d's evacuation needs
// 2 moves and d would be the 4th job started. A budget of 0.49 allows 0.49 x 4 = 1.96 < 2 moves:
// d is turned away as without evacuation, and nothing moves. The default (0.02: 0.08 moves) does
// the same; unbounded (< 0) admits it.
TEST(MigrationSimTest, AnEvacuationPastTheAdmissionMoveBudgetIsNotBegun) {
  const std::vector<WorkloadJob> jobs = EvacuationCase();
  SchedulerOptions o;
  o.migration.defrag_interval_s = 0;
  o.max_wait_s = 0;
  o.evacuation = EvacuationScope::kHead;
  for (double budget : {0.49, SchedulerOptions().migration.admission_move_budget}) {
    o.migration.admission_move_budget = budget;
    const SimResult r = RunScripted(jobs, o, /*gpus=*/2);
    EXPECT_EQ(r.metrics.rejected, 1) << budget;
    EXPECT_EQ(r.jobs[3].outcome, JobOutcome::kRejected) << budget;
    EXPECT_EQ(r.metrics.migrations, 0) << budget;
    EXPECT_EQ(r.metrics.evacuations, 0) << budget;
  }
  o.migration.admission_move_budget = -1;
  const SimResult unbounded = RunScripted(jobs, o, /*gpus=*/2);
  EXPECT_EQ(unbounded.metrics.rejected, 0);
  EXPECT_EQ(unbounded.metrics.migrations, 2);
}

// Regression (no_room_made_for_a_job_turned_away): one A100 runs 1g.5gb@0 and 1g.5gb@4, both
// `checkpoint`. A 3g.20gb arriving at 10 finds 5 free compute slices but neither 3g placement (0
// and 4) free: a fragmented request. With --max-wait 0 and evacuation off it is turned away at
// its arrival, and the fragmented pass of that instant used to move a 1g job to make room for
// it all the same: a move for a job that is gone. Now nothing moves.
TEST(MigrationSimTest, NoRoomIsMadeForAJobAlreadyTurnedAway) {
  const std::vector<WorkloadJob> jobs = {
      AJob("1g.5gb").Named("g0s0").Runs(1000).Moves(Migratable::kCheckpoint),
      AJob("1g.5gb").Named("g0s4").Runs(1000).Moves(Migratable::kCheckpoint),
      AJob("3g.20gb").Named("g0s0").ArrivesAt(10).Runs(100)};
  SchedulerOptions o;
  o.migration.defrag_interval_s = 0;
  o.max_wait_s = 0;
  o.evacuation = EvacuationScope::kOff;
  o.migration.admission_move_budget = -1;  // unbounded: the budget is not what stops it
  const SimResult r = RunScripted(jobs, o);
  EXPECT_EQ(r.metrics.rejected, 1);
  EXPECT_EQ(r.jobs[2].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r.metrics.migrations, 0);
}

TEST(MigrationSimTest, IdleTtlDestroysUnusedInstancesAndReuseCountsAsSaved) {
  // lb+frag keeps instances: a (1g, 0-10) is created at 1g@6 (start r, end
  // 10 + r); b (1g, t = 20) reuses it (no reconfiguration: 20-30): one
  // destroy and one create saved. Idle from 30, it is destroyed at
  // 30 + --idle-ttl 40 = 70.
  SchedulerOptions o;
  o.idle_ttl_s = 40;
  auto r = RunSimulation(
      {&Model("A100-40GB")},
      {AJob("1g.5gb").Named("a").Runs(10), AJob("1g.5gb").Named("b").ArrivesAt(20).Runs(10)},
      "lb+frag", o, MigOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Metrics& m = r->metrics;
  EXPECT_EQ(r->jobs[1].start_s, 20);
  EXPECT_EQ(m.creates, 1);
  EXPECT_EQ(m.reuses, 1);
  EXPECT_EQ(m.destroys, 1);
  EXPECT_EQ(m.idle_expirations, 1);
  EXPECT_EQ(m.reconfigurations_saved_by_retention, 2);
  EXPECT_EQ(r->timeline.back().time_s, 70);
  // Default retention: kept until needed, never destroyed here.
  auto keep = RunSimulation(
      {&Model("A100-40GB")},
      {AJob("1g.5gb").Named("a").Runs(10), AJob("1g.5gb").Named("b").ArrivesAt(20).Runs(10)},
      "lb+frag", SchedulerOptions{}, MigOptions());
  ASSERT_TRUE(keep.ok());
  EXPECT_EQ(keep->metrics.destroys, 0);
  EXPECT_EQ(keep->metrics.idle_expirations, 0);
  EXPECT_EQ(keep->metrics.reconfigurations_saved_by_retention, 2);
}

}  // namespace
}  // namespace migsched
