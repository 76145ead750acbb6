// Joint placement of waiting jobs (§12, SchedulerOptions::joint_placement) on
// small hand-made states: which jobs of one queue scan start and where, worked
// out in the comments (A100 40GB placements: 1g.5gb at 0..6, 2g.10gb at 0, 2,
// 4, 3g.20gb at 0 and 4, 4g.20gb at 0, 7g.40gb at 0; docs/mig-hardware.md).
// After every scan the §1 invariants hold and the decisions' plans, replayed
// in order on a copy of the cluster as it was before the scan, lead to the
// same state (what a driver applying them one by one sees).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// One A100 40GB of the cluster: testing::GpuSetup without the model.
struct A100Setup {
  std::string busy;  // PROFILE@START list of busy instances (jobs 1000, 1001, ...)
  std::string idle;  // PROFILE@START list of idle instances
};

class Fixture {
 public:
  Fixture(const std::vector<A100Setup>& gpus, const std::string& policy, bool joint,
          SchedulerOptions o = {}) {
    o.joint_placement = joint;
    std::vector<testing::GpuSetup> setups;
    for (const A100Setup& g : gpus) setups.push_back({"A100-40GB", g.busy, g.idle});
    cluster_ = testing::BuildCluster(setups, &tables_);
    auto p = MakePolicy(policy, o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(cluster_.get(), std::move(*p), o, &clock_);
    EXPECT_TRUE(scheduler_->Setup().ok());
  }

  Scheduler& s() { return *scheduler_; }
  Cluster& cluster() { return *cluster_; }

  JobId Enqueue(const std::string& profile, int count = 1, double duration = 1000) {
    scheduler_->Enqueue(next_,
                        AJob(profile).Named(fmt::format("j{}", next_)).Gang(count).Limit(duration));
    return next_++;
  }

  // One scan; the started jobs as "J:GPU:PROFILE@START" (one per instance).
  std::vector<std::string> Scan() {
    Cluster before = *cluster_;
    auto d = scheduler_->ScheduleQueue();
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::vector<std::string> out;
    if (!d.ok()) return out;
    reconfigurations_ = 0;
    for (const Decision& x : *d) {
      EXPECT_TRUE(ApplyPlan(x.plan, &before).ok()) << DescribePlan(x.plan, before);
      reconfigurations_ += x.plan.reconfigurations();
      for (const InstanceRef& in : x.instances) {
        out.push_back(fmt::format("{}:{}:{}@{}", x.job, in.gpu,
                                  cluster_->gpu(in.gpu).model().profile(in.profile).name,
                                  in.start));
      }
      EXPECT_EQ(*scheduler_->InstancesOf(x.job), x.instances);
    }
    for (int g = 0; g < cluster_->size(); ++g) {
      EXPECT_TRUE(cluster_->gpu(g).CheckInvariants().ok());
      EXPECT_EQ(before.gpu(g).DebugString(), cluster_->gpu(g).DebugString()) << "GPU " << g;
    }
    return out;
  }
  int reconfigurations() const { return reconfigurations_; }

 private:
  ConfigTableCache tables_;
  ManualClock clock_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> scheduler_;
  JobId next_ = 0;
  int reconfigurations_ = 0;
};

struct OrderCase {
  std::string policy;
  bool reverse;
};

class CreateOrderTest : public ::testing::TestWithParam<OrderCase> {};

// 1g.5gb, 1g.5gb, 2g.10gb, 3g.20gb (or the reverse) arriving together on one
// empty A100 fit together only with the 3g at 4 and the others in units 0-3
// (3g@0 leaves units 4-7: 2g@4, 1g@6 and no start for a second 1g). One at
// a time, ΔFragCost puts the 1g instances at 6 and 5 (lb+frag, full), or
// first-fit in reverse order takes 3g@0, so one job waits; jointly all four
// start in the same scan, under every policy that reconfigures.
TEST_P(CreateOrderTest, AllFourStartAtOnce) {
  const OrderCase& c = GetParam();
  Fixture f({{"", ""}}, c.policy, /*joint=*/true);
  std::vector<std::string> profiles = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
  if (c.reverse) std::reverse(profiles.begin(), profiles.end());
  for (const std::string& p : profiles) f.Enqueue(p);
  const std::vector<std::string> started = f.Scan();
  ASSERT_EQ(started.size(), 4u);
  EXPECT_THAT(f.s().QueuedJobs(), IsEmpty());
  const int three_g = c.reverse ? 0 : 3;
  EXPECT_EQ(started[three_g], fmt::format("{}:0:3g.20gb@4", three_g));
  EXPECT_EQ(f.cluster().gpu(0).busy_compute_slices(), 7);
  EXPECT_EQ(f.reconfigurations(), 4);  // four creates, nothing to destroy
}

INSTANTIATE_TEST_SUITE_P(
    Policies, CreateOrderTest,
    ::testing::Values(OrderCase{"lb+frag", false}, OrderCase{"lb+frag", true},
                      OrderCase{"full", false}, OrderCase{"full", true},
                      OrderCase{"first-fit", false}, OrderCase{"first-fit", true},
                      OrderCase{"lb", false}, OrderCase{"lb", true}, OrderCase{"best-fit", false},
                      OrderCase{"best-fit", true}, OrderCase{"driver-default", false},
                      OrderCase{"driver-default", true}, OrderCase{"mfi", false},
                      OrderCase{"mfi", true}),
    [](const auto& info) {
      std::string n = info.param.policy + (info.param.reverse ? "Reverse" : "CreateOrder");
      n.erase(std::remove_if(n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }),
              n.end());
      return n;
    });

// The failure joint placement fixes: one job at a time, lb+frag leaves the
// 3g.20gb waiting in create order, first-fit the last 1g.5gb in reverse order
// (3g@0, 2g@4, 1g@6: unit 7 is no 1g start).
TEST(JointPlacementTest, OneAtATimeLeavesAJobWaiting) {
  {
    Fixture f({{"", ""}}, "lb+frag", /*joint=*/false);
    for (const char* p : {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}) f.Enqueue(p);
    EXPECT_EQ(f.Scan().size(), 3u);
    EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(3));
  }
  {
    Fixture f({{"", ""}}, "first-fit", /*joint=*/false);
    for (const char* p : {"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}) f.Enqueue(p);
    EXPECT_THAT(f.Scan(), ElementsAre("0:0:3g.20gb@0", "1:0:2g.10gb@4", "2:0:1g.5gb@6"));
    EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(3));
  }
}

// GPU 1 holds a busy 4g@0 (util 4/7: busy), GPU 0 is empty (lazy): lb+frag
// puts the 3g on GPU 0 (3g@4), and the 7g then finds no empty GPU. Jointly
// the 3g goes beside the 4g (3g@4 on GPU 1, the only 3g start there) and the
// 7g takes GPU 0.
TEST(JointPlacementTest, MovesAScanPlacementToAnotherGpu) {
  Fixture f({{"", ""}, {"4g.20gb@0", ""}}, "lb+frag", /*joint=*/true);
  f.Enqueue("3g.20gb");
  f.Enqueue("7g.40gb");
  EXPECT_THAT(f.Scan(), ElementsAre("0:1:3g.20gb@4", "1:0:7g.40gb@0"));
  EXPECT_EQ(f.reconfigurations(), 2);
}

// A gang of two 7g.40gb needs two empty GPUs. One at a time the 1g (first in
// the queue) takes empty GPU 0; jointly it goes beside the busy 4g@0 of GPU 2
// (1g@6: of 4, 5, 6 the one that keeps 2g@4 and 1g.10gb@4, lowest FragCost)
// and the gang takes GPUs 0 and 1.
TEST(JointPlacementTest, GangStartsWhenAnEarlierJobMoves) {
  Fixture f({{"", ""}, {"", ""}, {"4g.20gb@0", ""}}, "lb+frag", /*joint=*/true);
  f.Enqueue("1g.5gb");
  f.Enqueue("7g.40gb", 2);
  EXPECT_THAT(f.Scan(), ElementsAre("0:2:1g.5gb@6", "1:0:7g.40gb@0", "1:1:7g.40gb@0"));
}

// Queue order is priority: the 7g (first) starts on the empty A100, the two
// 1g.5gb wait, although starting them instead would start more jobs.
TEST(JointPlacementTest, AnEarlierJobIsNeverDroppedForLaterOnes) {
  Fixture f({{"", ""}}, "lb+frag", /*joint=*/true);
  f.Enqueue("7g.40gb");
  f.Enqueue("1g.5gb");
  f.Enqueue("1g.5gb");
  EXPECT_THAT(f.Scan(), ElementsAre("0:0:7g.40gb@0"));
  EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(1, 2));
}

// Idle 1g@0 and 1g@1 (left by earlier jobs). One at a time lb+frag creates
// the 1g instances where FragCost is lowest (new ones at 6 and 5), so the 3g
// has no room; the joint layout (3g@4, 2g@2, the 1g jobs on the idle 1g@0 and
// 1g@1) needs only two creates: the fewest reconfigurations.
TEST(JointPlacementTest, IdleInstancesAreReusedInTheJointLayout) {
  Fixture f({{"", "1g.5gb@0,1g.5gb@1"}}, "lb+frag", /*joint=*/true);
  for (const char* p : {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}) f.Enqueue(p);
  EXPECT_THAT(f.Scan(), UnorderedElementsAre("0:0:1g.5gb@0", "1:0:1g.5gb@1", "2:0:2g.10gb@2",
                                             "3:0:3g.20gb@4"));
  EXPECT_EQ(f.reconfigurations(), 2);
}

// Starvation guard (§5): GPU 0 holds a busy 4g@0 expected to end at 50, GPU 1
// a busy 3g@4 expected to end at 1000; the 7g queued at 0 is overdue at 31
// (max_skip 30) and GPU 0, which frees soonest, is reserved for it. The 3g
// (1000 s: ends after 50, so no backfill onto GPU 0) goes to GPU 1 (3g@0);
// the 4g then needs 4g@0 of GPU 1, which only moving the 3g to 3g@4 of GPU 0
// would free: GPU 0 is reserved, so the 4g waits. Without the guard both start
// (the 3g beside the 4g of GPU 0, the 4g beside the 3g of GPU 1).
TEST(JointPlacementTest, ReservedGpusAreNeverRelaid) {
  for (bool guard : {true, false}) {
    SCOPED_TRACE(guard ? "guard" : "no guard");
    SchedulerOptions o;
    o.max_skip_seconds = guard ? 30 : -1;
    Fixture f({{"4g.20gb@0", ""}, {"3g.20gb@4", ""}}, "lb+frag", /*joint=*/true, o);
    f.s().SetExpectedEnd(1000, 50);
    f.s().SetExpectedEnd(1001, 1000);
    f.Enqueue("7g.40gb");
    f.s().SetNow(31);
    f.Enqueue("3g.20gb");
    f.Enqueue("4g.20gb");
    if (guard) {
      EXPECT_THAT(f.Scan(), ElementsAre("1:1:3g.20gb@0"));
      EXPECT_THAT(f.s().QueuedJobs(), ElementsAre(0, 2));
    } else {
      EXPECT_THAT(f.Scan(), UnorderedElementsAre("1:0:3g.20gb@4", "2:1:4g.20gb@0"));
    }
  }
}

// Off (the default of SchedulerOptions), and for `static`, the scan places one
// job at a time.
TEST(JointPlacementTest, OffByDefault) {
  EXPECT_FALSE(SchedulerOptions{}.joint_placement);
  Fixture f({{"", ""}}, "static", /*joint=*/true);
  // all-balanced: 2g@0, 1g@2, 1g@3, 3g@4; the third 1g has no instance.
  for (const char* p : {"1g.5gb", "1g.5gb", "1g.5gb"}) f.Enqueue(p);
  EXPECT_THAT(f.Scan(), ElementsAre("0:0:1g.5gb@2", "1:0:1g.5gb@3"));
  EXPECT_EQ(f.s().joint_stats()->searches, 0);
}

}  // namespace
}  // namespace migsched
