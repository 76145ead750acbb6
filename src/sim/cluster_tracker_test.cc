#include "sim/cluster_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AddInstanceSteps;
using ::migsched::testing::AJob;
using ::migsched::testing::Model;

TEST(ClusterTrackerTest, TotalsAndStrandedFollowThePlans) {
  JobId next_job = 100;  // the busy instances' jobs
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB"), &Model("A100-40GB")}, &tables);
  Plan p1;
  AddInstanceSteps(c.gpu(0).model(), 0, "4g.20gb@0", &next_job, &p1);
  ASSERT_TRUE(ApplyPlan(p1, &c).ok());
  auto t = ClusterTracker::Create(c, /*creates_instances=*/true);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->busy_compute_slices(), 4);
  EXPECT_DOUBLE_EQ(t->utilization(), 4.0 / 14);
  EXPECT_DOUBLE_EQ(t->fragmentation_rate(), 0);  // FragCost(4g@0) = FragCost(empty) = 0
  EXPECT_DOUBLE_EQ(t->stranded(), 0);            // empty queue

  // A 7g.40gb waits: GPU 0 (3 free slices) cannot take it, GPU 1 (7) can: 3/10.
  t->AddDemand(AJob("7g.40gb").Named("7g.40gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 3.0 / 10);
  EXPECT_EQ(t->stranded_compute_slices(), 3);
  // A 3g.20gb waits too: it fits GPU 0 at 4, so nothing is stranded.
  t->AddDemand(AJob("3g.20gb").Named("3g.20gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 0);
  t->AddDemand(AJob("3g.20gb").Named("3g.20gb"), -1);
  EXPECT_DOUBLE_EQ(t->stranded(), 3.0 / 10);

  // 3g.20gb@0 starts on GPU 1: 4 slices free there, no 7g fits anywhere: 7/7.
  Plan p2;
  AddInstanceSteps(c.gpu(1).model(), 1, "3g.20gb@0", &next_job, &p2);
  ASSERT_TRUE(ApplyPlan(p2, &c).ok());
  t->Refresh(p2);
  EXPECT_EQ(t->busy_compute_slices(), 7);
  EXPECT_DOUBLE_EQ(t->utilization(), 0.5);
  EXPECT_NEAR(t->fragmentation_rate(), 0.35 / 2, 1e-12);  // FragCost(3g@0) = 0.35 (§2 table)
  EXPECT_DOUBLE_EQ(t->stranded(), 1);
  EXPECT_TRUE(t->CrossCheck().ok()) << t->CrossCheck().ToString();
}

// B200: two busy 3g.90gb (3 compute, 4 memory slices each) hold all 8 placement units and leave
// one compute slice free (core:
// ConfigTableTest.B200TwoThreeGLeaveOneComputeSliceThatNothingCanUse). With a 1g.23gb waiting, that
// slice is stranded capacity: GPU 0 has 1 free slice no waiting profile can use, the empty GPU 1
// has 7 that it can: stranded 1 slice, share 1/8. FragCost is 0 on both (§2: missing capacity, not
// fragmentation).
TEST(ClusterTrackerTest, B200SliceLeftByTwoThreeGIsCountedAsStranded) {
  JobId next_job = 100;
  ConfigTableCache tables;
  Cluster c({&Model("B200"), &Model("B200")}, &tables);
  Plan p;
  AddInstanceSteps(c.gpu(0).model(), 0, "3g.90gb@0,3g.90gb@4", &next_job, &p);
  ASSERT_TRUE(ApplyPlan(p, &c).ok());
  auto t = ClusterTracker::Create(c, /*creates_instances=*/true);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->busy_compute_slices(), 6);
  EXPECT_DOUBLE_EQ(t->fragmentation_rate(), 0);
  EXPECT_EQ(t->stranded_compute_slices(), 0);  // empty queue
  t->AddDemand(AJob("1g.23gb").Named("1g.23gb"), +1);
  EXPECT_EQ(t->stranded_compute_slices(), 1);
  EXPECT_DOUBLE_EQ(t->stranded(), 1.0 / 8);
  EXPECT_TRUE(t->CrossCheck().ok()) << t->CrossCheck().ToString();
}

TEST(ClusterTrackerTest, StaticOnlyCountsIdleInstancesOfTheExactProfile) {
  JobId next_job = 100;  // the busy instances' jobs
  // One A100: busy 3g.20gb@4, an idle 2g.10gb@0; 4 free slices.
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB")}, &tables);
  Plan p;
  AddInstanceSteps(c.gpu(0).model(), 0, "3g.20gb@4", &next_job, &p);
  AddInstanceSteps(c.gpu(0).model(), 0, "2g.10gb@0", nullptr, &p);
  ASSERT_TRUE(ApplyPlan(p, &c).ok());

  auto fixed = ClusterTracker::Create(c, /*creates_instances=*/false);
  ASSERT_TRUE(fixed.ok());
  fixed->AddDemand(AJob("1g.5gb").Named("1g.5gb"), +1);  // no idle 1g.5gb: stranded
  EXPECT_DOUBLE_EQ(fixed->stranded(), 1);
  fixed->AddDemand(AJob("2g.10gb").Named("2g.10gb"), +1);  // the idle 2g.10gb@0 takes it
  EXPECT_DOUBLE_EQ(fixed->stranded(), 0);
  EXPECT_TRUE(fixed->CrossCheck().ok()) << fixed->CrossCheck().ToString();

  auto dynamic = ClusterTracker::Create(c, /*creates_instances=*/true);
  ASSERT_TRUE(dynamic.ok());
  dynamic->AddDemand(AJob("1g.5gb").Named("1g.5gb"), +1);  // the idle 2g can be destroyed for it
  EXPECT_DOUBLE_EQ(dynamic->stranded(), 0);
}

TEST(ClusterTrackerTest, MediaVariantLimitedToOneInstance) {
  JobId next_job = 100;  // the busy instances' jobs
  // 1g.5gb+me allows 1 instance per GPU: with one busy, another cannot be
  // placed although 6 slices are free.
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB")}, &tables);
  Plan p;
  AddInstanceSteps(c.gpu(0).model(), 0, "1g.5gb+me@0", &next_job, &p);
  ASSERT_TRUE(ApplyPlan(p, &c).ok());
  auto t = ClusterTracker::Create(c, true);
  ASSERT_TRUE(t.ok());
  t->AddDemand(AJob("1g.5gb+me").Named("1g.5gb+me"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 1);
  t->AddDemand(AJob("1g.5gb").Named("1g.5gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 0);
  EXPECT_TRUE(t->CrossCheck().ok()) << t->CrossCheck().ToString();
}

}  // namespace
}  // namespace migsched
