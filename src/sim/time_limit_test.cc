// Time limits and run-time knowledge (sim/knowledge.h, sim/user_estimates.h):
// a job still running at its limit is ended there (outcome timeout, counted
// apart from completed jobs); the scheduler is given only the request
// (SchedulerVisibleJob); under `limits` knowledge a running job's expected
// end is start + limit. Hand-worked traces on one A100 40GB, contention off.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sched/policy.h"
#include "sim/knowledge.h"
#include "sim/simulator.h"
#include "sim/user_estimates.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::BundledCatalog;

const JobRecord& Named(const SimResult& r, const std::string& name) {
  for (const JobRecord& j : r.jobs) {
    if (j.name == name) return j;
  }
  ADD_FAILURE() << "no job " << name;
  static const JobRecord none;
  return none;
}

SimResult RunOneGpu(const std::vector<WorkloadJob>& jobs, const std::string& policy, SimOptions so,
                    SchedulerOptions o = {}) {
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("1xA100-40GB", BundledCatalog());
  EXPECT_TRUE(models.ok());
  so.contention = false;
  so.self_check = true;
  StatusOr<SimResult> r = RunSimulation(*models, jobs, policy, o, so);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// Three 1g.5gb jobs, no reconfiguration cost, all fit at once:
//   a: arrives 0, runs 100 s, limit 50  -> starts 0, ended at 0 + 50 (timeout)
//   b: arrives 0, runs 100 s, limit 200 -> completes at 100
//   c: arrives 10, runs 30 s, no limit  -> completes at 40
// Completed: b (JCT 100), c (JCT 30): mean 65; a is counted apart. Makespan:
// first arrival 0 to the last end 100. Accepted (ran): 3.
TEST(TimeLimitTest, AJobStillRunningAtItsLimitEndsThereAsTimeout) {
  const std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Named("a").Runs(100).Limit(50),
                                         AJob("1g.5gb").Named("b").Runs(100).Limit(200),
                                         AJob("1g.5gb").Named("c").ArrivesAt(10).Runs(30)};
  SimOptions so;
  so.reconfig_ms = 0;
  const SimResult r = RunOneGpu(jobs, "first-fit", so);
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_EQ(Named(r, "a").outcome, JobOutcome::kTimeout);
  EXPECT_DOUBLE_EQ(Named(r, "a").end_s, Named(r, "a").start_s + 50);
  EXPECT_DOUBLE_EQ(Named(r, "a").end_s, 50);
  EXPECT_DOUBLE_EQ(Named(r, "a").time_limit_s, 50);
  EXPECT_EQ(Named(r, "b").outcome, JobOutcome::kCompleted);
  EXPECT_DOUBLE_EQ(Named(r, "b").end_s, 100);
  EXPECT_EQ(Named(r, "c").outcome, JobOutcome::kCompleted);
  EXPECT_DOUBLE_EQ(Named(r, "c").end_s, 40);
  EXPECT_EQ(r.metrics.jobs_completed, 2);
  EXPECT_EQ(r.metrics.jobs_timeout, 1);
  EXPECT_EQ(r.metrics.accepted, 3);
  EXPECT_DOUBLE_EQ(r.metrics.jct_mean_s, 65);
  EXPECT_DOUBLE_EQ(r.metrics.makespan_s, 100);
  EXPECT_EQ(r.metrics.per_profile.at("1g.5gb").timeout, 1);
  EXPECT_EQ(r.metrics.per_profile.at("1g.5gb").jobs, 3);
}

// Regression (all_jobs_timed_out_gave_a_makespan_of_zero): when every job ended at its limit the
// makespan was 0, and with it the utilisation and the energy. By hand, one A100 (7 compute
// slices), no reconfiguration cost: a (1g.5gb, runs 100 s, limit 50) from 0 to 50, b (3g.20gb,
// runs 100 s, limit 40, arrives 20) from 20 to 60. Makespan 0 to 60; busy compute slices
// 1 x 50 + 3 x 40 = 170 slice-seconds over 7 x 60: utilisation 170 / 420.
TEST(TimeLimitTest, WhenEveryJobEndsAtItsLimitTheMakespanIsStillTheirs) {
  const std::vector<WorkloadJob> jobs = {
      AJob("1g.5gb").Named("a").Runs(100).Limit(50),
      AJob("3g.20gb").Named("b").ArrivesAt(20).Runs(100).Limit(40)};
  SimOptions so;
  so.reconfig_ms = 0;
  const SimResult r = RunOneGpu(jobs, "first-fit", so);
  EXPECT_EQ(r.metrics.jobs_completed, 0);
  EXPECT_EQ(r.metrics.jobs_timeout, 2);
  EXPECT_DOUBLE_EQ(r.metrics.makespan_s, 60);
  EXPECT_NEAR(r.metrics.utilization, 170.0 / 420.0, 1e-9);
}

// A job whose work ends exactly at its limit completes (its completion is due
// at the same instant): 1g.5gb running 100 s with limit 100 ends at 100, completed.
TEST(TimeLimitTest, WorkDoneExactlyAtTheLimitCompletes) {
  SimOptions so;
  so.reconfig_ms = 0;
  const SimResult r = RunOneGpu({AJob("1g.5gb").Named("a").Runs(100).Limit(100)}, "first-fit", so);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kCompleted);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 100);
  EXPECT_EQ(r.metrics.jobs_timeout, 0);
}

// What the scheduler is given of a job: the request, with a time limit per
// mode (the type Job has no field for the run's truth: the compiler keeps
// duration, PCIe demand and alpha from every policy).
TEST(TimeLimitTest, SchedulerVisibleJobHidesTheRunsTruth) {
  const WorkloadJob job =
      AJob("3g.20gb").Named("x").ArrivesAt(7).Gang(2).Runs(100).Limit(300).Pcie(5, 2).Moves(
          Migratable::kCheckpoint);
  const Job limits = SchedulerVisibleJob(job, Knowledge::kLimits);
  EXPECT_EQ(limits.time_limit_s, 300);  // the limit, not the 100 s it runs
  EXPECT_EQ(limits.profile, "3g.20gb");
  EXPECT_EQ(limits.count, 2);
  EXPECT_EQ(limits.arrival_s, 7);
  EXPECT_EQ(limits.name, "x");
  EXPECT_EQ(limits.migratable, Migratable::kCheckpoint);
  // The oracle: a limit equal to the exact run time.
  EXPECT_EQ(SchedulerVisibleJob(job, Knowledge::kKnown).time_limit_s, 100);
  const WorkloadJob capped = AJob("3g.20gb").Runs(100).Limit(50);
  EXPECT_EQ(SchedulerVisibleJob(capped, Knowledge::kKnown).time_limit_s, 50);  // ends at its limit
  const Job unknown = SchedulerVisibleJob(job, Knowledge::kUnknown);
  EXPECT_EQ(unknown.time_limit_s, 0);
  EXPECT_EQ(unknown.profile, "3g.20gb");
  const WorkloadJob no_limit = AJob("3g.20gb").Runs(100);
  EXPECT_EQ(SchedulerVisibleJob(no_limit, Knowledge::kLimits).time_limit_s, 0);
  EXPECT_EQ(SchedulerVisibleJob(no_limit, Knowledge::kKnown).time_limit_s, 100);
}

// The look-ahead reservation of expected_ends_test.cc's trace, under `limits`
// (r = 0.023 s per create/destroy, full's defaults with
// --reservation-unknown-ends strict): a: 4g.20gb at 0 for 10000 s, limit
// 10000; b: 7g.40gb at 1 for 10000 s, limit 10000; c: 3g.20gb at 2000 for
// 100 s. At 2000 b (waited 1999 s > 1800 s) reserves the whole GPU from a's
// expected end, start + limit = r + 10000, with slack 1 x b's limit 10000:
// until 20000 + r.
//  * c's limit 100: 2000 + 100 <= 20000 + r: c backfills at once (2000 + r),
//    ends at 2100 + r (its work ends exactly at its limit: completed).
//  * c's limit 20000 (an overestimate): 2000 + 20000 > 20000 + r: c may not
//    use the reserved GPU and waits; at a's end b is placed (starts 10000 +
//    3r) and c only after b (20000 + 5r), as with unknown ends.
TEST(TimeLimitTest, LimitsKnowledgeUsesStartPlusLimitForTheReservation) {
  SchedulerOptions o = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  o.reservation_needs_ends = false;
  o.reservation_horizon_s = -1;  // b's start, 8000 s ahead at 2000, is reserved (see below)
  constexpr double kR = 0.023;
  auto jobs_with_c_limit = [](double c_limit) {
    return std::vector<WorkloadJob>{
        AJob("4g.20gb").Named("a").Runs(10000).Limit(10000),
        AJob("7g.40gb").Named("b").ArrivesAt(1).Runs(10000).Limit(10000),
        AJob("3g.20gb").Named("c").ArrivesAt(2000).Runs(100).Limit(c_limit)};
  };
  SimOptions so;
  ASSERT_EQ(so.knowledge, Knowledge::kLimits);  // the default
  SimResult r = RunOneGpu(jobs_with_c_limit(100), "full", so, o);
  EXPECT_NEAR(Named(r, "c").start_s, 2000 + kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").end_s, 2100 + kR, 1e-6);
  EXPECT_EQ(Named(r, "c").outcome, JobOutcome::kCompleted);
  r = RunOneGpu(jobs_with_c_limit(20000), "full", so, o);
  EXPECT_NEAR(Named(r, "b").start_s, 10000 + 3 * kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").start_s, 20000 + 5 * kR, 1e-6);
  EXPECT_EQ(r.metrics.jobs_timeout, 0);
  // With full's reservation horizon (2 h) b's start, 10000 + r, is 8000 s ahead at 2000: no
  // reservation is made, so the overestimated c starts at once (2000 + r, 100 s of work), and b
  // still starts right after a (a's 4g and c's idle 3g destroyed, 7g created: by 10000 + 4r).
  o.reservation_horizon_s = 7200;
  r = RunOneGpu(jobs_with_c_limit(20000), "full", so, o);
  EXPECT_NEAR(Named(r, "c").start_s, 2000 + kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").end_s, 2100 + kR, 1e-6);
  EXPECT_GT(Named(r, "b").start_s, 10000 + kR);
  EXPECT_LE(Named(r, "b").start_s, 10000 + 4 * kR + 1e-6);
}

// Admission mode (--max-wait 0) on one A100 40GB, no reconfiguration cost:
//   a: 7g.40gb at 0 for 100 s: takes the whole GPU, accepted;
//   b: 3g.20gb at 10 for 7200 s: no room, rejected: 3 slices x 2 h = 6 slice-hours;
//   c: 2x1g.5gb at 20 for 1800 s: rejected: 2 x 1 slice x 0.5 h = 1 slice-hour.
// Rejected slice-hours 7; rejection rate 1 for 3g.20gb and 2x1g.5gb, 0 for
// 7g.40gb; no migrations, 1 accepted job: 0 migrations per accepted job.
TEST(TimeLimitTest, AdmissionModeCountsRejectedSliceHoursAndRatePerProfile) {
  const std::vector<WorkloadJob> jobs = {
      AJob("7g.40gb").Named("a").Runs(100), AJob("3g.20gb").Named("b").ArrivesAt(10).Runs(7200),
      AJob("1g.5gb").Named("c").ArrivesAt(20).Gang(2).Runs(1800)};
  SimOptions so;
  so.reconfig_ms = 0;
  SchedulerOptions o;
  o.max_wait_s = 0;
  const SimResult r = RunOneGpu(jobs, "first-fit", so, o);
  EXPECT_EQ(r.metrics.rejected, 2);
  EXPECT_DOUBLE_EQ(r.metrics.rejected_slice_hours, 7);
  EXPECT_EQ(r.metrics.accepted, 1);
  EXPECT_DOUBLE_EQ(r.metrics.migrations_per_accepted_job, 0);
  EXPECT_DOUBLE_EQ(r.metrics.per_profile.at("3g.20gb").rejection_rate, 1);
  EXPECT_DOUBLE_EQ(r.metrics.per_profile.at("3g.20gb").rejected_slice_hours, 6);
  EXPECT_DOUBLE_EQ(r.metrics.per_profile.at("2x1g.5gb").rejection_rate, 1);
  EXPECT_DOUBLE_EQ(r.metrics.per_profile.at("2x1g.5gb").rejected_slice_hours, 1);
  EXPECT_DOUBLE_EQ(r.metrics.per_profile.at("7g.40gb").rejection_rate, 0);
}

TEST(UserEstimatesTest, PopularValuesRoundUp) {
  EXPECT_EQ(PopularLimitAtLeast(1), 60);
  EXPECT_EQ(PopularLimitAtLeast(60), 60);
  EXPECT_EQ(PopularLimitAtLeast(3601), 7200);
  EXPECT_EQ(PopularLimitAtLeast(86400), 86400);
  EXPECT_EQ(PopularLimitAtLeast(8 * 86400.0), 14 * 86400.0);  // past 7 days: whole weeks
  EXPECT_TRUE(std::is_sorted(PopularLimits().begin(), PopularLimits().end()));
}

// 20000 jobs of non-round durations in [1000, 4700) s: about 10% get their
// duration as limit (binomial sd 0.2%: checked within 1.5%), every limit
// covers its duration, the median overestimate exceeds 4x (ours: at least
// the 57th percentile of the log-uniform factor, 20^0.57 = 5.5, rounded up),
// given limits are kept, the same seed gives the same limits and another does not.
TEST(UserEstimatesTest, ModelIsSeededAndMostlyOverestimates) {
  std::vector<WorkloadJob> jobs;
  for (int i = 0; i < 20000; ++i) {
    jobs.push_back(AJob("1g.5gb").Named("j" + std::to_string(i)).Runs(1000 + i * 0.185));
  }
  jobs[5] = AJob("1g.5gb").Named("given").Runs(50).Limit(77);
  std::vector<WorkloadJob> a = jobs, b = jobs, c = jobs;
  ASSERT_EQ(*AssignUserEstimates(&a, 42), 19999);
  ASSERT_TRUE(AssignUserEstimates(&b, 42).ok());
  ASSERT_TRUE(AssignUserEstimates(&c, 43).ok());
  EXPECT_EQ(a[5].time_limit_s, 77);
  int at_limit = 0, same_b = 0, same_c = 0;
  std::vector<double> ratio;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a[i].time_limit_s, a[i].duration_s) << i;
    if (i == 5) continue;
    at_limit += a[i].time_limit_s == a[i].duration_s;
    same_b += a[i].time_limit_s == b[i].time_limit_s;
    same_c += a[i].time_limit_s == c[i].time_limit_s;
    ratio.push_back(a[i].time_limit_s / a[i].duration_s);
  }
  EXPECT_NEAR(at_limit / 19999.0, 0.1, 0.015);
  EXPECT_EQ(same_b, 19999);
  EXPECT_LT(same_c, 19999);
  std::nth_element(ratio.begin(), ratio.begin() + ratio.size() / 2, ratio.end());
  EXPECT_GT(ratio[ratio.size() / 2], 4);
}

TEST(UserEstimatesTest, BadOptionsAreRefused) {
  std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Runs(10)};
  UserEstimateOptions o;
  o.at_limit_share = 0.9;
  o.site_max_share = 0.2;
  EXPECT_FALSE(AssignUserEstimates(&jobs, 1, o).ok());
  o = {};
  o.max_factor = 0.5;
  EXPECT_FALSE(AssignUserEstimates(&jobs, 1, o).ok());
}

}  // namespace
}  // namespace migsched
