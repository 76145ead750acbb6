// The fragmentation-free reference (sim/frag_free.h) on hand-worked traces.
// A100 40GB: 7 compute and 8 memory slices; 1g.5gb takes 1 and 1, 3g.20gb 3
// and 4 and may start only at units 0 or 4; r = 0.023 s per create/destroy.
#include "sim/frag_free.h"

#include <gmock/gmock.h>
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
using ::testing::HasSubstr;

SimOptions Options() {
  static ManualClock clock;
  SimOptions o;
  o.clock = &clock;
  return o;
}

SimResult Simulate(const std::vector<WorkloadJob>& jobs, const std::string& policy,
                   double max_wait_s = -1, int gpus = 1) {
  SchedulerOptions s;
  s.max_wait_s = max_wait_s;
  auto r = RunSimulation(std::vector<const GpuModel*>(gpus, &Model("A100-40GB")), jobs, policy, s,
                         Options());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// Seven 1g jobs at t = 0 fill units 0..6 (first fit: in arrival order); those
// at even units end at t = 10, those at 1, 3, 5 at t = 100. At t = 20 a 3g job
// arrives: 4 compute and 5 memory slices are free (3 and 4 needed), but
// neither 3g placement is clear (units 0-3 hold 1 and 3, units 4-7 hold 5).
std::vector<WorkloadJob> SlotRulesBlockAThreeSlice() {
  std::vector<WorkloadJob> jobs;
  for (int u = 0; u < 7; ++u) {
    jobs.push_back(AJob("1g.5gb").Named("s" + std::to_string(u)).Runs(u % 2 == 0 ? 10 : 100));
  }
  jobs.push_back(AJob("3g.20gb").Named("big").ArrivesAt(20).Runs(50));
  return jobs;
}

TEST(FragFreeReferenceTest, FitsWhereSlotRulesBlockARealPlacement) {
  const std::vector<WorkloadJob> jobs = SlotRulesBlockAThreeSlice();
  // Reference: the 3g starts at its arrival (free slices suffice), no
  // reconfiguration time: wait 0, JCT 50.
  SimResult ref = Simulate(jobs, std::string(kFragFreeReference));
  ASSERT_EQ(ref.jobs.size(), 8u);
  EXPECT_EQ(ref.metrics.policy, "frag-free-reference");
  EXPECT_DOUBLE_EQ(ref.jobs[7].wait_s, 0);
  EXPECT_DOUBLE_EQ(ref.jobs[7].jct_s, 50);
  EXPECT_DOUBLE_EQ(ref.jobs[0].jct_s, 10);  // the 1g jobs run from 0, no create time
  // first-fit: the 3g waits for the 1g jobs at 1, 3 and 5 to end at t = 100
  // (+ r to destroy, + r to create at the earliest): wait >= 80.
  SimResult ff = Simulate(jobs, "first-fit");
  ASSERT_EQ(ff.jobs.size(), 8u);
  EXPECT_GE(ff.jobs[7].wait_s, 80);
}

// Admission mode (--max-wait 0): the same 3g job is rejected by first-fit
// (no placement at its arrival) and admitted by the reference.
TEST(FragFreeReferenceTest, AdmitsInAdmissionModeWhatSlotRulesReject) {
  const std::vector<WorkloadJob> jobs = SlotRulesBlockAThreeSlice();
  SimResult ref = Simulate(jobs, std::string(kFragFreeReference), 0);
  EXPECT_EQ(ref.metrics.rejected, 0);
  SimResult ff = Simulate(jobs, "first-fit", 0);
  EXPECT_EQ(ff.metrics.rejected, 1);
  EXPECT_EQ(ff.jobs[7].outcome, JobOutcome::kRejected);
}

// The reference still counts slices: two 4g jobs (4 compute each) never share
// one GPU, so the second waits for the first (start at 100); a job waiting
// past --max-wait 30 is rejected with the simulator's reason.
TEST(FragFreeReferenceTest, QueuesWhenTheSlicesDoNotSuffice) {
  const std::vector<WorkloadJob> jobs = {AJob("4g.20gb").Named("a").Runs(100),
                                         AJob("4g.20gb").Named("b").Runs(100)};
  SimResult r = Simulate(jobs, std::string(kFragFreeReference));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 100);
  EXPECT_DOUBLE_EQ(r.metrics.makespan_s, 200);
  // Utilisation: 4 of 7 slices busy over [0, 200].
  EXPECT_NEAR(r.metrics.utilization, 4.0 / 7, 1e-12);
  SimResult w = Simulate(jobs, std::string(kFragFreeReference), 30);
  EXPECT_EQ(w.metrics.rejected, 1);
  EXPECT_EQ(w.jobs[1].reason, "waited longer than --max-wait");
}

// A gang runs on the lowest-index GPUs with room, all or nothing; a gang of
// three 7g on two GPUs can never run and is rejected at arrival.
TEST(FragFreeReferenceTest, PlacesGangsAllOrNothingAndRejectsTooLargeOnes) {
  const std::vector<WorkloadJob> jobs = {AJob("7g.40gb").Named("g2").Gang(2).Runs(10),
                                         AJob("7g.40gb").Named("g3").Gang(3).Runs(10)};
  SimResult r = Simulate(jobs, std::string(kFragFreeReference), -1, 2);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].instances, "0:7g.40gb;1:7g.40gb");
  EXPECT_EQ(r.jobs[1].outcome, JobOutcome::kRejected);
  EXPECT_THAT(r.jobs[1].reason, HasSubstr("at most 2 at once"));
}

// Regression: a fraction gang was named "2xgpu_fraction 0.5"; it is named by the profile it
// resolves to. 0.5 of the A100 40GB's 7 compute slices: 4g.20gb (3/7 < 0.5), 4 compute and 4
// memory slices, so one GPU holds min(7 / 4, 8 / 4) = 1.
TEST(FragFreeReferenceTest, FractionGangRejectionNamesTheResolvedProfile) {
  const std::vector<WorkloadJob> jobs = {AJob("").Fraction(0.5).Named("h").Gang(2).Runs(10)};
  SimResult r = Simulate(jobs, std::string(kFragFreeReference));
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r.jobs[0].reason,
            "gang of 2x4g.20gb instances (gpu_fraction 0.5) is larger than the cluster (at most 1 "
            "at once)");
}

// Regression: the reference counted its rejections but not their slice-hours (always 0), so in
// admission mode the "gap closed" of rejected slice-hours was measured against 0. Job b (4g.20gb:
// 4 compute slices, 100 s) waits past --max-wait 30: 4 x 100 / 3600 slice-hours; the gang of
// three 7g.40gb (21 slices, 10 s) can never run on two GPUs: 21 x 10 / 3600.
TEST(FragFreeReferenceTest, RejectedJobsCountTheirSliceHours) {
  const std::vector<WorkloadJob> waits = {AJob("4g.20gb").Named("a").Runs(100),
                                          AJob("4g.20gb").Named("b").Runs(100)};
  SimResult w = Simulate(waits, std::string(kFragFreeReference), 30);
  EXPECT_EQ(w.metrics.rejected, 1);
  EXPECT_DOUBLE_EQ(w.metrics.rejected_slice_hours, 400.0 / 3600);
  const std::vector<WorkloadJob> never = {AJob("7g.40gb").Named("g3").Gang(3).Runs(10)};
  SimResult n = Simulate(never, std::string(kFragFreeReference), -1, 2);
  EXPECT_DOUBLE_EQ(n.metrics.rejected_slice_hours, 210.0 / 3600);
}

// Regression: the reference ran every job to its end, past its time limit, where every policy
// ends it there (outcome timeout), so it ran other work than the runs it is set beside. Job a
// (4g.20gb, 1000 s of work, limit 500) ends at 500 as a timeout; b (4g.20gb, 100 s), which
// cannot share the GPU with it, starts at 500 and ends at 600.
TEST(FragFreeReferenceTest, AJobStillRunningAtItsLimitEndsThereAsTimeout) {
  const std::vector<WorkloadJob> jobs = {AJob("4g.20gb").Named("a").Runs(1000).Limit(500),
                                         AJob("4g.20gb").Named("b").Runs(100).Limit(500)};
  SimResult r = Simulate(jobs, std::string(kFragFreeReference));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kTimeout);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 500);
  EXPECT_DOUBLE_EQ(r.jobs[0].time_limit_s, 500);
  EXPECT_EQ(r.jobs[1].outcome, JobOutcome::kCompleted);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 500);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_s, 600);
  EXPECT_EQ(r.metrics.jobs_timeout, 1);
  EXPECT_EQ(r.metrics.jobs_completed, 1);
  EXPECT_DOUBLE_EQ(r.metrics.makespan_s, 600);
}

// Regression frag_free_timeline_after_the_last_job: the reference sampled its timeline at the
// time limits of jobs that had long completed. One 3g.20gb (limit 1000 s) runs 0-100 and one
// 1g.5gb (limit 86400 s) 10-60: the timeline's instants are the arrivals and completions, 0, 10,
// 60 and 100, and nothing after the makespan (100 s).
TEST(FragFreeReferenceTest, TimelineEndsAtTheLastCompletionNotAtStaleTimeLimits) {
  const std::vector<WorkloadJob> jobs = {
      AJob("3g.20gb").Named("a").Runs(100).Limit(1000),
      AJob("1g.5gb").Named("b").ArrivesAt(10).Runs(50).Limit(86400)};
  SchedulerOptions s;
  SimOptions o = Options();
  o.record_timeline = true;
  auto r = RunSimulation({&Model("A100-40GB")}, jobs, std::string(kFragFreeReference), s, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> times;
  for (const TimelineSample& t : r->timeline) times.push_back(t.time_s);
  EXPECT_THAT(times, ::testing::ElementsAre(0, 10, 60, 100));
  EXPECT_DOUBLE_EQ(r->metrics.makespan_s, 100);
}

// Regression: the reference left the arrival-window figures at 0. Arrivals at 0 (3g.20gb, 10 s)
// and 50 (1g.5gb): over the window [0, 50] 3 slices were busy for 10 s of 7 x 50 slice-seconds
// (utilisation 30 / 350 = 3/35), and one job completed: 1 / (50 / 86400) = 1728 jobs a day.
TEST(FragFreeReferenceTest, ArrivalWindowFiguresAreTheWindows) {
  const std::vector<WorkloadJob> jobs = {AJob("3g.20gb").Named("a").Runs(10),
                                         AJob("1g.5gb").Named("b").ArrivesAt(50).Runs(10)};
  SimResult r = Simulate(jobs, std::string(kFragFreeReference));
  EXPECT_DOUBLE_EQ(r.metrics.arrival_window_s, 50);
  EXPECT_NEAR(r.metrics.utilization_arrival_window, 3.0 / 35, 1e-12);
  EXPECT_NEAR(r.metrics.jobs_per_day_arrival_window, 1728, 1e-9);
  EXPECT_GT(r.metrics.energy_kwh_arrival_window, 0);
}

TEST(FragFreeReferenceTest, RunsInOnlineModeOnly) {
  SimOptions o = Options();
  o.mode = SimMode::kFill;
  auto r = RunFragFreeReference({&Model("A100-40GB")}, {AJob("1g.5gb")}, -1, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("online mode only"));
}

}  // namespace
}  // namespace migsched
