// Fill mode (§9, FGD's method) on hand traces.
#include "sim/fill_mode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

SimOptions FillOptions() {
  static ManualClock clock;
  SimOptions o;
  o.mode = SimMode::kFill;
  o.clock = &clock;
  return o;
}

TEST(FillModeTest, OneFullGpuJob) {
  // 1 × A100 (7 slices), target 1.3 × 7 = 9.1. Arrival 1: 7g, requested 7 =
  // 100%: placed; steps 5%..100% (20 points) reached at once. Arrival 2: 7g,
  // requested 14: no room; steps 105%..130% (6 points). 14 >= 9.1: stop.
  auto r = RunSimulation({&Model("A100-40GB")}, {AJob("7g.40gb").Named("7g.40gb")}, "first-fit",
                         SchedulerOptions{}, FillOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->fill_curve.size(), 26u);
  EXPECT_DOUBLE_EQ(r->fill_curve[0].target_share, 0.05);
  EXPECT_DOUBLE_EQ(r->fill_curve[19].target_share, 1.0);
  EXPECT_DOUBLE_EQ(r->fill_curve[19].acceptance, 1.0);
  EXPECT_DOUBLE_EQ(r->fill_curve[19].allocation, 1.0);
  EXPECT_DOUBLE_EQ(r->fill_curve[20].target_share, 1.05);
  EXPECT_DOUBLE_EQ(r->fill_curve[20].requested_share, 2.0);
  EXPECT_DOUBLE_EQ(r->fill_curve[20].acceptance, 0.5);
  EXPECT_DOUBLE_EQ(r->fill_curve[25].target_share, 1.3);
  const Metrics& m = r->metrics;
  EXPECT_EQ(m.mode, "fill");
  EXPECT_EQ(m.jobs_total, 2);
  EXPECT_EQ(m.fill_placed, 1);
  EXPECT_EQ(m.rejected, 1);
  EXPECT_DOUBLE_EQ(m.fill_allocation, 1.0);
  EXPECT_DOUBLE_EQ(m.fill_acceptance, 0.5);
  EXPECT_DOUBLE_EQ(m.fill_frag, 0.0);  // a full GPU has FragCost 0
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kPlaced);
  EXPECT_EQ(r->jobs[0].instances, "0:7g.40gb@0");
  EXPECT_EQ(r->jobs[1].outcome, JobOutcome::kFailed);
  EXPECT_EQ(r->jobs[1].id, 0);  // the workload's only job, taken again
}

TEST(FillModeTest, CyclesThroughAMixedWorkload) {
  // Workload [3g.20gb, 1g.5gb] cycled on 1 × A100, first-fit; share step k is
  // reached when 20 × requested >= 7k.
  //  1. 3g: req 3 (k <= 8),  3g@0 placed.   alloc 3/7, acc 1,   FragCost{3g@0} = 0.35
  //  2. 1g: req 4 (k <= 11), 1g@4 placed.   alloc 4/7, acc 1,   FragCost{3g@0,1g@4} = 4/9
  //  3. 3g: req 7 (k <= 20), 3g@4 overlaps 1g@4: failed.  acc 2/3
  //  4. 1g: req 8 (k <= 22), 1g@5 placed.   alloc 5/7, acc 3/4, FragCost = 0.5
  //  5. 3g: req 11 (k <= 26 = 130%), failed. acc 3/5. 11 >= 9.1: stop.
  // FragCost{3g@0,1g@4}: 1g.5gb 2 of 3, 1g.10gb 1 of 1, 2g 0 of 1 (3g, 4g, 7g
  // no capacity): 1 - (2/3 + 1 + 0)/3 = 4/9. With 1g@5 too: 1g.5gb 1 of 2:
  // 1 - (1/2 + 1 + 0)/3 = 0.5 (both as in cases/fragcost-a100-40gb.json).
  auto r = RunSimulation({&Model("A100-40GB")},
                         {AJob("3g.20gb").Named("3g.20gb"), AJob("1g.5gb").Named("1g.5gb")},
                         "first-fit", SchedulerOptions{}, FillOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->fill_curve.size(), 26u);
  struct Want {
    int k;  // 1-based step
    double allocation, acceptance, frag;
    int64_t arrived;
  } wants[] = {{1, 3.0 / 7, 1, 0.35, 1},           {8, 3.0 / 7, 1, 0.35, 1},
               {9, 4.0 / 7, 1, 4.0 / 9, 2},        {11, 4.0 / 7, 1, 4.0 / 9, 2},
               {12, 4.0 / 7, 2.0 / 3, 4.0 / 9, 3}, {20, 4.0 / 7, 2.0 / 3, 4.0 / 9, 3},
               {21, 5.0 / 7, 0.75, 0.5, 4},        {22, 5.0 / 7, 0.75, 0.5, 4},
               {23, 5.0 / 7, 0.6, 0.5, 5},         {26, 5.0 / 7, 0.6, 0.5, 5}};
  for (const Want& w : wants) {
    const FillPoint& p = r->fill_curve[w.k - 1];
    EXPECT_NEAR(p.target_share, w.k * 0.05, 1e-12) << "step " << w.k;
    EXPECT_NEAR(p.allocation, w.allocation, 1e-12) << "step " << w.k;
    EXPECT_NEAR(p.acceptance, w.acceptance, 1e-12) << "step " << w.k;
    EXPECT_NEAR(p.frag_rate, w.frag, 1e-6) << "step " << w.k;
    EXPECT_EQ(p.arrived, w.arrived) << "step " << w.k;
  }
  const Metrics& m = r->metrics;
  EXPECT_EQ(m.jobs_total, 5);
  EXPECT_EQ(m.fill_placed, 3);
  EXPECT_NEAR(m.fill_allocation, 5.0 / 7, 1e-12);
  EXPECT_NEAR(m.fill_acceptance, 0.6, 1e-12);
  EXPECT_NEAR(m.fill_frag, 0.5, 1e-9);
  EXPECT_EQ(m.creates, 3);
  EXPECT_EQ(m.reuses, 0);
}

TEST(FillModeTest, NothingOfferableIsAnError) {
  auto r = RunSimulation({&Model("A30-24GB")}, {AJob("7g.40gb").Named("7g.40gb")}, "first-fit",
                         SchedulerOptions{}, FillOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "fill mode: no job of the workload asks for a profile that the cluster's GPU models "
            "(1x A30 24GB) offer, so the requested load can never grow");
}

}  // namespace
}  // namespace migsched
