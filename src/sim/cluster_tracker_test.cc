#include "sim/cluster_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/instance_list.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;

Job Wants(const std::string& profile) {
  Job j;
  j.name = profile;
  j.profile = profile;
  j.duration_s = 1;
  return j;
}

// Appends the steps creating `list` on `gpu` (busy with fresh job ids, or idle).
void AddInstances(const Cluster& c, int gpu, const std::string& list, bool busy, Plan* plan) {
  static JobId next = 100;
  auto specs = ParseInstanceList(list, c.gpu(gpu).model());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  for (const InstanceSpec& in : *specs) {
    plan->steps.push_back({StepKind::kCreate, gpu, in.profile, in.start, kNoJob});
    if (busy) plan->steps.push_back({StepKind::kStart, gpu, in.profile, in.start, next++});
  }
}

TEST(ClusterTrackerTest, TotalsAndStrandedFollowThePlans) {
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB"), &Model("A100-40GB")}, &tables);
  Plan p1;
  AddInstances(c, 0, "4g.20gb@0", true, &p1);
  ASSERT_TRUE(ApplyPlan(p1, &c).ok());
  auto t = ClusterTracker::Create(c, /*creates_instances=*/true);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->busy_compute_slices(), 4);
  EXPECT_DOUBLE_EQ(t->utilization(), 4.0 / 14);
  EXPECT_DOUBLE_EQ(t->fragmentation_rate(), 0);  // FragCost(4g@0) = FragCost(empty) = 0
  EXPECT_DOUBLE_EQ(t->stranded(), 0);            // empty queue

  // A 7g.40gb waits: GPU 0 (3 free slices) cannot take it, GPU 1 (7) can: 3/10.
  t->AddDemand(Wants("7g.40gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 3.0 / 10);
  EXPECT_EQ(t->stranded_compute_slices(), 3);
  // A 3g.20gb waits too: it fits GPU 0 at 4, so nothing is stranded.
  t->AddDemand(Wants("3g.20gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 0);
  t->AddDemand(Wants("3g.20gb"), -1);
  EXPECT_DOUBLE_EQ(t->stranded(), 3.0 / 10);

  // 3g.20gb@0 starts on GPU 1: 4 slices free there, no 7g fits anywhere: 7/7.
  Plan p2;
  AddInstances(c, 1, "3g.20gb@0", true, &p2);
  ASSERT_TRUE(ApplyPlan(p2, &c).ok());
  t->Refresh(p2);
  EXPECT_EQ(t->busy_compute_slices(), 7);
  EXPECT_DOUBLE_EQ(t->utilization(), 0.5);
  EXPECT_NEAR(t->fragmentation_rate(), 0.35 / 2, 1e-12);  // FragCost(3g@0) = 0.35 (§2 table)
  EXPECT_DOUBLE_EQ(t->stranded(), 1);
  EXPECT_TRUE(t->CrossCheck().ok()) << t->CrossCheck().ToString();
}

TEST(ClusterTrackerTest, StaticOnlyCountsIdleInstancesOfTheExactProfile) {
  // One A100: busy 3g.20gb@4, an idle 2g.10gb@0; 4 free slices.
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB")}, &tables);
  Plan p;
  AddInstances(c, 0, "3g.20gb@4", true, &p);
  AddInstances(c, 0, "2g.10gb@0", false, &p);
  ASSERT_TRUE(ApplyPlan(p, &c).ok());

  auto fixed = ClusterTracker::Create(c, /*creates_instances=*/false);
  ASSERT_TRUE(fixed.ok());
  fixed->AddDemand(Wants("1g.5gb"), +1);  // no idle 1g.5gb: stranded
  EXPECT_DOUBLE_EQ(fixed->stranded(), 1);
  fixed->AddDemand(Wants("2g.10gb"), +1);  // the idle 2g.10gb@0 takes it
  EXPECT_DOUBLE_EQ(fixed->stranded(), 0);
  EXPECT_TRUE(fixed->CrossCheck().ok()) << fixed->CrossCheck().ToString();

  auto dynamic = ClusterTracker::Create(c, /*creates_instances=*/true);
  ASSERT_TRUE(dynamic.ok());
  dynamic->AddDemand(Wants("1g.5gb"), +1);  // the idle 2g can be destroyed for it
  EXPECT_DOUBLE_EQ(dynamic->stranded(), 0);
}

TEST(ClusterTrackerTest, MediaVariantLimitedToOneInstance) {
  // 1g.5gb+me allows 1 instance per GPU: with one busy, another cannot be
  // placed although 6 slices are free.
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB")}, &tables);
  Plan p;
  AddInstances(c, 0, "1g.5gb+me@0", true, &p);
  ASSERT_TRUE(ApplyPlan(p, &c).ok());
  auto t = ClusterTracker::Create(c, true);
  ASSERT_TRUE(t.ok());
  t->AddDemand(Wants("1g.5gb+me"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 1);
  t->AddDemand(Wants("1g.5gb"), +1);
  EXPECT_DOUBLE_EQ(t->stranded(), 0);
  EXPECT_TRUE(t->CrossCheck().ok()) << t->CrossCheck().ToString();
}

}  // namespace
}  // namespace migsched
