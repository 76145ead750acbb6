// Scheduler decisions on small hand-made states (which GPU, which start, and
// why), for every policy, plus admission (never-runnable jobs) and gangs.
#include "sched/scheduler.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::BuildCluster;
using ::migsched::testing::GpuSetup;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A cluster in a given state (its busy instances run jobs 1000, 1001, ...)
// and a scheduler over it.
class World {
 public:
  World(const std::vector<GpuSetup>& gpus, const std::string& policy,
        SchedulerOptions options = {}) {
    cluster_ = BuildCluster(gpus, &tables_);
    auto p = MakePolicy(policy, options);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(cluster_.get(), std::move(*p), options, &clock_);
    auto setup = scheduler_->Setup();
    EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  }

  // Places a job asking for `profile` (count instances); returns its instances
  // as "gpu:profile@start" strings (empty if it does not fit now).
  std::vector<std::string> Place(const std::string& profile, int count = 1) {
    const Job job = AJob(profile).Named("j" + std::to_string(next_id_)).Gang(count);
    auto d = scheduler_->TryPlace(next_id_++, job);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::vector<std::string> out;
    if (d.ok() && d->has_value()) {
      last_plan_ = (*d)->plan;
      for (const InstanceRef& in : (*d)->instances) {
        out.push_back(fmt::format(
            "{}:{}@{}", in.gpu, cluster_->gpu(in.gpu).model().profile(in.profile).name, in.start));
      }
    }
    for (int g = 0; g < cluster_->size(); ++g) {
      Status st = cluster_->gpu(g).CheckInvariants();
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return out;
  }

  Scheduler& scheduler() { return *scheduler_; }
  Cluster& cluster() { return *cluster_; }
  const Plan& last_plan() const { return last_plan_; }
  JobId last_id() const { return next_id_ - 1; }
  std::vector<std::string> LastPlanSteps() const {
    std::vector<std::string> out;
    for (const Step& s : last_plan_.steps) {
      out.push_back(fmt::format("{} {}@{} gpu{}", StepKindName(s.kind),
                                cluster_->gpu(s.gpu).model().profile(s.profile).name, s.start,
                                s.gpu));
    }
    return out;
  }

 private:
  ConfigTableCache tables_;
  ManualClock clock_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> scheduler_;
  JobId next_id_ = 0;
  Plan last_plan_;
};

struct DecisionCase {
  std::string name;
  std::vector<GpuSetup> gpus;
  std::string policy;
  double threshold;
  std::string profile;
  std::vector<std::string> expected;  // "gpu:profile@start"
};

class DecisionTest : public ::testing::TestWithParam<DecisionCase> {};

TEST_P(DecisionTest, ChoosesTheExpectedPlacement) {
  const DecisionCase& c = GetParam();
  SchedulerOptions o;
  o.threshold = c.threshold;
  World w(c.gpus, c.policy, o);
  EXPECT_EQ(w.Place(c.profile), c.expected);
}

const DecisionCase kDecisionCases[] = {
    // Empty A100: 1g@6 is the only start that leaves every other profile its
    // ideal count (ΔFragCost 0); 1g@4 costs 1/15, 1g@5 also 1/15 (2g@4 lost),
    // 1g@0..3 block the 4g: frag-aware picks start 6.
    {"FragAwareOneSliceGoesToSlot6",
     {{"A100-40GB", "", ""}},
     "frag-aware",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@6"}},
    // 3g@4 has ΔFragCost 0, 3g@0 costs 0.35 (§2 table).
    {"FragAwareThreeSliceGoesHigh",
     {{"A100-40GB", "", ""}},
     "frag-aware",
     0.4,
     "3g.20gb",
     {"0:3g.20gb@4"}},
    // 1g.10gb@6 keeps 2g 3/3, 3g 1/1, 4g 1/1 (FragCost 0); 1g.10gb@0 costs 0.3.
    {"FragAwareOneSliceTenGbGoesTo6",
     {{"A100-40GB", "", ""}},
     "frag-aware",
     0.4,
     "1g.10gb",
     {"0:1g.10gb@6"}},
    // GPU 0 holds 3g@4: util 3/7 = 0.43 >= 0.4, busy. GPU 1 is lazy, so the
    // job goes there although GPU 0 also has room (§4 step 2).
    {"LazyGpuPreferred",
     {{"A100-40GB", "3g.20gb@4", ""}, {"A100-40GB", "", ""}},
     "frag-aware",
     0.4,
     "1g.5gb",
     {"1:1g.5gb@6"}},
    // With t = 0.5 both GPUs are lazy. On GPU 0 every 1g start in 0-3 keeps
    // 1g.5gb 3/3, 1g.10gb 1/1, 2g 1/1 (ΔFragCost 0); GPU 1's 1g@6 is also 0.
    // Tie-break: lower util (0 < 3/7) -> GPU 1.
    {"TieGoesToLowerUtil",
     {{"A100-40GB", "3g.20gb@4", ""}, {"A100-40GB", "", ""}},
     "frag-aware",
     0.5,
     "1g.5gb",
     {"1:1g.5gb@6"}},
    // Both GPUs busy (util 4/7). GPU 0 = 4g@0: the 1g can go to 4, 5 or 6;
    // only 6 keeps 1g.10gb@4 and 2g@4 possible (ΔFragCost 0 vs 1/3).
    {"BusyGpusStillScoredByFragCost",
     {{"A100-40GB", "4g.20gb@0", ""}, {"A100-40GB", "4g.20gb@0", ""}},
     "frag-aware",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@6"}},
    // FragCost comes before reuse: the idle 2g@2 would cost 0.2 (blocks 4g@0),
    // 2g@4 costs 0, so a new 2g@4 is created next to the idle one.
    {"FragCostBeforeReuse",
     {{"A100-40GB", "", "2g.10gb@2"}},
     "frag-aware",
     0.4,
     "2g.10gb",
     {"0:2g.10gb@4"}},
    // Equal ΔFragCost (0 at start 4 on both): GPU 1 has an idle 2g@4 to reuse.
    {"ReuseWinsATie",
     {{"A100-40GB", "", ""}, {"A100-40GB", "", "2g.10gb@4"}},
     "frag-aware",
     0.4,
     "2g.10gb",
     {"1:2g.10gb@4"}},
    // Equal ΔFragCost, no reuse: GPU 0 would have to destroy its idle 1g@4.
    {"FewestDestroysWinsATie",
     {{"A100-40GB", "", "1g.5gb@4"}, {"A100-40GB", "", ""}},
     "frag-aware",
     0.4,
     "2g.10gb",
     {"1:2g.10gb@4"}},
    // RTX PRO 6000 (12 units): every 1g start keeps one 2g placement and
    // three 1g's (ΔFragCost 0 for all four): the highest start, 9, wins.
    {"HigherStartWinsTheLastTie",
     {{"RTX-PRO-6000", "", ""}},
     "frag-aware",
     0.4,
     "1g.24gb",
     {"0:1g.24gb@9"}},
    // Baselines.
    {"FirstFitLowestGpuLowestStart",
     {{"A100-40GB", "", ""}},
     "first-fit",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@0"}},
    {"FirstFitSkipsFullGpu",
     {{"A100-40GB", "7g.40gb@0", ""}, {"A100-40GB", "", ""}},
     "first-fit",
     0.4,
     "2g.10gb",
     {"1:2g.10gb@0"}},
    // best-fit: GPU 1 is fuller (3/7 > 1/7) and fits.
    {"BestFitFullestGpu",
     {{"A100-40GB", "1g.5gb@6", ""}, {"A100-40GB", "3g.20gb@4", ""}},
     "best-fit",
     0.4,
     "2g.10gb",
     {"1:2g.10gb@0"}},
    // driver-default on A100: 1g.5gb goes to 6 first, 2g.10gb highest start first.
    {"DriverDefaultOneSliceSlot6",
     {{"A100-40GB", "", ""}},
     "driver-default",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@6"}},
    {"DriverDefaultThenSlot4",
     {{"A100-40GB", "1g.5gb@6", ""}},
     "driver-default",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@4"}},
    {"DriverDefaultTwoSliceHighestFirst",
     {{"A100-40GB", "", ""}},
     "driver-default",
     0.4,
     "2g.10gb",
     {"0:2g.10gb@4"}},
    // On A30 the driver fills from index 0.
    {"DriverDefaultA30LowestFirst",
     {{"A30-24GB", "", ""}},
     "driver-default",
     0.4,
     "1g.6gb",
     {"0:1g.6gb@0"}},
    // static: all-balanced = 2g@0, 1g@2, 1g@3, 3g@4; a 1g job takes the idle 1g@2.
    {"StaticReusesLayoutInstance",
     {{"A100-40GB", "", ""}},
     "static",
     0.4,
     "1g.5gb",
     {"0:1g.5gb@2"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, DecisionTest, ::testing::ValuesIn(kDecisionCases),
                         [](const auto& info) { return info.param.name; });

TEST(SchedulerTest, DriverDefaultFillsSixFourFiveThenZero) {
  World w({{"A100-40GB", "", ""}}, "driver-default");
  EXPECT_EQ(w.Place("1g.5gb"), std::vector<std::string>{"0:1g.5gb@6"});
  EXPECT_EQ(w.Place("1g.5gb"), std::vector<std::string>{"0:1g.5gb@4"});
  EXPECT_EQ(w.Place("1g.5gb"), std::vector<std::string>{"0:1g.5gb@5"});
  EXPECT_EQ(w.Place("1g.5gb"), std::vector<std::string>{"0:1g.5gb@0"});
}

TEST(SchedulerTest, PlanDestroysIdleInstancesInTheWayThenCreates) {
  // Idle 1g@4 and 1g@5 sit where the 2g@4 goes; the plan destroys both,
  // creates the 2g and starts the job.
  World w({{"A100-40GB", "", "1g.5gb@4,1g.5gb@5"}}, "first-fit");
  // first-fit takes the lowest start: 2g@0 is free, nothing destroyed.
  EXPECT_EQ(w.Place("2g.10gb"), std::vector<std::string>{"0:2g.10gb@0"});
  EXPECT_THAT(w.LastPlanSteps(), ElementsAre("create 2g.10gb@0 gpu0", "start 2g.10gb@0 gpu0"));
  EXPECT_EQ(w.Place("2g.10gb"), std::vector<std::string>{"0:2g.10gb@2"});
  EXPECT_EQ(w.Place("2g.10gb"), std::vector<std::string>{"0:2g.10gb@4"});
  EXPECT_THAT(w.LastPlanSteps(), ElementsAre("destroy 1g.5gb@4 gpu0", "destroy 1g.5gb@5 gpu0",
                                             "create 2g.10gb@4 gpu0", "start 2g.10gb@4 gpu0"));
}

TEST(SchedulerTest, ReusedInstanceNeedsNoReconfiguration) {
  World w({{"A100-40GB", "", "3g.20gb@4"}}, "frag-aware");
  EXPECT_EQ(w.Place("3g.20gb"), std::vector<std::string>{"0:3g.20gb@4"});
  EXPECT_THAT(w.LastPlanSteps(), ElementsAre("start 3g.20gb@4 gpu0"));
  EXPECT_EQ(w.last_plan().reconfigurations(), 0);
}

TEST(SchedulerTest, ReleaseKeepsOrDestroysPerPolicy) {
  for (const std::string policy : {"frag-aware", "first-fit"}) {
    World w({{"A100-40GB", "", ""}}, policy);
    ASSERT_EQ(w.Place("4g.20gb").size(), 1u);
    auto plan = w.scheduler().Release(w.last_id());
    ASSERT_TRUE(plan.ok());
    const bool keeps = policy == "frag-aware";
    EXPECT_EQ(plan->reconfigurations(), keeps ? 0 : 1) << policy;
    EXPECT_EQ(w.cluster().gpu(0).instances().size(), keeps ? 1u : 0u) << policy;
    EXPECT_EQ(w.cluster().gpu(0).busy_compute_slices(), 0);
  }
}

TEST(SchedulerTest, GangPlacesAllOrNothing) {
  World w({{"A100-40GB", "", ""}, {"A100-40GB", "1g.5gb@6", ""}}, "first-fit");
  // 2 x 7g: GPU 1 has a busy 1g, so only one 7g fits now: nothing is placed.
  EXPECT_TRUE(w.Place("7g.40gb", 2).empty());
  EXPECT_TRUE(w.cluster().gpu(0).empty());
  // 2 x 3g fit on GPU 0 (3g@0 and 3g@4) under first-fit.
  EXPECT_EQ(w.Place("3g.20gb", 2), (std::vector<std::string>{"0:3g.20gb@0", "0:3g.20gb@4"}));
}

TEST(SchedulerTest, FullGpuGangSpreadsOverGpus) {
  World w({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, "frag-aware");
  EXPECT_EQ(w.Place("7g.40gb", 2), (std::vector<std::string>{"0:7g.40gb@0", "1:7g.40gb@0"}));
}

TEST(SchedulerTest, RejectsJobsThatCanNeverRun) {
  struct Case {
    std::vector<GpuSetup> gpus;
    std::string policy;
    std::string profile;
    int count;
    std::string error;
  } cases[] = {
      {{{"A30-24GB", "", ""}},
       "frag-aware",
       "7g.40gb",
       1,
       "no GPU in the cluster (A30 24GB) offers profile 7g.40gb"},
      // all-balanced has 2g, 1g, 1g, 3g: no 4g.
      {{{"A100-40GB", "", ""}},
       "static",
       "4g.20gb",
       1,
       "the static policy's layout has no 4g.20gb instance"},
      // 2 GPUs hold at most 2 x 7g.
      {{{"A100-40GB", "", ""}, {"A100-40GB", "", ""}},
       "first-fit",
       "7g.40gb",
       3,
       "gang of 3x7g.40gb instances is larger than the cluster (at most 2 at once)"},
      // A30: at most 4 x 1g.6gb; 2 GPUs -> 8.
      {{{"A30-24GB", "", ""}, {"A30-24GB", "", ""}},
       "first-fit",
       "1g.6gb",
       9,
       "gang of 9x1g.6gb instances is larger than the cluster (at most 8 at once)"},
  };
  for (const Case& c : cases) {
    World w(c.gpus, c.policy);
    Job job;
    job.profile = c.profile;
    job.count = c.count;
    Status st = w.scheduler().CheckCanEverRun(job);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << c.error;
    EXPECT_EQ(st.message(), c.error);
  }
  World ok({{"A100-40GB", "", ""}}, "static");
  Job job;
  job.profile = "3g.20gb";
  EXPECT_TRUE(ok.scheduler().CheckCanEverRun(job).ok());
}

// Regression: a gang larger than `static`'s layout was said to be larger than the cluster,
// though the cluster could hold it and the other policies ran it. all-balanced on an H100 80GB
// has one 3g.40gb (2g@0, 1g@2, 1g@3, 3g@4); the A100 40GB offers no 3g.40gb; an empty H100
// holds two (3g@0, 3g@4).
TEST(SchedulerTest, StaticGangLargerThanItsLayoutNamesTheLayout) {
  const std::vector<GpuSetup> gpus = {{"A100-40GB", "", ""}, {"H100-80GB", "", ""}};
  Job gang;
  gang.profile = "3g.40gb";
  gang.count = 2;
  World fixed(gpus, "static");
  Status st = fixed.scheduler().CheckCanEverRun(gang);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "gang of 2x3g.40gb instances is larger than the static policy's layout (at most 1 at "
            "once)");
  World dynamic(gpus, "first-fit");
  EXPECT_TRUE(dynamic.scheduler().CheckCanEverRun(gang).ok());
  gang.count = 3;
  EXPECT_EQ(dynamic.scheduler().CheckCanEverRun(gang).message(),
            "gang of 3x3g.40gb instances is larger than the cluster (at most 2 at once)");
}

// Regression: a rejection of a gpu_fraction job named the raw fraction ("has no gpu_fraction
// 0.5714285714285714 instance"); it names the profile the fraction resolves to, per model.
// 4/7 of the compute slices: 4g.20gb on the A100 40GB, 4g.40gb on the H100 80GB; 0.5 also
// resolves to 4g (3/7 < 0.5), of which an empty A100 holds one.
TEST(SchedulerTest, FractionRejectionsNameTheResolvedProfile) {
  Job f;
  f.gpu_fraction = 0.5714285714285714;
  World one({{"A100-40GB", "", ""}}, "static");
  EXPECT_EQ(one.scheduler().CheckCanEverRun(f).message(),
            "the static policy's layout has no 4g.20gb instance (gpu_fraction "
            "0.5714285714285714)");
  World mixed({{"A100-40GB", "", ""}, {"H100-80GB", "", ""}}, "static");
  EXPECT_EQ(mixed.scheduler().CheckCanEverRun(f).message(),
            "the static policy's layout has no 4g.20gb or 4g.40gb instance (gpu_fraction "
            "0.5714285714285714)");
  Job half;
  half.gpu_fraction = 0.5;
  half.count = 2;
  World ff({{"A100-40GB", "", ""}}, "first-fit");
  EXPECT_EQ(ff.scheduler().CheckCanEverRun(half).message(),
            "gang of 2x4g.20gb instances (gpu_fraction 0.5) is larger than the cluster (at most "
            "1 at once)");
}

TEST(SchedulerTest, QueueBackfillsPastABlockedJob) {
  // One A100 with a busy 4g@0: a 7g cannot start, but a later 2g can.
  World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware");
  Job big;
  big.profile = "7g.40gb";
  Job small;
  small.profile = "2g.10gb";
  w.scheduler().Enqueue(1, big);
  w.scheduler().Enqueue(2, small);
  auto started = w.scheduler().ScheduleQueue();
  ASSERT_TRUE(started.ok());
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ((*started)[0].job, 2);
  EXPECT_THAT(w.scheduler().QueuedJobs(), ElementsAre(1));
}

// One A100 with a busy 4g.20gb at 0: one 3g.20gb fits (at 4), not two. Three jobs wait for a
// 3g.20gb: 1 (time limit 36000 s) and 3 (no limit) since t = 0, 2 (limit 60 s) since t = 100.
// At t = 200, by hand: FIFO tries them in arrival order, so 1 starts and 3, 2 wait. By response
// ratio, (wait + limit) / limit: 1 has (200 + 36000) / 36000 = 1.0056, 2 has (100 + 60) / 60 =
// 2.67, 3 counts as 3600 s long: (200 + 3600) / 3600 = 1.056. So 2 starts, and 3 waits before 1.
TEST(SchedulerTest, QueueOrderFifoOrByResponseRatio) {
  for (QueueOrder order : {QueueOrder::kFifo, QueueOrder::kResponseRatio}) {
    SCOPED_TRACE(std::string(QueueOrderName(order)));
    SchedulerOptions o;
    o.queue_order = order;
    World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware", o);
    Scheduler& s = w.scheduler();
    s.SetNow(0);
    s.Enqueue(1, AJob("3g.20gb").Limit(36000));
    s.Enqueue(3, AJob("3g.20gb"));
    s.SetNow(100);
    s.Enqueue(2, AJob("3g.20gb").Limit(60));
    s.SetNow(200);
    auto started = s.ScheduleQueue();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);
    if (order == QueueOrder::kFifo) {
      EXPECT_EQ((*started)[0].job, 1);
      EXPECT_THAT(s.QueuedJobs(), ElementsAre(3, 2));
    } else {
      EXPECT_EQ((*started)[0].job, 2);
      EXPECT_THAT(s.QueuedJobs(), ElementsAre(3, 1));
    }
  }
}

// The overtaking guard (§5). One A100 with a busy 4g.20gb at 0: one 3g.20gb fits (at 4). Three
// jobs wait for a 3g.20gb: 1 (limit 86400 s) since t = 0, 2 (limit 600 s) since t = 900 and 3
// (limit 600 s) since t = 1000. At t = 1200, by hand: the waits are 1200, 300 and 200 s, their
// median 300 s; the ratios (1200 + 86400) / 86400 = 1.014, (300 + 600) / 600 = 1.5 and
// (200 + 600) / 600 = 1.33, so the ratio alone starts 2 and keeps 3, 1 waiting. With guard 2,
// job 1 has waited more than 2 × 300 s: no later 3g.20gb passes it, so 1 starts and 2, 3 wait (in
// the ratio's order). With guard 5 (bound 1500 s) or off, the ratio's order stands.
TEST(SchedulerTest, OvertakingGuardKeepsALongWaitingJobAheadOfLaterEqualOnes) {
  for (double guard : {-1.0, 2.0, 5.0}) {
    SCOPED_TRACE(guard);
    SchedulerOptions o;
    o.queue_order = QueueOrder::kResponseRatio;
    o.overtake_guard = guard;
    World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware", o);
    Scheduler& s = w.scheduler();
    s.SetNow(0);
    s.Enqueue(1, AJob("3g.20gb").Limit(86400));
    s.SetNow(900);
    s.Enqueue(2, AJob("3g.20gb").Limit(600));
    s.SetNow(1000);
    s.Enqueue(3, AJob("3g.20gb").Limit(600));
    s.SetNow(1200);
    auto started = s.ScheduleQueue();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);
    if (guard == 2.0) {
      EXPECT_EQ((*started)[0].job, 1);
      EXPECT_THAT(s.QueuedJobs(), ElementsAre(2, 3));
    } else {
      EXPECT_EQ((*started)[0].job, 2);
      EXPECT_THAT(s.QueuedJobs(), ElementsAre(3, 1));
    }
  }
}

// The guard holds among jobs of one request only. The same A100: job 1 (3g.20gb, limit 86400 s)
// waits since t = 0, job 2 (2g.10gb, limit 600 s) since t = 900. At t = 1200 job 2's ratio is
// (300 + 600) / 600 = 1.5 against job 1's 1.014. Each is alone in its request, and the guard
// only reorders a request's jobs among that request's places, so even guard 0 (arrival order
// within each request) leaves the ratio's order: job 2 starts (2g.10gb at 4) and the 3g.20gb no
// longer fits (it needs slices 4-6). The same for limits weighed by what they predict (§5) at
// power 0 (arrival order within each request): they reorder a request's jobs only.
TEST(SchedulerTest, OvertakingGuardLeavesOtherRequestsInTheRatiosOrder) {
  for (const bool guard : {true, false}) {
    SCOPED_TRACE(guard ? "overtake_guard 0" : "limit_power 0");
    SchedulerOptions o;
    o.queue_order = QueueOrder::kResponseRatio;
    (guard ? o.overtake_guard : o.limit_power) = 0;
    World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware", o);
    Scheduler& s = w.scheduler();
    s.SetNow(0);
    s.Enqueue(1, AJob("3g.20gb").Limit(86400));
    s.SetNow(900);
    s.Enqueue(2, AJob("2g.10gb").Limit(600));
    s.SetNow(1200);
    auto started = s.ScheduleQueue();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);
    EXPECT_EQ((*started)[0].job, 2);
    EXPECT_THAT(s.QueuedJobs(), ElementsAre(1));
  }
}

// Limits weighed by what they predict (§5, limit_power learned). The A100 of the guard's test,
// busy 4g.20gb at 0. First 20 (or 19) 1g.5gb jobs run one after another on slice 4, their limits
// 600, 1200, 2400, 4800 s in turn. Where every one ran 300 s, the limits said nothing about run
// times: the slope of log run on log limit is 0, so the order is by wait alone. Where each ran
// half its limit, the slope is 1: the limit as given. Then the guard test's queue, from t0: job
// 1 (3g.20gb, limit 86400 s) since t0, job 2 (limit 600 s) since t0 + 900, job 3 (limit 600 s)
// since t0 + 1000, scanned at t0 + 1200 (one 3g.20gb fits). Power 0: ratios 1201, 301, 201: job 1
// starts, then 2, 3 wait. Power 1: 1.014, 1.5, 1.33 (by hand in the guard's test): job 2 starts.
// With only 19 jobs ended the power is still 1 (fewer than 20): job 2 starts.
TEST(SchedulerTest, LearnedLimitPowerOrdersByWaitWhereLimitsSaidNothing) {
  struct Case {
    const char* name;
    int jobs;
    bool run_is_half_the_limit;
    JobId starts;
    double power;
  };
  for (const Case& c : {Case{"said nothing", 20, false, 1, 0}, Case{"said all", 20, true, 2, 1},
                        Case{"too few ended", 19, false, 2, 1}}) {
    SCOPED_TRACE(c.name);
    SchedulerOptions o;
    o.queue_order = QueueOrder::kResponseRatio;
    o.limit_power = kLimitPowerLearned;
    World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware", o);
    Scheduler& s = w.scheduler();
    double t = 0;
    for (int k = 0; k < c.jobs; ++k) {
      const double limit = 600.0 * (1 << (k % 4));
      const double run = c.run_is_half_the_limit ? limit / 2 : 300;
      s.SetNow(t);
      auto d = s.TryPlace(100 + k, AJob("1g.5gb").Limit(limit));
      ASSERT_TRUE(d.ok() && d->has_value());
      t += run;
      s.SetNow(t);
      ASSERT_TRUE(s.Release(100 + k).ok());
    }
    EXPECT_EQ(s.limit_model().samples(), static_cast<size_t>(c.jobs));
    EXPECT_NEAR(s.LimitPower(), c.power, 1e-9);
    s.Enqueue(1, AJob("3g.20gb").Limit(86400));
    s.SetNow(t + 900);
    s.Enqueue(2, AJob("3g.20gb").Limit(600));
    s.SetNow(t + 1000);
    s.Enqueue(3, AJob("3g.20gb").Limit(600));
    s.SetNow(t + 1200);
    auto started = s.ScheduleQueue();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);
    EXPECT_EQ((*started)[0].job, c.starts);
  }
}

// Regression one_default_limit_put_full_gpu_jobs_first (a user's CI farm: every job asked for the
// partition's 4 h; 1g jobs ran a minute, full-GPU ones an hour; the ratio, blind to that, ordered
// by arrival and the small jobs waited behind the large): run times learned per request (§5). The
// A100 of the tests above, busy 4g.20gb at 0 (slices 4-6 free: one 3g.20gb, or 1g.5gb jobs). First
// 20 jobs run one after another on it, all with limit 14400 s: 1g.5gb ones that ran 60 s and
// 3g.20gb ones that ran 3600 s, in turn. By hand: log shares a = ln(60/14400) = -5.48064 and
// b = ln(3600/14400) = -1.38629, m = (a + b)/2; 1g.5gb: (10a + 5m)/15 - m = (a - b)/3 =
// ln(1/60)/3, factor 60^(-1/3) = 0.255436; 3g.20gb: 60^(1/3) = 3.914868. Then job 1 (3g.20gb) waits
// from t0, job 2 (1g.5gb) from t0 + 60, both limit 14400 s; the scan at t0 + 120. Limits as given
// (power 1): ratios 1 + 120/14400 = 1.00833 and 1 + 60/14400 = 1.00417: job 1 starts (3g at 4) and
// job 2 no longer fits. Learned: 1 + 120/(14400 x 3.914868) = 1.00213 and
// 1 + 60/(14400 x 0.255436) = 1.01631: job 2 starts first (1g at 4) and the 3g.20gb waits.
TEST(SchedulerTest, RunTimesLearnedPerRequestOrderJobsOfOneDefaultLimit) {
  for (const bool learned : {true, false}) {
    SCOPED_TRACE(learned ? "learned" : "power 1");
    SchedulerOptions o;
    o.queue_order = QueueOrder::kResponseRatio;
    o.limit_power = learned ? kLimitPowerLearned : 1;
    World w({{"A100-40GB", "4g.20gb@0", ""}}, "frag-aware", o);
    Scheduler& s = w.scheduler();
    double t = 0;
    for (int k = 0; k < 20; ++k) {
      const bool small = k % 2 == 0;
      s.SetNow(t);
      auto d = s.TryPlace(100 + k, AJob(small ? "1g.5gb" : "3g.20gb").Limit(14400));
      ASSERT_TRUE(d.ok() && d->has_value());
      t += small ? 60 : 3600;
      s.SetNow(t);
      ASSERT_TRUE(s.Release(100 + k).ok());
    }
    EXPECT_NEAR(s.limit_model().RequestFactor(RequestKeyOf(AJob("1g.5gb").Limit(14400))), 0.255436,
                1e-6);
    EXPECT_NEAR(s.limit_model().RequestFactor(RequestKeyOf(AJob("3g.20gb").Limit(14400))), 3.914868,
                1e-6);
    s.Enqueue(1, AJob("3g.20gb").Limit(14400));
    s.SetNow(t + 60);
    s.Enqueue(2, AJob("1g.5gb").Limit(14400));
    s.SetNow(t + 120);
    auto started = s.ScheduleQueue();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);
    EXPECT_EQ((*started)[0].job, learned ? 2 : 1);
    EXPECT_THAT(s.QueuedJobs(), ElementsAre(learned ? 1 : 2));
  }
}

// A placement whose job never ran (the daemon's failed instance create) is no run: ForgetRun
// before Release leaves the model without a sample; a run told directly (a restart's replay)
// counts, and so does a placed job's release.
TEST(SchedulerTest, ForgottenRunsAreNotCountedAndToldRunsAre) {
  SchedulerOptions o;
  o.queue_order = QueueOrder::kResponseRatio;
  World w({{"A100-40GB", "", ""}}, "frag-aware", o);
  Scheduler& s = w.scheduler();
  s.SetNow(10);
  auto d = s.TryPlace(1, AJob("1g.5gb").Limit(600));
  ASSERT_TRUE(d.ok() && d->has_value());
  s.ForgetRun(1);
  s.SetNow(20);
  ASSERT_TRUE(s.Release(1).ok());
  EXPECT_EQ(s.limit_model().samples(), 0u);
  s.RecordEndedRun(600, 300, AJob("1g.5gb").Limit(600));
  EXPECT_EQ(s.limit_model().samples(), 1u);
  auto placed = s.TryPlace(2, AJob("1g.5gb").Limit(600));  // started at 20
  ASSERT_TRUE(placed.ok() && placed->has_value());
  s.SetNow(100);
  ASSERT_TRUE(s.Release(2).ok());
  EXPECT_EQ(s.limit_model().samples(), 2u);
}

// A fixed limit_power is used as given, whatever ended (the default, 1, is today's order); in
// arrival order (FIFO) the power orders nothing and is 1, given or learned.
TEST(SchedulerTest, FixedLimitPowerIsUsedAsGiven) {
  SchedulerOptions o;
  o.queue_order = QueueOrder::kResponseRatio;
  EXPECT_EQ(o.limit_power, 1);
  o.limit_power = 0.25;
  World w({{"A100-40GB", "", ""}}, "frag-aware", o);
  EXPECT_EQ(w.scheduler().LimitPower(), 0.25);
  o.queue_order = QueueOrder::kFifo;
  World fifo({{"A100-40GB", "", ""}}, "frag-aware", o);
  EXPECT_EQ(fifo.scheduler().LimitPower(), 1);
}

TEST(SchedulerTest, FractionResolvesPerModel) {
  // gpu_fraction 0.46 -> 4g on A100 (3/7 = 0.43 < 0.46 <= 4/7), 2g on A30 (1/4 < 0.46 <= 2/4).
  World w({{"A100-40GB", "7g.40gb@0", ""}, {"A30-24GB", "", ""}}, "first-fit");
  Job job;
  job.gpu_fraction = 0.46;
  auto d = w.scheduler().TryPlace(7, job);
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->instances[0].gpu, 1);
  EXPECT_EQ(w.cluster().gpu(1).model().profile((*d)->instances[0].profile).name, "2g.12gb");
}

// A policy that counts how often it is asked (frag-aware inside), and says
// whether its feasibility is per GPU as told.
class CountingPolicy : public PlacementPolicy {
 public:
  CountingPolicy(bool per_gpu, int* calls) : per_gpu_(per_gpu), calls_(calls) {
    auto p = MakePolicy("frag-aware", SchedulerOptions{});
    EXPECT_TRUE(p.ok());
    if (p.ok()) inner_ = std::move(*p);
  }
  std::string_view name() const override { return "counting"; }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    ++*calls_;
    return inner_->Choose(cluster, req);
  }
  bool FeasibilityIsPerGpu() const override { return per_gpu_; }

 private:
  std::unique_ptr<PlacementPolicy> inner_;
  bool per_gpu_;
  int* calls_;
};

// A request that found no room is retried against the GPUs changed since:
// unchanged, the answer is "no room" without asking the policy; after a
// change that makes room, the policy is asked and places it. A policy that
// does not declare FeasibilityIsPerGpu is asked every time.
TEST(SchedulerTest, RetryOfAFailedRequestLooksOnlyAtChangedGpus) {
  for (bool per_gpu : {true, false}) {
    SCOPED_TRACE(per_gpu ? "per-GPU feasibility" : "policy asked every time");
    ConfigTableCache tables;
    Cluster cluster({&Model("A100-40GB"), &Model("A100-40GB")}, &tables);
    int calls = 0;
    ManualClock clock;
    Scheduler s(&cluster, std::make_unique<CountingPolicy>(per_gpu, &calls), SchedulerOptions{},
                &clock);
    Job big;
    big.name = "big";
    big.profile = "7g.40gb";
    Job small = big;
    small.name = "small";
    small.profile = "1g.5gb";
    // Both GPUs full with a 7g each: a 1g has no room.
    ASSERT_TRUE(s.TryPlace(1, big).ok());
    ASSERT_TRUE(s.TryPlace(2, big).ok());
    EXPECT_EQ(calls, 2);
    auto none = s.TryPlace(3, small);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    EXPECT_EQ(calls, 3);
    // Nothing changed: still no room; the policy is asked only without the memo.
    none = s.TryPlace(3, small);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    EXPECT_EQ(calls, per_gpu ? 3 : 4);
    // Job 2 ends: GPU 1 changed and has room; the retry is placed there.
    ASSERT_TRUE(s.Release(2).ok());
    auto placed = s.TryPlace(3, small);
    ASSERT_TRUE(placed.ok());
    ASSERT_TRUE(placed->has_value());
    EXPECT_EQ((*placed)->instances.front().gpu, 1);
    EXPECT_EQ(s.decision_us().size(), 5u);  // every TryPlace is a timed decision
  }
}

// Containment (drivers that serve jobs): one A100 40GB, three 1g.5gb jobs queued, the fault
// drill failing job 1's placement. Without containment the scan returns the internal error.
// With it, the scan refuses job 1's decision only: jobs 0 and 2 start (two of the seven 1g.5gb
// placements), job 1 stays queued holding nothing, one incident names it, and it is held back
// 60 s: a scan before then does not try it; one after it (the fault gone) starts it.
TEST(SchedulerTest, AnInternalErrorRefusesOneDecisionAndTheScanGoesOn) {
  const Job small = AJob("1g.5gb").Limit(100);
  {
    World w({{"A100-40GB", "", ""}}, "full");
    w.scheduler().SetFaultInjector([](JobId id, const Job&) { return id == 1; });
    for (JobId id : {0, 1, 2}) w.scheduler().Enqueue(id, small);
    auto scan = w.scheduler().ScheduleQueue();
    ASSERT_FALSE(scan.ok());
    EXPECT_EQ(scan.status().code(), StatusCode::kInternal);
    EXPECT_THAT(scan.status().message(), HasSubstr("job 1"));
  }
  World w({{"A100-40GB", "", ""}}, "full");
  bool fail = true;
  w.scheduler().SetFaultInjector([&fail](JobId id, const Job&) { return fail && id == 1; });
  w.scheduler().SetContainInternalErrors(true, 60);
  for (JobId id : {0, 1, 2}) w.scheduler().Enqueue(id, small);
  auto scan = w.scheduler().ScheduleQueue();
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  std::vector<JobId> started;
  for (const Decision& d : *scan) started.push_back(d.job);
  EXPECT_THAT(started, ElementsAre(0, 2));
  EXPECT_EQ(w.scheduler().InstancesOf(1), nullptr);
  EXPECT_THAT(w.scheduler().QueuedJobs(), ElementsAre(1));
  EXPECT_EQ(w.cluster().gpu(0).busy_compute_slices(), 2);
  std::vector<Scheduler::InternalIncident> inc = w.scheduler().TakeIncidents();
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(inc[0].job, 1);
  EXPECT_THAT(inc[0].what, HasSubstr("fault injected for job 1"));
  EXPECT_FALSE(inc[0].state.empty());
  EXPECT_EQ(w.scheduler().HeldBackUntil(1), std::optional<double>(60));
  fail = false;
  w.scheduler().SetNow(59);
  auto early = w.scheduler().ScheduleQueue();
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->empty());
  w.scheduler().SetNow(60);
  auto later = w.scheduler().ScheduleQueue();
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ(later->front().job, 1);
  EXPECT_TRUE(w.scheduler().TakeIncidents().empty());
  EXPECT_FALSE(w.scheduler().HeldBackUntil(1).has_value());
}

}  // namespace
}  // namespace migsched
