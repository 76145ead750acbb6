// GPU snapshots of the online simulator (SimOptions::snapshot_times,
// snapshot_peak_frag; SimResult::snapshots), on a hand-worked trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

SimOptions SnapshotOptions() {
  static ManualClock clock;
  SimOptions o;
  o.clock = &clock;
  o.self_check = true;
  return o;
}

// One A100 40GB, frag-aware, r = 0.023 s per create:
//  t=0: a (4g.20gb, 100 s) placed on 4g@0 (its only placement); b (4g.20gb)
//       waits for it.
//  t=10: c (3g.20gb, 50 s) placed on 3g@4 (beside a); runs to 60 + r.
//  t=60+r: c ends, 3g@4 stays idle (frag-aware keeps idle instances).
//  t=100+r: a ends; b reuses the idle 4g@0 (no reconfiguration), to 200 + r.
// Both instances are 4 placement units wide (4g: 0-3; 3g: 4-7).
const std::vector<WorkloadJob> kJobs = {AJob("4g.20gb").Named("a").Runs(100),
                                        AJob("4g.20gb").Named("b").Runs(100),
                                        AJob("3g.20gb").Named("c").ArrivesAt(10).Runs(50)};

SnapshotInstance Inst(const std::string& profile, int start, JobId job) {
  return SnapshotInstance{profile, start, 4, job};
}

TEST(SnapshotTest, TakenAtTheRequestedTimesInOrder) {
  SimOptions o = SnapshotOptions();
  o.snapshot_times = {150, 5, 1000, 30};  // any order; 1000 is after the last event
  auto r = RunSimulation({&Model("A100-40GB")}, kJobs, "frag-aware", SchedulerOptions{}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->snapshots.size(), 4u);
  const auto& s = r->snapshots;
  EXPECT_EQ(s[0].time_s, 5);
  EXPECT_EQ(s[1].time_s, 30);
  EXPECT_EQ(s[2].time_s, 150);
  EXPECT_EQ(s[3].time_s, 1000);
  for (const ClusterSnapshot& c : s) {
    EXPECT_FALSE(c.peak_fragmentation);
    ASSERT_EQ(c.gpus.size(), 1u);
    EXPECT_EQ(c.gpus[0].model, "A100 40GB");
    EXPECT_EQ(c.gpus[0].placement_units, 8);
  }
  EXPECT_THAT(s[0].gpus[0].instances, ElementsAre(Inst("4g.20gb", 0, 0)));  // a
  EXPECT_THAT(s[1].gpus[0].instances, ElementsAre(Inst("4g.20gb", 0, 0), Inst("3g.20gb", 4, 2)));
  EXPECT_THAT(s[2].gpus[0].instances,
              ElementsAre(Inst("4g.20gb", 0, 1), Inst("3g.20gb", 4, kNoJob)));  // b; c's idle
  EXPECT_THAT(s[3].gpus[0].instances,
              ElementsAre(Inst("4g.20gb", 0, kNoJob), Inst("3g.20gb", 4, kNoJob)));
  // Busy compute slices over 7: 4 at t=5, 4 + 3 at t=30, 4 at t=150, none at the end.
  EXPECT_NEAR(s[0].utilization, 4.0 / 7, 1e-12);
  EXPECT_NEAR(s[1].utilization, 1.0, 1e-12);
  EXPECT_NEAR(s[2].utilization, 4.0 / 7, 1e-12);
  EXPECT_NEAR(s[3].utilization, 0.0, 1e-12);
}

TEST(SnapshotTest, AnInstantAtAnEventTimeSeesTheStateAfterIt) {
  // At t = 10 c is placed: the snapshot at 10 already has it.
  SimOptions o = SnapshotOptions();
  o.snapshot_times = {10};
  auto r = RunSimulation({&Model("A100-40GB")}, kJobs, "frag-aware", SchedulerOptions{}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->snapshots.size(), 1u);
  EXPECT_THAT(r->snapshots[0].gpus[0].instances,
              ElementsAre(Inst("4g.20gb", 0, 0), Inst("3g.20gb", 4, 2)));
}

TEST(SnapshotTest, PeakFragmentationIsAppendedLast) {
  SimOptions o = SnapshotOptions();
  o.snapshot_times = {5};
  o.snapshot_peak_frag = true;
  auto r = RunSimulation({&Model("A100-40GB")}, kJobs, "frag-aware", SchedulerOptions{}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->snapshots.size(), 2u);
  EXPECT_FALSE(r->snapshots[0].peak_fragmentation);
  const ClusterSnapshot& peak = r->snapshots[1];
  EXPECT_TRUE(peak.peak_fragmentation);
  // Its rate is the run's peak, and the FragCost of its one GPU.
  EXPECT_DOUBLE_EQ(peak.frag_rate, r->metrics.frag_peak);
  EXPECT_DOUBLE_EQ(peak.gpus[0].fragcost, r->metrics.frag_peak);
  // Taken at the first event time whose state has that rate (from the timeline).
  double first_peak_time = NAN;
  for (const TimelineSample& t : r->timeline) {
    if (t.frag_rate == r->metrics.frag_peak) {
      first_peak_time = t.time_s;
      break;
    }
  }
  EXPECT_EQ(peak.time_s, first_peak_time);
}

TEST(SnapshotTest, NoneUnlessAsked) {
  auto r = RunSimulation({&Model("A100-40GB")}, kJobs, "frag-aware", SchedulerOptions{},
                         SnapshotOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->snapshots, IsEmpty());
}

TEST(SnapshotTest, BadTimesAreRejected) {
  for (double t : {-1.0, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    SimOptions o = SnapshotOptions();
    o.snapshot_times = {5, t};
    Status st = o.Validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << t;
    EXPECT_THAT(st.message(), ::testing::HasSubstr("snapshot_times must be finite and >= 0, got"));
  }
}

}  // namespace
}  // namespace migsched
