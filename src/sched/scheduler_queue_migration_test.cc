// The scheduler's side of §5 (starvation guard, --max-wait), idle-instance
// retention, and §6 (which jobs may move, cool-down, switch-over, a job ending
// mid-copy), on small hand-made states. Expected values are derived in the
// comments (FragCost of A100 40GB configurations as in
// tests/data/cases/fragcost-a100-40gb.json).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/instance_list.h"
#include "sched/candidates.h"
#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::JobBuilder;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Places each job where its name says ("g0s5": GPU 0, start 5), if that is a
// candidate now; other names first-fit (lowest GPU, lowest start). Its
// fixtures turn migration on (Migrating: the §6 planner runs).
class Scripted : public PlacementPolicy {
 public:
  std::string_view name() const override { return "scripted"; }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    int gpu = 0, start = 0;
    const bool scripted = std::sscanf(req.spec->name.c_str(), "g%ds%d", &gpu, &start) == 2;
    for (int g = 0; g < cluster.size(); ++g) {
      if (scripted && g != gpu) continue;
      std::vector<Candidate> cands;
      AppendCandidates(cluster, g, req.ProfileOn(cluster.gpu(g).model()), true, &cands);
      for (const Candidate& c : cands) {
        if (!scripted || c.start == start) return c;
      }
    }
    return std::nullopt;
  }
};

// Every job here runs 1000 s and may be checkpointed, unless a test says otherwise.
const JobBuilder kJob = AJob().Limit(1000).Moves(Migratable::kCheckpoint);

std::unique_ptr<PlacementPolicy> NamedPolicy(const std::string& name, const SchedulerOptions& o) {
  auto p = MakePolicy(name, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(*p) : nullptr;
}

class QueueFixture {
 public:
  QueueFixture(int gpus, std::unique_ptr<PlacementPolicy> policy, SchedulerOptions o) {
    std::vector<const GpuModel*> models(gpus, &Model("A100-40GB"));
    cluster_ = std::make_unique<Cluster>(models, &tables_);
    scheduler_ = std::make_unique<Scheduler>(cluster_.get(), std::move(policy), o, &clock_);
    EXPECT_TRUE(scheduler_->Setup().ok());
  }
  QueueFixture(int gpus, const std::string& policy, SchedulerOptions o)
      : QueueFixture(gpus, NamedPolicy(policy, o), o) {}

  Scheduler& s() { return *scheduler_; }
  Cluster& cluster() { return *cluster_; }

  JobId Place(const Job& job) {
    const JobId id = next_++;
    auto d = scheduler_->TryPlace(id, job);
    EXPECT_TRUE(d.ok() && d->has_value()) << job.name;
    return id;
  }
  // Runs a pass; moves as "job J: G@S -> G@S".
  std::vector<std::string> Pass(MigrationTrigger t = MigrationTrigger::kCompletion) {
    auto starts = scheduler_->RunMigrationPass(t, [](JobId) { return true; });
    EXPECT_TRUE(starts.ok()) << starts.status().ToString();
    std::vector<std::string> out;
    if (!starts.ok()) return out;
    for (const MigrationStart& st : *starts) {
      out.push_back(fmt::format("job {}: {}@{} -> {}@{}", st.move.job, st.move.from.gpu,
                                st.move.from.start, st.move.to.gpu, st.move.to.start));
    }
    return out;
  }
  std::vector<std::string> Steps(const Plan& plan) const {
    std::vector<std::string> out;
    for (const Step& st : plan.steps) out.push_back(DescribeStep(st, *cluster_));
    return out;
  }

 private:
  ConfigTableCache tables_;
  ManualClock clock_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> scheduler_;
  JobId next_ = 0;
};

SchedulerOptions Opts(double threshold = 0.4) {
  SchedulerOptions o;
  // These cases exercise the §6 passes themselves, begun at a completion with nothing waiting:
  // the default runs such passes only while a job waits (§13, AMovePassWaitsForAWaitingJob).
  o.migration.passes = DefragPasses::kAlways;
  o.threshold = threshold;
  return o;
}

// `o` with the §6 migration planner on (SchedulerOptions::migration.enabled), as `full`'s
// defaults have it.
SchedulerOptions Migrating(SchedulerOptions o) {
  o.migration.enabled = true;
  return o;
}

// The reservation tests' start: job 0, a 1g.5gb on GPU 0 at start 0, expected to end at 100;
// the clock at 0.
void OneJobOnGpu0EndingAt100(QueueFixture& f) {
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g0s0")), 0);
  f.s().SetExpectedEnd(0, 100);
  f.s().SetNow(0);
}

// The reservation-order tests' two waiting jobs: job 100, a 7g.40gb without a limit, queued at
// the clock's time (0), and job 101, a 4g.20gb of limit 50, queued at 10; the clock at 10.
void BigAtZeroThenShortAtTen(QueueFixture& f) {
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("big"));
  f.s().SetNow(10);
  f.s().Enqueue(101, kJob.Profile("4g.20gb").Limit(50).Named("short"));
}

// The evacuation-hold tests' start (two A100s, the clock at 0): job 0, a 1g.5gb (checkpoint) on
// GPU 0 at start 0, and job 1, a 4g.20gb that never moves, on GPU 1 at 0; both expected to end
// at 1000.
void MovableOnGpu0FixedOnGpu1(QueueFixture& f) {
  f.s().SetNow(0);
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g0s0")), 0);
  ASSERT_EQ(f.Place(kJob.Profile("4g.20gb").Moves(Migratable::kNone).Named("g1s0")), 1);
  f.s().SetExpectedEnd(0, 1000);
  f.s().SetExpectedEnd(1, 1000);
}

// Reservation keeping's tests: overdue after 30 s, response-ratio order, keeping `keep`.
SchedulerOptions KeepingOpts(bool keep) {
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.queue_order = QueueOrder::kResponseRatio;
  o.reservation_keep = keep;
  return o;
}

// A scan's decisions as "job J on G@S" (the first instance of each).
std::vector<std::string> Placed(const std::vector<Decision>& decisions) {
  std::vector<std::string> out;
  for (const Decision& x : decisions) {
    out.push_back(fmt::format("job {} on {}@{}", x.job, x.instances[0].gpu, x.instances[0].start));
  }
  return out;
}

// A100 with A = 1g@0 and B = 1g@1 (`none`) and C = 1g@5 (checkpoint),
// threshold 0.25 so that the GPU stays busy with 2 slices (2/7 = 0.29).
// t = 0: C 5 -> 3 (FragCost 0.5 -> 0.3, see migration_planner_test.cc).
// t = 60: A ends: {B@1, C@3}, FragCost 0.3667 (cases file). C's options:
//   -> 0: {0,1}: 0.2; -> 2: {1,2}: 0.3667; -> 4 or 5: 0.5667; -> 6: 0.4667.
// C may move again only once 120 s have passed since its move began.
TEST(SchedulerMigrationTest, CoolDownIsRespected) {
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(Opts(0.25)));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0").Moves(Migratable::kNone));
  const JobId b = f.Place(kJob.Profile("1g.5gb").Named("g0s1").Moves(Migratable::kNone));
  const JobId c = f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
  f.s().SetNow(0);
  EXPECT_THAT(f.Pass(), ElementsAre("job 2: 0@5 -> 0@3"));
  EXPECT_EQ(f.s().MigrationOf(c)->to, (InstanceRef{0, 0, 3}));
  f.s().SetNow(5);
  auto end = f.s().FinishMigration(c);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  // The source is left idle (the policy keeps idle instances, §6).
  EXPECT_THAT(f.Steps(*end), ElementsAre("migrate-end 1g.5gb@3 on GPU 0 (job 2, from GPU 0 @5)"));
  EXPECT_THAT(*f.s().InstancesOf(c), ElementsAre(InstanceRef{0, 0, 3}));
  EXPECT_EQ(f.s().MigrationOf(c), nullptr);
  f.s().SetNow(60);
  ASSERT_TRUE(f.s().Release(0).ok());
  EXPECT_THAT(f.Pass(), IsEmpty());  // 60 s after the move began
  f.s().SetNow(119.9);
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), IsEmpty());
  f.s().SetNow(120);
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), ElementsAre("job 2: 0@3 -> 0@0"));
  (void)b;
}

// Regression (stress seed 18881: a run that never ended): a `restart` job moved at every pass
// restarts from its last checkpoint each time, and with passes closer together than its
// checkpoint interval it never got past one, so it never ended and the jobs waiting behind it
// never started. Now a job that a move restarted moves again only once it has checkpointed
// since (§6). The state of CoolDownIsRespected with C a `restart` job, checkpoints every 600 s:
// C moves 5 -> 3 at t = 0 and restarts at its switch-over at t = 5; at t = 120 its cool-down is
// over and 3 -> 0 would lower FragCost (CoolDownIsRespected), but its first checkpoint since the
// restart is at 5 + 600 = 605: no move before, the move at 605.
TEST(SchedulerMigrationTest, ARestartJobMovesAgainOnlyAfterACheckpointSinceItsRestart) {
  SchedulerOptions o = Opts(0.25);
  o.migration.checkpoint_interval_s = 600;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0").Moves(Migratable::kNone));
  f.Place(kJob.Profile("1g.5gb").Named("g0s1").Moves(Migratable::kNone));
  const JobId c = f.Place(kJob.Profile("1g.5gb").Named("g0s5").Moves(Migratable::kRestart));
  f.s().SetNow(0);
  ASSERT_THAT(f.Pass(), ElementsAre("job 2: 0@5 -> 0@3"));
  f.s().SetNow(5);
  ASSERT_TRUE(f.s().FinishMigration(c).ok());
  f.s().SetNow(60);
  ASSERT_TRUE(f.s().Release(0).ok());
  f.s().SetNow(120);
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), IsEmpty());
  f.s().SetNow(604.9);
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), IsEmpty());
  f.s().SetNow(605);
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), ElementsAre("job 2: 0@3 -> 0@0"));
}

// Where a move's source goes at the switch-over (§6): the state of CoolDownIsRespected, C moved
// 5 -> 3. A policy that keeps idle instances keeps the source 1g@5 idle, as it keeps a completed
// job's instance, and the next 1g job placed there reuses it (no create); one that destroys idle
// instances (the baselines) destroys it in the end plan.
class ScriptedNoRetention : public Scripted {
 public:
  bool KeepIdleInstances() const override { return false; }
};

TEST(SchedulerMigrationTest, AMovesSourceIsKeptIdleWhereThePolicyKeepsIdleInstances) {
  for (const bool keeps : {true, false}) {
    SCOPED_TRACE(keeps ? "keeps idle instances" : "destroys idle instances");
    std::unique_ptr<PlacementPolicy> policy = std::make_unique<Scripted>();
    if (!keeps) policy = std::make_unique<ScriptedNoRetention>();
    QueueFixture f(1, std::move(policy), Migrating(Opts(0.25)));
    f.Place(kJob.Profile("1g.5gb").Named("g0s0").Moves(Migratable::kNone));
    f.Place(kJob.Profile("1g.5gb").Named("g0s1").Moves(Migratable::kNone));
    const JobId c = f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
    f.s().SetNow(0);
    ASSERT_THAT(f.Pass(), ElementsAre("job 2: 0@5 -> 0@3"));
    f.s().SetNow(5);
    auto end = f.s().FinishMigration(c);
    ASSERT_TRUE(end.ok()) << end.status().ToString();
    if (keeps) {
      EXPECT_THAT(f.Steps(*end),
                  ElementsAre("migrate-end 1g.5gb@3 on GPU 0 (job 2, from GPU 0 @5)"));
      EXPECT_EQ(f.s().cluster().gpu(0).instances().size(), 4u);  // 1g@0, @1, @3 busy; @5 idle
    } else {
      EXPECT_THAT(f.Steps(*end), ElementsAre("migrate-end 1g.5gb@3 on GPU 0 (job 2, from GPU 0 @5)",
                                             "destroy 1g.5gb@5 on GPU 0"));
      EXPECT_EQ(f.s().cluster().gpu(0).instances().size(), 3u);
    }
  }
}

// Moves that pay for themselves (§13): the state of CoolDownIsRespected at t = 0, where a
// completion pass moves C 5 -> 3 (FragCost 0.5 -> 0.3). With the passes while some job waits
// (the default of SchedulerOptions) and nothing waiting, the pass begins nothing; once a job waits
// (a 7g.40gb, which cannot fit on the busy GPU), the same pass begins the same move.
TEST(SchedulerMigrationTest, AMovePassWaitsForAWaitingJob) {
  SchedulerOptions o = Opts(0.25);
  o.migration.passes = DefragPasses::kWhileWaiting;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0").Moves(Migratable::kNone));
  f.Place(kJob.Profile("1g.5gb").Named("g0s1").Moves(Migratable::kNone));
  f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
  f.s().SetNow(0);
  EXPECT_THAT(f.Pass(), IsEmpty());
  EXPECT_THAT(f.Pass(MigrationTrigger::kTick), IsEmpty());
  f.s().Enqueue(3, kJob.Profile("7g.40gb").Named("big"));
  EXPECT_THAT(f.Pass(), ElementsAre("job 2: 0@5 -> 0@3"));
}

// The same state with the passes off (`full`'s default): neither a completion nor a periodic
// pass begins the move, with or without a waiting job; with them always, both begin it with
// nothing waiting.
TEST(SchedulerMigrationTest, NoCompletionOrPeriodicPassWithThePassesOff) {
  for (DefragPasses passes : {DefragPasses::kOff, DefragPasses::kAlways}) {
    SCOPED_TRACE(std::string(DefragPassesName(passes)));
    SchedulerOptions o = Opts(0.25);
    o.migration.passes = passes;
    QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
    f.Place(kJob.Profile("1g.5gb").Named("g0s0").Moves(Migratable::kNone));
    f.Place(kJob.Profile("1g.5gb").Named("g0s1").Moves(Migratable::kNone));
    f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
    f.s().SetNow(0);
    if (passes == DefragPasses::kOff) {
      EXPECT_THAT(f.Pass(), IsEmpty());
      f.s().Enqueue(3, kJob.Profile("7g.40gb").Named("big"));
      EXPECT_THAT(f.Pass(), IsEmpty());
      EXPECT_THAT(f.Pass(MigrationTrigger::kTick), IsEmpty());
    } else {
      EXPECT_THAT(f.Pass(MigrationTrigger::kTick), ElementsAre("job 2: 0@5 -> 0@3"));
    }
  }
}

struct MoveRightsCase {
  std::string name;
  Migratable migratable;
  bool latency_sensitive;
  std::vector<std::string> expected;
};

class SchedulerMoveRightsTest : public ::testing::TestWithParam<MoveRightsCase> {};

// GPU 0 = {1g@0, 1g@1, 1g@5}, GPU 1 empty, intra moves off (budget 0): the
// only candidate pull is C (1g@5): FragCost 0.5 -> 0.2 on GPU 0, 1g@6 on the
// empty GPU 1 (ΔFragCost 0) — see migration_planner_test.cc.
TEST_P(SchedulerMoveRightsTest, NoneAndLatencySensitiveJobsNeverLeaveTheirGpu) {
  const MoveRightsCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.migration.max_moves_per_pass = 0;
  QueueFixture f(2, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.Place(kJob.Profile("1g.5gb").Named("g0s1"));
  f.Place(kJob.Profile("1g.5gb")
              .Named("g0s5")
              .Moves(c.migratable)
              .LatencySensitive(c.latency_sensitive));
  EXPECT_EQ(f.Pass(), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SchedulerMoveRightsTest,
    ::testing::Values(
        MoveRightsCase{"Checkpoint", Migratable::kCheckpoint, false, {"job 2: 0@5 -> 1@6"}},
        MoveRightsCase{"Restart", Migratable::kRestart, false, {"job 2: 0@5 -> 1@6"}},
        MoveRightsCase{"None", Migratable::kNone, false, {}},
        MoveRightsCase{"LatencySensitive", Migratable::kCheckpoint, true, {}}),
    [](const auto& info) { return info.param.name; });

TEST(SchedulerMigrationTest, DriverMayHoldAJobBackAndNonMigratingPoliciesNeverMove) {
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(Opts()));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.Place(kJob.Profile("1g.5gb").Named("g0s1"));
  f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
  auto held = f.s().RunMigrationPass(MigrationTrigger::kTick, [](JobId) { return false; });
  ASSERT_TRUE(held.ok());
  EXPECT_THAT(*held, IsEmpty());
  // lb+frag does not migrate: the pass does nothing whatever the state.
  QueueFixture g(1, "lb+frag", Opts());
  EXPECT_THAT(g.Pass(), IsEmpty());
}

TEST(SchedulerMigrationTest, AJobEndingMidCopyAbandonsItsMove) {
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(Opts()));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.Place(kJob.Profile("1g.5gb").Named("g0s1"));
  const JobId c = f.Place(kJob.Profile("1g.5gb").Named("g0s5"));
  ASSERT_THAT(f.Pass(), ElementsAre("job 2: 0@5 -> 0@3"));
  auto plan = f.s().Release(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Both ends are released (the policy keeps idle instances).
  EXPECT_THAT(f.Steps(*plan), ElementsAre("release 1g.5gb@5 on GPU 0 (job 2)",
                                          "release 1g.5gb@3 on GPU 0 (job 2)"));
  EXPECT_EQ(f.s().MigrationOf(c), nullptr);
  EXPECT_EQ(f.s().FinishMigration(c).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.cluster().gpu(0).busy_compute_slices(), 2);
}

// Two A100s, each with a 1g.5gb@0 (jobs 0 and 1, expected to end at `end0`
// and 100). A 7g (job 100, the head: it cannot fit) is queued at t = 0, a
// 1g (job 101) after it; first-fit would put the 1g on GPU 0 at start 1.
// Once the 7g has waited longer than max_skip, the GPU whose 7g placement
// frees soonest is reserved (GPU 0 when end0 = 50 < 100, GPU 1 when end0 =
// 200) and the 1g goes to the other GPU (lowest free start: 1).
struct GuardCase {
  std::string name;
  double max_skip;
  double now;
  double end0;
  std::string expected;  // where the 1g goes
  int reserved_gpu;      // -1: none
};

class StarvationGuardTest : public ::testing::TestWithParam<GuardCase> {};

TEST_P(StarvationGuardTest, ReservesTheGpuThatFreesSoonest) {
  const GuardCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.max_skip_seconds = c.max_skip;
  QueueFixture f(2, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.Place(kJob.Profile("1g.5gb").Named("g1s0"));
  f.s().SetExpectedEnd(0, c.end0);
  f.s().SetExpectedEnd(1, 100);
  f.s().SetNow(0);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("big"));
  f.s().Enqueue(101, kJob.Profile("1g.5gb").Named("small"));
  f.s().SetNow(c.now);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<std::string> placed = Placed(*d);
  EXPECT_THAT(placed, ElementsAre(c.expected));
  if (c.reserved_gpu < 0) {
    EXPECT_THAT(f.s().reservations(), IsEmpty());
  } else {
    ASSERT_EQ(f.s().reservations().size(), 1u);
    const Reservation& r = f.s().reservations()[0];
    EXPECT_EQ(r.job, 100);
    EXPECT_EQ(r.gpu, c.reserved_gpu);
    EXPECT_EQ(r.start, 0);
    EXPECT_EQ(r.free_at_s, std::min(c.end0, 100.0));
  }
  // Reservations only hold during the scan: the cluster flags are clear again.
  EXPECT_FALSE(f.cluster().reserved(0));
  EXPECT_FALSE(f.cluster().reserved(1));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StarvationGuardTest,
    ::testing::Values(GuardCase{"Off", -1, 31, 50, "job 101 on 0@1", -1},
                      // Waited exactly 30 s: not longer than max_skip.
                      GuardCase{"NotYetOverdue", 30, 30, 50, "job 101 on 0@1", -1},
                      GuardCase{"OverdueReservesGpu0", 30, 31, 50, "job 101 on 1@1", 0},
                      GuardCase{"OverdueReservesGpu1", 30, 31, 200, "job 101 on 0@1", 1}),
    [](const auto& info) { return info.param.name; });

// Regression (guard_backfills_jobs_that_end_in_time, §5 "only jobs that do not
// delay it may start"): one A100 with a 1g.5gb@0 (job 0) expected to end at
// t = 100; a 7g (job 100) queued at t = 0 is overdue at t = 31 with max_skip
// 30, so GPU 0 is reserved for it with free_at_s = 100. A 1g (job 101) with
// duration d ends at 31 + d: with d = 50 (81 <= 100) it cannot delay the 7g
// and starts on the reserved GPU at the lowest free start, 1; with d = 80
// (111 > 100) or an unknown duration (0, the daemon) it waits.
//
// §13 reservation slack F (the knob): with the 7g's duration D, the 1g may
// also start when 31 + d <= 100 + F x D:
// - F = 0.5, D = 100, d = 80: 111 <= 150, starts at 1g@1; d = 130: 161 > 150,
//   waits;
// - F = 0.5, the 7g's duration unknown (0): no slack, d = 80 waits;
// - F = 4, D = 100, d = 400: 431 <= 500, starts.
struct BackfillCase {
  std::string name;
  double duration;
  std::vector<std::string> expected;
  double slack = 0;                 // --reservation-slack
  double reserved_duration = 1000;  // the 7g's
};

class GuardBackfillTest : public ::testing::TestWithParam<BackfillCase> {};

TEST_P(GuardBackfillTest, OnlyJobsThatEndBeforeTheReservationUseTheReservedGpu) {
  const BackfillCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.reservation_slack = c.slack;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.s().SetExpectedEnd(0, 100);
  f.s().SetNow(0);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("big").Limit(c.reserved_duration));
  Job small = kJob.Profile("1g.5gb").Named("small");
  small.time_limit_s = c.duration;
  f.s().Enqueue(101, small);
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<std::string> placed = Placed(*d);
  EXPECT_EQ(placed, c.expected);
  ASSERT_EQ(f.s().reservations().size(), 1u);
  EXPECT_EQ(f.s().reservations()[0].gpu, 0);
  EXPECT_EQ(f.s().reservations()[0].free_at_s, 100);
  EXPECT_EQ(f.s().reservations()[0].slack_s, c.slack * c.reserved_duration);
  EXPECT_FALSE(f.cluster().reserved(0));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GuardBackfillTest,
    ::testing::Values(BackfillCase{"EndsBeforeTheReservation", 50, {"job 101 on 0@1"}},
                      BackfillCase{"EndsExactlyAtTheReservation", 69, {"job 101 on 0@1"}},
                      BackfillCase{"WouldDelayTheHead", 80, {}},
                      BackfillCase{"UnknownDuration", 0, {}},
                      BackfillCase{"WithinTheSlack", 80, {"job 101 on 0@1"}, 0.5, 100},
                      BackfillCase{"BeyondTheSlack", 130, {}, 0.5, 100},
                      BackfillCase{"NoSlackWithoutTheReservedDuration", 80, {}, 0.5, 0},
                      BackfillCase{"LargeSlack", 400, {"job 101 on 0@1"}, 4, 100}),
    [](const auto& info) { return info.param.name; });

// §13 reservation-unknown-ends, worked by hand: one A100 with a 1g.5gb@0
// (job 0); a 7g (job 100) queued at t = 0 is overdue at t = 31 (max_skip
// 30); a 1g (job 101) of unknown duration, as the daemon's jobs without a
// time limit. The 7g's placement, 7g@0, frees when job 0 ends:
// - job 0's end unknown, strict: GPU 0 is reserved anyway (free_at_s inf);
//   the 1g's end is unknown, so (a) does not admit it, and a 7g leaves no
//   room beside it (b): it waits;
// - job 0's end unknown, skip: no reservation; the 1g starts at 1g@1;
// - job 0's end known (100), skip: the reservation is made (free_at_s 100)
//   and the 1g waits as under strict.
struct UnknownEndsCase {
  std::string name;
  bool needs_ends;
  double end0;  // < 0: unknown
  std::vector<std::string> expected;
  double free_at_s;  // of the reservation; < 0: none
};

class UnknownEndsTest : public ::testing::TestWithParam<UnknownEndsCase> {};

TEST_P(UnknownEndsTest, AReservationOfUnknownStartIsStrictOrSkipped) {
  const UnknownEndsCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.reservation_needs_ends = c.needs_ends;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  if (c.end0 >= 0) f.s().SetExpectedEnd(0, c.end0);
  f.s().SetNow(0);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("big"));
  Job small = kJob.Profile("1g.5gb").Named("small");
  small.time_limit_s = 0;  // unknown
  f.s().Enqueue(101, small);
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(Placed(*d), c.expected);
  if (c.free_at_s < 0) {
    EXPECT_THAT(f.s().reservations(), IsEmpty());
  } else {
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, 100);
    EXPECT_EQ(f.s().reservations()[0].free_at_s, c.free_at_s);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, UnknownEndsTest,
    ::testing::Values(
        UnknownEndsCase{
            "StrictReservesAnyway", false, -1, {}, std::numeric_limits<double>::infinity()},
        UnknownEndsCase{"SkipMakesNone", true, -1, {"job 101 on 0@1"}, -1},
        UnknownEndsCase{"SkipStillReservesAKnownStart", true, 100, {}, 100}),
    [](const auto& info) { return info.param.name; });

// Regression (conservative_reserves_for_every_request: the second 7g, whose
// request had failed for the first one in the same scan, got no reservation
// and so no protection). §13 conservative reservation, worked by hand: two A100s; GPU 0 runs job 0
// (1g.5gb@0) to t = 100, GPU 1 runs job 1 (1g.5gb@0) to t = 200. Two 7g.40gb
// (jobs 100 and 101, queued at 0) do not fit and are overdue at t = 31
// (max_skip 30). The scan tries 100 first: GPU 0 frees soonest, so it
// reserves 7g@0 there, expected start 100. Then 101, with GPU 0 closed to it:
// - conservative (depth 8): it reserves 7g@0 on GPU 1, expected start 200;
// - easy: only the first overdue job reserves; GPU 1 stays open.
// Then a 1g.5gb (job 102) of duration d, ending at 31 + d. A 7g leaves no
// room beside it (§13 (b) never applies), so only (a) can admit it:
// - d = 150 ends at 181: after 100 (not on GPU 0), before 200: under
//   conservative it cannot delay job 101 and starts on GPU 1 at the lowest
//   free start, 1g@1;
// - d = 250 ends at 281 > 200: it would delay job 101, so under conservative
//   it waits; under easy GPU 1 is not reserved and it starts there, 1g@1.
struct ConservativeCase {
  std::string name;
  ReservationMode mode;
  double duration;
  std::vector<std::string> expected;
};

class ConservativeBackfillTest : public ::testing::TestWithParam<ConservativeCase> {};

TEST_P(ConservativeBackfillTest, EachOverdueJobReservesAndABackfillMayDelayNone) {
  const ConservativeCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.reservation = c.mode;
  QueueFixture f(2, std::make_unique<Scripted>(), Migrating(o));
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g0s0")), 0);
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g1s0")), 1);
  f.s().SetExpectedEnd(0, 100);
  f.s().SetExpectedEnd(1, 200);
  f.s().SetNow(0);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("big"));
  f.s().Enqueue(101, kJob.Profile("7g.40gb").Named("big2"));
  Job small = kJob.Profile("1g.5gb").Named("small");
  small.time_limit_s = c.duration;
  f.s().Enqueue(102, small);
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<std::string> placed = Placed(*d);
  EXPECT_EQ(placed, c.expected);
  std::vector<std::string> reserved;
  for (const Reservation& r : f.s().reservations()) {
    reserved.push_back(fmt::format("job {}: {}@{} from {}", r.job, r.gpu, r.start, r.start_s));
  }
  if (c.mode == ReservationMode::kConservative) {
    EXPECT_THAT(reserved, ElementsAre("job 100: 0@0 from 100", "job 101: 1@0 from 200"));
  } else {
    EXPECT_THAT(reserved, ElementsAre("job 100: 0@0 from 100"));
  }
  EXPECT_FALSE(f.cluster().reserved(0));
  EXPECT_FALSE(f.cluster().reserved(1));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConservativeBackfillTest,
    ::testing::Values(
        ConservativeCase{
            "EndsBeforeTheSecond", ReservationMode::kConservative, 150, {"job 102 on 1@1"}},
        ConservativeCase{"WouldDelayTheSecond", ReservationMode::kConservative, 250, {}},
        ConservativeCase{
            "EasyDoesNotProtectTheSecond", ReservationMode::kEasy, 250, {"job 102 on 1@1"}}),
    [](const auto& info) { return info.param.name; });

// Regression (guard_backfills_against_the_gangs_start, §13 (a)): three A100s;
// GPU 0 runs job 0 (1g.5gb@0) to t = 100, GPU 1 job 1 (1g.5gb@0) to t = 1000,
// GPU 2 is empty. A 2x7g.40gb gang (job 100, queued at 0) does not fit and is
// overdue at t = 31 (max_skip 30): it reserves GPU 2 (free now) and GPU 0
// (free at 100) and can start only when both are free, at 100. A 7g job
// (101) of duration d ends at 31 + d: d = 50 (81 <= 100) cannot delay the
// gang and starts on GPU 2 (the §5 guard before §13 compared with the
// earliest free time, 31, and kept it waiting); d = 80 (111 > 100) waits.
struct GangBackfillCase {
  std::string name;
  std::string policy;
  double duration;
  std::vector<std::string> expected;
};

// gtest prints a case by its name (not its bytes) in ctest's list.
void PrintTo(const GangBackfillCase& c, std::ostream* os) { *os << c.name; }

class GangBackfillTest : public ::testing::TestWithParam<GangBackfillCase> {};

TEST_P(GangBackfillTest, JobsEndingBeforeTheGangCanStartBackfill) {
  const GangBackfillCase& c = GetParam();
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.joint_placement = c.policy == "full";
  o.migration.enabled = c.policy == "full";  // full's default (the case's options are raw)
  QueueFixture f = c.policy == "scripted"
                       ? QueueFixture(3, std::make_unique<Scripted>(), Migrating(o))
                       : QueueFixture(3, c.policy, o);
  Job j0 = kJob.Profile("1g.5gb").Named("g0s0"), j1 = kJob.Profile("1g.5gb").Named("g1s0");
  ASSERT_EQ(f.Place(j0), 0);
  ASSERT_EQ(f.Place(j1), 1);
  // Wherever the policy put them: job 0 on GPU 0, job 1 on GPU 1.
  ASSERT_EQ(f.cluster().gpu(0).busy_compute_slices(), 1);
  ASSERT_EQ(f.cluster().gpu(1).busy_compute_slices(), 1);
  f.s().SetExpectedEnd(0, 100);
  f.s().SetExpectedEnd(1, 1000);
  f.s().SetNow(0);
  Job gang = kJob.Profile("7g.40gb").Named("gang");
  gang.count = 2;
  f.s().Enqueue(100, gang);
  Job seven = kJob.Profile("7g.40gb").Named("seven");
  seven.time_limit_s = c.duration;
  f.s().Enqueue(101, seven);
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<std::string> placed = Placed(*d);
  EXPECT_EQ(placed, c.expected);
  ASSERT_EQ(f.s().reservations().size(), 2u);
  EXPECT_EQ(f.s().reservations()[0].gpu, 2);
  EXPECT_EQ(f.s().reservations()[1].gpu, 0);
  EXPECT_EQ(f.s().reservations()[0].start_s, 100);
  EXPECT_EQ(f.s().reservations()[1].start_s, 100);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GangBackfillTest,
    ::testing::Values(GangBackfillCase{"ScriptedShort", "scripted", 50, {"job 101 on 2@0"}},
                      GangBackfillCase{"ScriptedLong", "scripted", 80, {}},
                      GangBackfillCase{"FullShort", "full", 50, {"job 101 on 2@0"}},
                      GangBackfillCase{"FullLong", "full", 80, {}}),
    [](const auto& info) { return info.param.name; });

// Regression (backfill_is_not_refused_by_a_failure_seen_while_reserved): a
// request that failed in an earlier scan is not retried while no GPU changed
// (Scheduler::StillNoRoom); opening a reserved GPU for the backfill is no such
// change, so a failure seen while it was closed must not stand for it. Two
// A100s (`full`, which spreads: job 0 on GPU 0 to t = 40, job 1 on GPU 1 to
// t = 1000). t = 10: a 2x7g.40gb gang (100) and a 7g.40gb of 50 s (101) fail;
// nothing is overdue (max_skip 30), so nothing is reserved. t = 40: job 0 has
// ended; the gang is overdue and reserves GPU 0 (free now) and GPU 1 (free at
// 1000), so it starts at 1000; job 101 would end at 90 <= 1000 and starts on
// GPU 0. On the Alibaba trace this refusal kept every reserved GPU empty.
TEST(SchedulerQueueTest, BackfillIsNotRefusedByAFailureSeenWhileReserved) {
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  o.joint_placement = true;
  o.migration.enabled = true;
  QueueFixture f(2, "full", o);
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("j0")), 0);
  ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("j1")), 1);
  ASSERT_EQ(f.cluster().gpu(0).busy_compute_slices(), 1);
  ASSERT_EQ(f.cluster().gpu(1).busy_compute_slices(), 1);
  f.s().SetExpectedEnd(0, 40);
  f.s().SetExpectedEnd(1, 1000);
  f.s().SetNow(0);
  Job gang = kJob.Profile("7g.40gb").Named("gang");
  gang.count = 2;
  f.s().Enqueue(100, gang);
  Job seven = kJob.Profile("7g.40gb").Named("seven");
  seven.time_limit_s = 50;
  f.s().Enqueue(101, seven);
  f.s().SetNow(10);
  auto first = f.s().ScheduleQueue();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(*first, IsEmpty());
  EXPECT_THAT(f.s().reservations(), IsEmpty());
  f.s().SetNow(40);
  ASSERT_TRUE(f.s().Release(0).ok());
  auto second = f.s().ScheduleQueue();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].job, 101);
  EXPECT_EQ((*second)[0].instances[0].gpu, 0);
  ASSERT_EQ(f.s().reservations().size(), 2u);
  EXPECT_EQ(f.s().reservations()[0].start_s, 1000);
}

// §13 (b), a job beside the reservation: one A100 with job 0 (1g.5gb@0) to
// t = 100; a 4g.20gb (job 100, placement 0 only: units 0-3) is overdue at t
// = 31 and reserves 4g@0, expected to start at 100. A 1g.5gb of 1000 s (job
// 101) would delay it on its own merits (31 + 1000 > 100), but at 1g@4, 5 or
// 6 it leaves 4g@0 valid once job 0 has ended (1g@1..3 would not): it starts
// there. A 3g.20gb of 1000 s (job 102) then has 3g@0, inside the reserved
// units, and 3g@4, which overlaps job 101: it waits.
TEST(SchedulerQueueTest, AJobBesideTheReservationThatKeepsItValidStarts) {
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  f.Place(kJob.Profile("1g.5gb").Named("g0s0"));
  f.s().SetExpectedEnd(0, 100);
  f.s().SetNow(0);
  f.s().Enqueue(100, kJob.Profile("4g.20gb").Named("big"));
  f.s().Enqueue(101, kJob.Profile("1g.5gb").Named("small"));
  f.s().Enqueue(102, kJob.Profile("3g.20gb").Named("mid"));
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].job, 101);
  EXPECT_EQ((*d)[0].instances[0].gpu, 0);
  EXPECT_GE((*d)[0].instances[0].start, 4);
  ASSERT_EQ(f.s().reservations().size(), 1u);
  EXPECT_EQ(f.s().reservations()[0].job, 100);
  EXPECT_EQ(f.s().reservations()[0].start_s, 100);
}

// Regression (gang_never_beside_a_reservation: §13 (b) was for single jobs only, so a gang
// whose instances did not all fit on the open GPUs waited behind a reservation even where the
// reserved job would never need the room; on a serving workload its 2-instance services waited
// 2.6x as long at p95 as under the best baseline). Worked by hand on two A100s:
// - GPU 0 runs job 0 (1g.5gb@0) to t = 100; GPU 1 runs a 3g.20gb@0 (units 0-3) and a
//   2g.10gb@4 (units 4-5) to t = 500: 5 of 7 compute slices, one 1g left there (1g@6).
// - A 4g.20gb (job 100, placement 0 only) is overdue at t = 31 and reserves 4g@0 on GPU 0, the
//   GPU that frees soonest (100; GPU 1's units 0-3 free at 500).
// - A gang of two 1g.5gb of 1000 s (job 101): its own try gets 1g@6 on GPU 1 and nothing for
//   the second instance (GPU 0 is closed); it would delay the 4g on GPU 0 (31 + 1000 > 100),
//   so (a) does not admit it. Beside: the first instance where its own try put it (GPU 1,
//   1g@6), the second on GPU 0 at 1g@4, 5 or 6, which leave 4g@0 (units 0-3) valid.
// - With one more 1g.5gb busy on GPU 1 (1g@6), no instance fits on the open GPUs. GPU 0 has
//   room beside the reservation for both: units 4-6 are outside 4g@0, and the 4g leaves 3
//   compute slices. The gang starts with both instances on GPU 0, at starts >= 4.
TEST(SchedulerQueueTest, GangBesideAReservationStartsWhereItKeepsTheReservationValid) {
  for (const bool third : {false, true}) {
    SCOPED_TRACE(third ? "GPU 1 full" : "one 1g left on GPU 1");
    SchedulerOptions o = Opts();
    o.max_skip_seconds = 30;
    QueueFixture f(2, std::make_unique<Scripted>(), Migrating(o));
    ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g0s0")), 0);
    ASSERT_EQ(f.Place(kJob.Profile("3g.20gb").Named("g1s0")), 1);
    ASSERT_EQ(f.Place(kJob.Profile("2g.10gb").Named("g1s4")), 2);
    f.s().SetExpectedEnd(0, 100);
    f.s().SetExpectedEnd(1, 500);
    f.s().SetExpectedEnd(2, 500);
    if (third) {
      ASSERT_EQ(f.Place(kJob.Profile("1g.5gb").Named("g1s6")), 3);
      f.s().SetExpectedEnd(3, 500);
    }
    f.s().SetNow(0);
    f.s().Enqueue(100, kJob.Profile("4g.20gb").Named("big"));
    f.s().Enqueue(101, kJob.Profile("1g.5gb").Named("pair").Gang(2));
    f.s().SetNow(31);
    auto d = f.s().ScheduleQueue();
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ((*d)[0].job, 101);
    ASSERT_EQ((*d)[0].instances.size(), 2u);
    const InstanceRef& a = (*d)[0].instances[0];
    const InstanceRef& b = (*d)[0].instances[1];
    if (third) {
      EXPECT_EQ(a.gpu, 0);
      EXPECT_GE(a.start, 4);
    } else {
      EXPECT_EQ(a.gpu, 1);
      EXPECT_EQ(a.start, 6);
    }
    EXPECT_EQ(b.gpu, 0);
    EXPECT_GE(b.start, 4);
    EXPECT_FALSE(a.gpu == b.gpu && a.start == b.start);
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, 100);
    EXPECT_EQ(f.s().reservations()[0].gpu, 0);
    EXPECT_EQ(f.s().reservations()[0].start_s, 100);
  }
}

// §13 reservation keeping, worked by hand (response-ratio order, max_skip 30, slack 0): one
// A100 with job 0 (1g.5gb@0) expected to end at 100. A 7g.40gb of limit 1000 (job 100) is
// queued at 0, a 4g.20gb of limit 50 (job 101, placement 4g@0 only) at 10; neither fits while
// job 0 runs (both need unit 0).
// - Scan at t = 31: ratios 101: (21 + 50) / 50 = 1.42, 100: (31 + 1000) / 1000 = 1.03. Job
//   101 is first but not overdue (21 s); job 100 is, and reserves 7g@0 from 100.
// - Scan at t = 45: 101 has waited 35 s (overdue) and its ratio 1.70 still leads (100: 1.045).
//   Without keeping, 101 is the first overdue job that does not fit and takes the reservation
//   (4g@0 from 100); with keeping, 100 is given its reservation again before any turn, and 101,
//   whose only placement lies inside it, gets none (EASY: one job reserves).
TEST(SchedulerQueueTest, ReservationKeepingLeavesTheReservationWithItsJob) {
  for (const bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "keep on" : "keep off");
    const SchedulerOptions o = KeepingOpts(keep);
    QueueFixture f(1, std::make_unique<Scripted>(), o);
    ASSERT_NO_FATAL_FAILURE(OneJobOnGpu0EndingAt100(f));
    BigAtZeroThenShortAtTen(f);
    f.s().SetNow(31);
    auto first = f.s().ScheduleQueue();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_THAT(*first, IsEmpty());
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, 100);
    f.s().SetNow(45);
    auto second = f.s().ScheduleQueue();
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_THAT(*second, IsEmpty());
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, keep ? 100 : 101);
    EXPECT_EQ(f.s().reservations()[0].start_s, 100);
    // Once job 100 no longer waits (cancelled here), the next scan's first overdue job reserves.
    ASSERT_TRUE(f.s().RemoveFromQueue(100));
    auto third = f.s().ScheduleQueue();
    ASSERT_TRUE(third.ok()) << third.status().ToString();
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, 101);
  }
}

// §13 the reservation for the job that has waited longest (reservation_oldest), worked by hand
// (response-ratio order, max_skip 30, slack 0, keeping off).
// Part 1, one A100 with job 0 (1g.5gb@0) expected to end at 100: a 7g.40gb of limit 1000 (job
// 100) queued at 0 and a 4g.20gb of limit 50 (job 101, placement 4g@0 only) queued at 10; neither
// fits while job 0 runs. The first scan is at t = 45: both are overdue (45 and 35 s > 30), ratios
// 101: (35 + 50) / 50 = 1.70, 100: (45 + 1000) / 1000 = 1.045, so 101 comes first. Off: 101 is the
// first overdue job that does not fit and reserves 4g@0 from 100. On: 100, queued first,
// reserves 7g@0 from 100 before any turn; 101's only placement lies inside it (EASY: one job).
TEST(SchedulerQueueTest, TheJobThatHasWaitedLongestGetsTheReservation) {
  for (const bool oldest : {false, true}) {
    SCOPED_TRACE(oldest ? "oldest on" : "oldest off");
    SchedulerOptions o = KeepingOpts(false);
    o.reservation_oldest = oldest;
    QueueFixture f(1, std::make_unique<Scripted>(), o);
    ASSERT_NO_FATAL_FAILURE(OneJobOnGpu0EndingAt100(f));
    BigAtZeroThenShortAtTen(f);
    f.s().SetNow(45);
    auto d = f.s().ScheduleQueue();
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_THAT(*d, IsEmpty());
    ASSERT_EQ(f.s().reservations().size(), 1u);
    EXPECT_EQ(f.s().reservations()[0].job, oldest ? 100 : 101);
    EXPECT_EQ(f.s().reservations()[0].start_s, 100);
  }
}

// Part 2, where the oldest job's reservation cannot be made (horizon 600 s): two A100s, GPU 0
// with job 0 (1g.5gb@0, ends at 50) and job 1 (1g.5gb@6, ends at 1000), GPU 1 with jobs 2 and 3
// (1g.5gb@0 and @6, both end at 1000). The same two jobs wait. At t = 45 the 7g job's soonest
// GPU frees at 1000 (both hold a 1g@6 until then), 955 s away, beyond the horizon: no
// reservation for it. The 4g job's 4g@0 on GPU 0 frees at 50: it reserves at its turn, with the
// rule on as off.
// The reservations after the scan at t = 45 of this case, with `ageing` (§13; 0 = off).
void ReserveBeyondTheHorizon(bool oldest, double ageing, std::vector<Reservation>* out) {
  SchedulerOptions o = KeepingOpts(false);
  o.reservation_oldest = oldest;
  o.reservation_horizon_s = 600;
  o.reservation_ageing = ageing;
  QueueFixture f(2, std::make_unique<Scripted>(), o);
  f.s().SetNow(0);
  const double ends[] = {50, 1000, 1000, 1000};
  const char* where[] = {"g0s0", "g0s6", "g1s0", "g1s6"};
  for (int i = 0; i < 4; ++i) {
    const JobId id = f.Place(kJob.Profile("1g.5gb").Named(where[i]));
    ASSERT_EQ(id, i);
    f.s().SetExpectedEnd(id, ends[i]);
  }
  BigAtZeroThenShortAtTen(f);
  f.s().SetNow(45);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_THAT(*d, IsEmpty());
  *out = f.s().reservations();
}

TEST(SchedulerQueueTest, TheOldestJobBeyondTheHorizonLeavesTheReservationToTheFirst) {
  for (const bool oldest : {false, true}) {
    SCOPED_TRACE(oldest ? "oldest on" : "oldest off");
    std::vector<Reservation> r;
    ASSERT_NO_FATAL_FAILURE(ReserveBeyondTheHorizon(oldest, 0, &r));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].job, 101);
    EXPECT_EQ(r[0].gpu, 0);
    EXPECT_EQ(r[0].start_s, 50);
  }
}

// Reservation ageing (§13), on the case above with the oldest job's rule on: at t = 45 the 7g job
// (queued at 0) has waited 45 s and its soonest room (GPU 0, tied with GPU 1 at 1000 and at two
// instances waited for, the lower GPU) is 955 s away. With ageing a the horizon is max(600,
// a × 45): a = 20 gives 900 < 955, the 4g job reserves as without ageing; a = 25 gives 1125 >=
// 955, and the 7g job, the oldest overdue one, reserves GPU 0 from 1000.
TEST(SchedulerQueueTest, ReservationAgeingLetsTheOldestJobReserveBeyondTheHorizon) {
  for (const double ageing : {0.0, 20.0, 25.0}) {
    SCOPED_TRACE(ageing);
    std::vector<Reservation> r;
    ASSERT_NO_FATAL_FAILURE(ReserveBeyondTheHorizon(/*oldest=*/true, ageing, &r));
    ASSERT_EQ(r.size(), 1u);
    const bool aged = ageing == 25.0;
    EXPECT_EQ(r[0].job, aged ? 100 : 101);
    EXPECT_EQ(r[0].gpu, 0);
    EXPECT_EQ(r[0].start_s, aged ? 1000 : 50);
  }
}

// Regression (oldest_reserved_on_an_evacuation_hold: a stall found by the stress harness, seed
// 909903): the reservation made before any turn (the oldest overdue job's, or a kept one) saw
// the GPUs held for other jobs' evacuations as open, took one, and the job holding it could then
// not start there, nor the reserving job, which found it held. By hand (response-ratio order,
// max_skip 30, evacuation of the head, oldest first): two A100s, GPU 0 with job 0 (1g.5gb@0,
// checkpoint, expected end 1000), GPU 1 with job 1 (4g.20gb@0, may not move, expected end 1000).
// Job 100 (7g.40gb, limit 1000) is queued at 1.5, job 101 (7g.40gb, limit 50) at 10.
// - t = 31: ratios 101: (21 + 50) / 50 = 1.42, 100: (29.5 + 1000) / 1000 = 1.03; nobody is
//   overdue (29.5 s is not past 30); 101 is the head, does not fit and evacuates GPU 0 (job 0 to
//   GPU 1, units 4-6), which it then holds.
// - t = 32, the move still copying (2.475 s + 0.5 s switch-over): 100 is overdue (30.5 s), the
//   oldest such job, and reserves before any turn; GPU 0 is held for 101, so 100's reservation
//   is GPU 1 (free at 1000), not GPU 0 (whose blocker, a move's source, counts as free now).
TEST(SchedulerQueueTest, TheReservationMadeBeforeTheTurnsSkipsEvacuationHolds) {
  SchedulerOptions o = Migrating(KeepingOpts(false));
  o.reservation_oldest = true;
  o.evacuation = EvacuationScope::kHead;
  QueueFixture f(2, std::make_unique<Scripted>(), o);
  ASSERT_NO_FATAL_FAILURE(MovableOnGpu0FixedOnGpu1(f));
  f.s().SetNow(1.5);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("old"));
  f.s().SetNow(10);
  f.s().Enqueue(101, kJob.Profile("7g.40gb").Limit(50).Named("short"));
  f.s().SetNow(31);
  auto first = f.s().ScheduleQueue();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(*first, IsEmpty());
  EXPECT_TRUE(f.s().reservations().empty());
  ASSERT_EQ(f.s().evacuations_begun(), 1);
  ASSERT_EQ(f.s().evacuation_holds().size(), 1u);
  EXPECT_EQ(f.s().evacuation_holds()[0].job, 101);
  EXPECT_EQ(f.s().evacuation_holds()[0].gpu, 0);
  f.s().SetNow(32);
  auto second = f.s().ScheduleQueue();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_THAT(*second, IsEmpty());
  ASSERT_EQ(f.s().reservations().size(), 1u);
  EXPECT_EQ(f.s().reservations()[0].job, 100);
  EXPECT_EQ(f.s().reservations()[0].gpu, 1);
  EXPECT_EQ(f.s().reservations()[0].start_s, 1000);
}

// Regression (kept_holder_skipped_by_an_identical_request: the scan skips a request identical
// to one that failed earlier in it, but the holder of a kept reservation has that room open to
// it alone, so it was skipped scan after scan and, with nothing else left to happen, never
// started; found by the stress harness, seed 586637014). By hand, response-ratio order,
// max_skip 30, slack 0, keeping on: one A100 with job 0 (1g.5gb@0) expected to end at 100.
// - t = 31: job 100 (4g.20gb, limit 1000, queued at 0) is overdue, does not fit (4g@0 needs unit
//   0) and reserves 4g@0: the holder.
// - t = 40: job 0 ends; job 101 (4g.20gb, limit 50) is queued.
// - t = 45: ratios 101: (5 + 50) / 50 = 1.1, 100: (45 + 1000) / 1000 = 1.045, so 101 goes first.
//   The scan reserves 4g@0 for 100 first (free now), closed to 101: 101 fails its own try, would
//   end at 95 > 45 (no backfill) and has no placement beside. Then 100, with the same request,
//   starts on its own reservation, 4g@0.
TEST(SchedulerQueueTest, KeptHolderIsNotSkippedByAnIdenticalRequestBeforeIt) {
  const SchedulerOptions o = KeepingOpts(true);
  QueueFixture f(1, std::make_unique<Scripted>(), o);
  ASSERT_NO_FATAL_FAILURE(OneJobOnGpu0EndingAt100(f));
  f.s().Enqueue(100, kJob.Profile("4g.20gb").Named("big"));
  f.s().SetNow(31);
  auto first = f.s().ScheduleQueue();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(*first, IsEmpty());
  ASSERT_EQ(f.s().reservation_holder(), 100);
  f.s().SetNow(40);
  ASSERT_TRUE(f.s().Release(0).ok());
  f.s().Enqueue(101, kJob.Profile("4g.20gb").Limit(50).Named("short"));
  f.s().SetNow(45);
  auto second = f.s().ScheduleQueue();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Placed(*second), std::vector<std::string>{"job 100 on 0@0"});
}

// Regression (hold_holder_skipped_by_an_identical_request: as above, for the room an
// evacuation holds; the hold ended with a scan in which its job was not tried, and with nothing
// else left to happen the queue stalled; found by the stress harness, seed 1288229). By hand,
// response-ratio order, max_skip 30, the evacuation for the head: two A100s, job 0 (1g.5gb@0,
// checkpoint) on GPU 0 and job 1 (4g.20gb@0, none) on GPU 1, both expected to end at 1000.
// - t = 1: job 100 (7g.40gb, limit 1000) is queued.
// - t = 31: 100 is the head and does not fit: the evacuation moves job 0 to GPU 1 (units 4-6
//   are free there), and GPU 0 is held for 100 until the move is over.
// - t = 32: job 101 (7g.40gb, limit 50) is queued. Job 0's move ends.
// - t = 40: ratios 101: (8 + 50) / 50 = 1.16, 100: (39 + 1000) / 1000 = 1.039: 101 goes first
//   and fails (GPU 0 is held for 100, GPU 1 runs jobs 0 and 1). Then 100, with the same request,
//   starts on the room it holds, 7g@0 of GPU 0.
TEST(SchedulerQueueTest, HoldHolderIsNotSkippedByAnIdenticalRequestBeforeIt) {
  SchedulerOptions o = Migrating(KeepingOpts(false));
  o.evacuation = EvacuationScope::kHead;
  QueueFixture f(2, std::make_unique<Scripted>(), o);
  ASSERT_NO_FATAL_FAILURE(MovableOnGpu0FixedOnGpu1(f));
  f.s().SetNow(1);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("old"));
  f.s().SetNow(31);
  auto first = f.s().ScheduleQueue();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(*first, IsEmpty());
  ASSERT_EQ(f.s().evacuation_holds().size(), 1u);
  EXPECT_EQ(f.s().evacuation_holds()[0].job, 100);
  EXPECT_EQ(f.s().evacuation_holds()[0].gpu, 0);
  f.s().SetNow(32);
  f.s().Enqueue(101, kJob.Profile("7g.40gb").Limit(50).Named("short"));
  ASSERT_TRUE(f.s().FinishMigration(0).ok());
  f.s().SetNow(40);
  auto second = f.s().ScheduleQueue();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Placed(*second), std::vector<std::string>{"job 100 on 0@0"});
}

// A gang whose instances cannot all keep the reservation valid waits, and leaves no instance
// behind: one A100 with job 0 (1g.5gb@0) to t = 100, a 4g.20gb reserved at 4g@0 from 100, so
// units 4-6 and 3 compute slices are the room beside it. A gang of four 1g.5gb finds three
// (1g@4, 5, 6) and not the fourth: it waits, and the GPU holds job 0's instance only.
TEST(SchedulerQueueTest, GangThatDoesNotFitBesideAReservationWaitsWholly) {
  SchedulerOptions o = Opts();
  o.max_skip_seconds = 30;
  QueueFixture f(1, std::make_unique<Scripted>(), Migrating(o));
  ASSERT_NO_FATAL_FAILURE(OneJobOnGpu0EndingAt100(f));
  f.s().Enqueue(100, kJob.Profile("4g.20gb").Named("big"));
  f.s().Enqueue(101, kJob.Profile("1g.5gb").Named("four").Gang(4));
  f.s().SetNow(31);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_THAT(*d, IsEmpty());
  EXPECT_EQ(f.cluster().gpu(0).busy_compute_slices(), 1);
  EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(100, 101));
}

TEST(SchedulerQueueTest, MaxWaitExpiresJobsThatWaitedLongEnough) {
  SchedulerOptions o = Opts();
  o.max_wait_s = 20;
  QueueFixture f(1, "first-fit", o);
  f.s().SetNow(0);
  f.s().Enqueue(0, kJob.Profile("7g.40gb").Named("a"));
  f.s().SetNow(10);
  f.s().Enqueue(1, kJob.Profile("7g.40gb").Named("b"));
  f.s().SetNow(19.5);
  EXPECT_THAT(f.s().ExpireWaits(), IsEmpty());
  // Job 0 has waited 20 s (reached), job 1 10 s.
  f.s().SetNow(20);
  EXPECT_THAT(f.s().ExpireWaits(), ElementsAre(0));
  EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(1));
  // Without a limit nothing expires.
  QueueFixture g(1, "first-fit", Opts());
  g.s().Enqueue(0, kJob.Profile("7g.40gb").Named("a"));
  g.s().SetNow(1e9);
  EXPECT_THAT(g.s().ExpireWaits(), IsEmpty());
}

TEST(SchedulerRetentionTest, KeptInstancesAreReusedAndExpire) {
  SchedulerOptions o = Opts();
  o.idle_ttl_s = 60;
  QueueFixture f(1, "lb+frag", o);
  // t = 0: a 1g goes to 1g@6 (the only ΔFragCost-0 start on an empty A100)
  // and is created; t = 10: it ends, the instance is kept idle.
  f.s().SetNow(0);
  const JobId a = f.Place(kJob.Profile("1g.5gb").Named("a"));
  EXPECT_EQ(f.s().NextIdleExpiry(), std::nullopt);  // busy, nothing idle
  f.s().SetNow(10);
  ASSERT_TRUE(f.s().Release(a).ok());
  EXPECT_EQ(f.s().NextIdleExpiry(), 70);
  // t = 20: the next 1g reuses it (ΔFragCost 0 at 6, reuse wins the tie):
  // one destroy and one create saved.
  f.s().SetNow(20);
  const JobId b = f.Place(kJob.Profile("1g.5gb").Named("b"));
  EXPECT_THAT(*f.s().InstancesOf(b), ElementsAre(InstanceRef{0, 0, 6}));
  EXPECT_EQ(f.s().kept_instance_reuses(), 1);
  f.s().SetNow(30);
  ASSERT_TRUE(f.s().Release(b).ok());
  // Idle since 30: expires at 90, not before.
  f.s().SetNow(89.5);
  auto none = f.s().ExpireIdleInstances();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  f.s().SetNow(90);
  auto plan = f.s().ExpireIdleInstances();
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(f.Steps(*plan), ElementsAre("destroy 1g.5gb@6 on GPU 0"));
  EXPECT_TRUE(f.cluster().gpu(0).empty());
  EXPECT_EQ(f.s().idle_expirations(), 1);
  EXPECT_EQ(f.s().NextIdleExpiry(), std::nullopt);
}

TEST(SchedulerRetentionTest, OffByDefaultAndForSetupLayouts) {
  // Default (< 0): keep until the space is needed.
  QueueFixture f(1, "lb+frag", Opts());
  const JobId a = f.Place(kJob.Profile("1g.5gb").Named("a"));
  ASSERT_TRUE(f.s().Release(a).ok());
  EXPECT_EQ(f.s().NextIdleExpiry(), std::nullopt);
  // static: its layout instances are never expired.
  SchedulerOptions o = Opts();
  o.idle_ttl_s = 0;
  QueueFixture g(1, "static", o);
  const JobId b = g.Place(kJob.Profile("1g.5gb").Named("b"));
  ASSERT_TRUE(g.s().Release(b).ok());
  EXPECT_EQ(g.s().NextIdleExpiry(), std::nullopt);
  auto plan = g.s().ExpireIdleInstances();
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
}

// Room kept for small jobs (§13, SchedulerOptions::evacuation_keeps_room). Three A100s, as in
// evacuation_test.cc's KeepsRoomForTheSmallestSizeOnlyWhereAPlanLeavesSome: GPU 0 runs 3g@0, 2g@4
// and 1g@6 and GPU 2 runs 3g@0 and 2g@4 (none may move); GPU 1 runs a movable 1g.5gb@0. A
// 7g.40gb waits. Its one evacuation moves the 1g to GPU 2's 1g@6, the last 1-slice placement of
// the cluster, and a 1-slice job has arrived (the window's smallest size): with the room kept,
// no evacuation, the 7g job waits; without it, one. Where the 7g job would be turned away
// (--max-wait 0: its blocker's end, unknown here, is past its arrival), the plan is taken
// (the admission move budget is lifted here: one move for seven jobs is over 0.02 per job).
// Nor is the room kept from an overdue job whose reservation can be made: with
// --max-skip-seconds 600 the 7g job, queued at 0, is overdue at 601 (one evacuation), not at 600
// (none: the wait must exceed the bound, §5). No running job's end is known here unless `ends_s`
// is set (every placed job's expected end); under --reservation-unknown-ends strict (the default)
// an unknown start still reserves, so the overdue job is exempt; under skip it reserves nothing
// and keeps the room (RoomKeptForSmallJobsTest below), unless the ends are known.
struct KeepsRoomCase {
  bool keeps_room;
  double max_wait_s;
  int64_t evacuations;
  double max_skip_s = -1;
  double now_s = 0;
  bool needs_ends = false;  // --reservation-unknown-ends skip
  double ends_s = -1;       // < 0: unknown
};

// The evacuations begun by the scan of KeepsRoomCase `c` (the setting above).
int64_t EvacuationsWithRoomKept(const KeepsRoomCase& c) {
  SchedulerOptions o = Migrating(Opts());
  o.evacuation = EvacuationScope::kQueue;
  o.evacuation_keeps_room = c.keeps_room;
  o.max_wait_s = c.max_wait_s;
  o.max_skip_seconds = c.max_skip_s;
  o.reservation_needs_ends = c.needs_ends;
  o.migration.admission_move_budget = -1;  // one move for seven jobs passes 0.02 per job
  QueueFixture f(3, std::make_unique<Scripted>(), o);
  const JobBuilder still = kJob.Moves(Migratable::kNone);
  for (const Job& j : std::vector<Job>{
           still.Profile("3g.20gb").Named("g0s0"), still.Profile("2g.10gb").Named("g0s4"),
           still.Profile("1g.5gb").Named("g0s6"), kJob.Profile("1g.5gb").Named("g1s0"),
           still.Profile("3g.20gb").Named("g2s0"), still.Profile("2g.10gb").Named("g2s4")}) {
    f.s().ObserveArrival(j);
    const JobId id = f.Place(j);
    if (c.ends_s >= 0) f.s().SetExpectedEnd(id, c.ends_s);
  }
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("seven"), 0);
  f.s().SetNow(c.now_s);
  auto d = f.s().ScheduleQueue();
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d.ok() && d->empty());
  return f.s().evacuations_begun();
}

class EvacuationKeepsRoomTest : public ::testing::TestWithParam<KeepsRoomCase> {};

TEST_P(EvacuationKeepsRoomTest, AnEvacuationTakesTheLastSmallPlacementOnlyWhereAllowed) {
  EXPECT_EQ(EvacuationsWithRoomKept(GetParam()), GetParam().evacuations);
}

INSTANTIATE_TEST_SUITE_P(Cases, EvacuationKeepsRoomTest,
                         ::testing::Values(KeepsRoomCase{true, -1, 0}, KeepsRoomCase{false, -1, 1},
                                           KeepsRoomCase{true, 0, 1},
                                           KeepsRoomCase{true, -1, 0, 600, 600},
                                           KeepsRoomCase{true, -1, 1, 600, 601}));

// Regression (overdue_job_with_unknown_start_took_the_kept_room): on churn without time limits
// (the scheduler knows no end) every evacuation for an overdue job took the last 1-slice
// placement; under --reservation-unknown-ends skip such a job has no reservation, and now keeps
// the room like any other (no evacuation), while with its start known it is exempt (one).
TEST(RoomKeptForSmallJobsTest, OverdueJobWithUnknownStartKeepsTheRoomUnderSkip) {
  EXPECT_EQ(EvacuationsWithRoomKept(KeepsRoomCase{true, -1, 0, 600, 601, /*needs_ends=*/true}), 0);
  EXPECT_EQ(EvacuationsWithRoomKept(
                KeepsRoomCase{true, -1, 1, 600, 601, /*needs_ends=*/true, /*ends_s=*/1000}),
            1);
}

// Regression (evacuation_ignored_drained_gpus: an evacuation opened room on a drained GPU, or
// moved a job onto one; the daemon stopped a `restart` job for a placement no job could take).
// A drained GPU offers no placement and is never a migration target (core/cluster.h), for an
// evacuation as for the rest. Three A100s: GPU 0 runs a 7g.40gb that may not move, GPU 1 a
// movable 1g.5gb@0, GPU 2 a 1g.5gb@6 that may not move. A 7g.40gb waits. Its one evacuation moves
// GPU 1's 1g to GPU 2 (the only other GPU with room) and opens GPU 1. With GPU 1 drained the room
// would be useless; with GPU 2 drained the move has no target: no evacuation either way.
class EvacuationDrainTest : public ::testing::TestWithParam<int> {};

TEST_P(EvacuationDrainTest, NoEvacuationOpensRoomOnOrMovesAJobToADrainedGpu) {
  const int drained = GetParam();
  SchedulerOptions o = Migrating(Opts());
  o.evacuation = EvacuationScope::kQueue;
  QueueFixture f(3, std::make_unique<Scripted>(), o);
  const JobBuilder still = kJob.Moves(Migratable::kNone);
  f.Place(still.Profile("7g.40gb").Named("g0s0"));
  f.Place(kJob.Profile("1g.5gb").Named("g1s0"));
  f.Place(still.Profile("1g.5gb").Named("g2s6"));
  if (drained >= 0) f.cluster().SetDrained(drained, true);
  f.s().Enqueue(100, kJob.Profile("7g.40gb").Named("seven"), 0);
  auto d = f.s().ScheduleQueue();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->empty());
  EXPECT_EQ(f.s().evacuations_begun(), drained < 0 ? 1 : 0);
  if (drained < 0) {
    // The room held for the 7g job is GPU 1's, and GPU 1's 1g moves to GPU 2.
    ASSERT_EQ(f.s().evacuation_holds().size(), 1u);
    EXPECT_EQ(f.s().evacuation_holds()[0].gpu, 1);
    EXPECT_THAT(f.Pass(MigrationTrigger::kFragmented),
                ElementsAre(::testing::StartsWith("job 1: 1@0 -> 2@")));
  } else {
    EXPECT_THAT(f.s().evacuation_holds(), IsEmpty());
  }
}

INSTANTIATE_TEST_SUITE_P(NoneGpu1Gpu2, EvacuationDrainTest, ::testing::Values(-1, 1, 2));

}  // namespace
}  // namespace migsched
