#include "sim/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace migsched {
namespace {

TEST(PercentileTest, LinearInterpolationBetweenClosestRanks) {
  // v = 15 20 35 40 50 (n = 5), h = 4p/100.
  const std::vector<double> v = {40, 15, 50, 35, 20};  // unsorted on purpose
  struct Case {
    double p, want;
  } cases[] = {
      {0, 15},     // h = 0
      {25, 20},    // h = 1
      {40, 29},    // h = 1.6: 20 + 0.6 × 15
      {50, 35},    // h = 2
      {95, 48},    // h = 3.8: 40 + 0.8 × 10
      {99, 49.6},  // h = 3.96: 40 + 0.96 × 10
      {100, 50},   // h = 4
  };
  for (const Case& c : cases) EXPECT_NEAR(Percentile(v, c.p), c.want, 1e-12) << "p" << c.p;
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({7}, 99), 7);
  EXPECT_EQ(Percentile({1, 2}, 50), 1.5);
}

TEST(TimeIntegralsTest, PiecewiseConstantAreas) {
  TimeIntegrals t;
  // {busy slices, frag rate, stranded share, stranded slices}
  t.Sample(0, {5, 0.9, 0.5, 1});  // replaced by the next (held for no time)
  t.Sample(0, {2, 0.2, 1, 4});
  t.Sample(50, {1, 0.3, 0, 0});
  t.Sample(100, {0, 0, 0, 0});
  t.Finish(100);
  EXPECT_DOUBLE_EQ(t.busy_area(), 2 * 50 + 1 * 50);
  EXPECT_DOUBLE_EQ(t.frag_area(), 0.2 * 50 + 0.3 * 50);
  EXPECT_DOUBLE_EQ(t.stranded_area(), 1 * 50);
  EXPECT_DOUBLE_EQ(t.stranded_slices_area(), 4 * 50);
  EXPECT_DOUBLE_EQ(t.frag_peak(), 0.3);  // 0.9 held for no time

  TimeIntegrals open;
  open.Sample(10, {3, 0.5, 0, 0});
  open.Finish(14);  // the last state holds until the end
  EXPECT_DOUBLE_EQ(open.busy_area(), 12);
  EXPECT_DOUBLE_EQ(open.frag_peak(), 0.5);
}

TEST(CountPlanTest, CreatesDestroysAndReuses) {
  Plan p;
  p.steps = {{StepKind::kDestroy, 0, 1, 0, kNoJob},  // an idle instance in the way
             {StepKind::kCreate, 0, 3, 0, kNoJob},
             {StepKind::kStart, 0, 3, 0, 7},  // on the instance just created
             {StepKind::kStart, 1, 3, 4, 7},  // on an existing idle one: reuse
             {StepKind::kRelease, 2, 1, 0, 5}};
  Metrics m;
  CountPlan(p, &m);
  EXPECT_EQ(m.creates, 1);
  EXPECT_EQ(m.destroys, 1);
  EXPECT_EQ(m.reuses, 1);
  EXPECT_EQ(m.reconfigurations, 2);
  CountPlan(p, &m);  // accumulates
  EXPECT_EQ(m.reconfigurations, 4);
}

TEST(JobStatsTest, OverallAndPerProfile) {
  JobStats s;
  s.AddCompleted("1g.5gb", 0, 0, 10, 5);     // wait 0, jct 10, slowdown 2, bounded 1 (10 s floor)
  s.AddCompleted("1g.5gb", 5, 15, 35, 20);   // wait 10, jct 30, slowdown 1.5, bounded 1.5
  s.AddCompleted("7g.40gb", 0, 20, 60, 40);  // wait 20, jct 60, slowdown 1.5, bounded 1.5
  s.AddRejected("7g.40gb");
  Metrics m;
  s.Fill(&m);
  EXPECT_EQ(m.jobs_completed, 3);
  EXPECT_EQ(m.rejected, 1);
  EXPECT_DOUBLE_EQ(m.jct_mean_s, 100.0 / 3);
  EXPECT_DOUBLE_EQ(m.jct_p50_s, 30);  // {10, 30, 60}
  EXPECT_DOUBLE_EQ(m.wait_mean_s, 10);
  EXPECT_DOUBLE_EQ(m.wait_p95_s, 19);                  // {0, 10, 20}: h = 1.9 -> 10 + 0.9 × 10
  EXPECT_DOUBLE_EQ(m.duration_mean_s, 65.0 / 3);       // the zero-wait floor: (5 + 20 + 40) / 3
  EXPECT_DOUBLE_EQ(m.slowdown_mean, 5.0 / 3);          // (2 + 1.5 + 1.5) / 3
  EXPECT_DOUBLE_EQ(m.slowdown_p95, 1.95);              // {1.5, 1.5, 2}: h = 1.9 -> 1.5 + 0.9 × 0.5
  EXPECT_DOUBLE_EQ(m.bounded_slowdown_mean, 4.0 / 3);  // (1 + 1.5 + 1.5) / 3
  ASSERT_EQ(m.per_profile.size(), 2u);
  const ProfileMetrics& small = m.per_profile.at("1g.5gb");
  EXPECT_EQ(small.jobs, 2);
  EXPECT_EQ(small.completed, 2);
  EXPECT_DOUBLE_EQ(small.jct_mean_s, 20);
  EXPECT_DOUBLE_EQ(small.wait_p95_s, 9.5);  // {0, 10}: h = 0.95
  EXPECT_DOUBLE_EQ(small.jct_p95_s, 29);    // {10, 30}: h = 0.95
  EXPECT_DOUBLE_EQ(small.duration_mean_s, 12.5);
  EXPECT_DOUBLE_EQ(small.slowdown_mean, 1.75);
  EXPECT_DOUBLE_EQ(small.bounded_slowdown_mean, 1.25);
  const ProfileMetrics& big = m.per_profile.at("7g.40gb");
  EXPECT_EQ(big.jobs, 2);
  EXPECT_EQ(big.rejected, 1);
  EXPECT_DOUBLE_EQ(big.wait_mean_s, 20);
}

TEST(SlowdownTest, BoundedSlowdownHasATenSecondFloorAndNeverGoesBelowOne) {
  EXPECT_DOUBLE_EQ(Slowdown(30, 10), 3);
  EXPECT_DOUBLE_EQ(BoundedSlowdown(30, 10), 3);
  EXPECT_DOUBLE_EQ(Slowdown(4, 2), 2);
  EXPECT_DOUBLE_EQ(BoundedSlowdown(4, 2), 1);     // 4 / max(2, 10) = 0.4 -> 1
  EXPECT_DOUBLE_EQ(BoundedSlowdown(25, 2), 2.5);  // 25 / 10
  EXPECT_DOUBLE_EQ(Slowdown(5, 0), 1);            // no duration: no slowdown
}

TEST(DecisionStatsTest, MeanAndP99) {
  Metrics m;
  FillDecisionStats({4, 1, 3, 2}, &m);
  EXPECT_EQ(m.decisions, 4);
  EXPECT_DOUBLE_EQ(m.decision_us_mean, 2.5);
  EXPECT_NEAR(m.decision_us_p99, 3.97, 1e-12);  // h = 2.97: 3 + 0.97 × 1
}

TEST(MetricsToJsonTest, HasEveryDocumentedKey) {
  Metrics m;
  m.makespan_s = 12.5;
  m.per_profile["3g.20gb"].jobs = 4;
  const nlohmann::json j = MetricsToJson(m);
  for (const char* key : {"mode",
                          "policy",
                          "cluster",
                          "makespan_s",
                          "jct_mean_s",
                          "jct_p50_s",
                          "jct_p95_s",
                          "jct_p99_s",
                          "wait_mean_s",
                          "wait_p95_s",
                          "duration_mean_s",
                          "slowdown_mean",
                          "slowdown_p95",
                          "bounded_slowdown_mean",
                          "bounded_slowdown_p95",
                          "utilization",
                          "frag_mean",
                          "frag_peak",
                          "stranded_share_mean",
                          "rejected",
                          "reconfigurations",
                          "creates",
                          "destroys",
                          "reuses",
                          "setup_reconfigurations",
                          "migrations",
                          "jobs_completed",
                          "jobs_per_day",
                          "decision_us_mean",
                          "decision_us_p99",
                          "jobs_total",
                          "fill_allocation",
                          "fill_acceptance",
                          "fill_frag",
                          "fill_placed",
                          "per_profile"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["makespan_s"].get<double>(), 12.5);
  EXPECT_EQ(j["per_profile"]["3g.20gb"]["jobs"].get<int64_t>(), 4);
}

TEST(MetricInfosTest, EveryNumericKeyHasOneLabel) {
  // Every number MetricsToJson writes is named once (so the terminal, compare
  // and the report can all call it the same), and nothing else is.
  Metrics m;
  m.energy_kwh = 1;
  m.jobs_per_kwh = 1;
  m.energy_kwh_arrival_window = 1;
  const nlohmann::json j = MetricsToJson(m);
  std::vector<std::string> numeric;
  for (const auto& [key, value] : j.items()) {
    if (value.is_number()) numeric.push_back(key);
  }
  std::vector<std::string> named;
  for (const MetricInfo& i : MetricInfos()) named.emplace_back(i.key);
  std::sort(numeric.begin(), numeric.end());
  std::sort(named.begin(), named.end());
  EXPECT_EQ(named, numeric);
  EXPECT_EQ(std::adjacent_find(named.begin(), named.end()), named.end()) << "a key twice";
  // The two stranded figures say what they are a share of.
  EXPECT_EQ(FindMetricInfo("stranded_capacity_mean")->label,
            "stranded capacity (of all compute slices, time mean)");
  EXPECT_EQ(FindMetricInfo("stranded_share_mean")->label,
            "stranded share (of the free compute slices, time mean)");
  EXPECT_EQ(FindMetricInfo("jobs_per_kwh")->better, MetricBetter::kHigher);
  EXPECT_EQ(FindMetricInfo("energy_kwh")->better, MetricBetter::kLower);
  EXPECT_EQ(FindMetricInfo("no_such_metric"), nullptr);
}

TEST(JobStatsTest, RejectionsAreCountedByReason) {
  JobStats s;
  s.AddRejected("7g.80gb", "no GPU offers 7g.80gb");
  s.AddRejected("7g.80gb", "no GPU offers 7g.80gb");
  s.AddRejected("1g.5gb", "waited longer than --max-wait");
  s.AddRejected("1g.5gb");
  Metrics m;
  s.Fill(&m);
  EXPECT_EQ(m.rejected, 4);
  EXPECT_EQ(
      m.rejected_reasons,
      (std::map<std::string, int64_t>{
          {"no GPU offers 7g.80gb", 2}, {"waited longer than --max-wait", 1}, {"unknown", 1}}));
  // Per profile, the times are over completed jobs: none here, so null in JSON.
  EXPECT_TRUE(MetricsToJson(m)["per_profile"]["7g.80gb"]["jct_mean_s"].is_null());
  EXPECT_EQ(MetricsToJson(m)["rejected_reasons"]["no GPU offers 7g.80gb"], 2);
}

// Admission figures: 2 completed + 1 timed out = 3 accepted; 6 migrations -> 2
// per accepted job; a timed-out job is not in the JCT (mean of 10 and 30 = 20);
// the 7g.40gb profile: 1 completed, 1 rejected (3.5 slice-hours) -> rate 0.5.
TEST(JobStatsTest, TimeoutsAcceptedAndMigrationsPerAcceptedJob) {
  JobStats s;
  s.AddCompleted("1g.5gb", 0, 0, 10, 10);
  s.AddCompleted("7g.40gb", 0, 0, 30, 30);
  s.AddTimedOut("1g.5gb");
  s.AddRejected("7g.40gb", "waited longer than --max-wait", 3.5);
  Metrics m;
  m.migrations = 6;
  s.Fill(&m);
  EXPECT_EQ(m.jobs_completed, 2);
  EXPECT_EQ(m.jobs_timeout, 1);
  EXPECT_EQ(m.accepted, 3);
  EXPECT_DOUBLE_EQ(m.migrations_per_accepted_job, 2);
  EXPECT_DOUBLE_EQ(m.jct_mean_s, 20);
  EXPECT_DOUBLE_EQ(m.rejected_slice_hours, 3.5);
  EXPECT_EQ(m.per_profile.at("1g.5gb").jobs, 2);
  EXPECT_EQ(m.per_profile.at("1g.5gb").timeout, 1);
  EXPECT_DOUBLE_EQ(m.per_profile.at("7g.40gb").rejection_rate, 0.5);
  EXPECT_DOUBLE_EQ(MetricsToJson(m)["per_profile"]["7g.40gb"]["rejected_slice_hours"], 3.5);
  EXPECT_EQ(MetricsToJson(m)["jobs_timeout"], 1);
}

TEST(ProfileKeyLessTest, OrdersBySize) {
  // By compute slices, then memory, then gang size, then text; other keys last.
  const std::vector<std::string> want = {"1g.5gb",    "1g.5gb+me", "2x1g.5gb",         "1g.10gb",
                                         "2g.10gb",   "3g.20gb",   "4g.20gb",          "7g.40gb",
                                         "2x7g.40gb", "7g.141gb",  "gpu_fraction 0.3", "mystery"};
  std::vector<std::string> keys = {"mystery",   "7g.141gb", "2x7g.40gb", "gpu_fraction 0.3",
                                   "3g.20gb",   "1g.10gb",  "7g.40gb",   "2g.10gb",
                                   "1g.5gb+me", "4g.20gb",  "2x1g.5gb",  "1g.5gb"};
  std::sort(keys.begin(), keys.end(),
            [](const std::string& a, const std::string& b) { return ProfileKeyLess(a, b); });
  EXPECT_EQ(keys, want);
  std::map<std::string, ProfileMetrics> pp;
  for (const std::string& k : want) pp[k];
  EXPECT_EQ(ProfileKeysBySize(pp), want);
}

}  // namespace
}  // namespace migsched
