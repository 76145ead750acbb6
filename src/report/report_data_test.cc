#include "report/report_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/metrics.h"

namespace migsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TimelineSample At(double t, double frag, double util, int64_t queue) {
  TimelineSample s;
  s.time_s = t;
  s.frag_rate = frag;
  s.utilization = util;
  s.queue_length = queue;
  return s;
}

TEST(DownsampleTimelineTest, EmptyGivesEmpty) {
  const TimelineSeries s = DownsampleTimeline({}, 10);
  EXPECT_THAT(s.time_s, IsEmpty());
  EXPECT_EQ(s.window_s, 0);
}

TEST(DownsampleTimelineTest, FewSamplesAreKeptAsTheyAre) {
  const std::vector<TimelineSample> tl = {At(0, 0, 0.5, 2), At(1, 1, 0, 0), At(4, 0.5, 1, 4)};
  const TimelineSeries s = DownsampleTimeline(tl, 3);
  EXPECT_THAT(s.time_s, ElementsAre(0, 1, 4));
  EXPECT_THAT(s.frag_rate, ElementsAre(0, 1, 0.5));
  EXPECT_THAT(s.utilization, ElementsAre(0.5, 0, 1));
  EXPECT_THAT(s.queue_length, ElementsAre(2, 0, 4));
  EXPECT_EQ(s.window_s, 0);
}

TEST(DownsampleTimelineTest, OneWindowIsTheTimeWeightedMean) {
  // Samples hold [0,1) and [1,4); max_points 2 -> one window [0,4) plus the
  // last sample. frag: (0*1 + 1*3)/4 = 0.75; util: (0.5*1 + 0*3)/4 = 0.125;
  // queue: (2*1 + 0*3)/4 = 0.5.
  const std::vector<TimelineSample> tl = {At(0, 0, 0.5, 2), At(1, 1, 0, 0), At(4, 0.5, 1, 4)};
  const TimelineSeries s = DownsampleTimeline(tl, 2);
  EXPECT_THAT(s.time_s, ElementsAre(0, 4));
  EXPECT_THAT(s.frag_rate, ElementsAre(0.75, 0.5));
  EXPECT_THAT(s.utilization, ElementsAre(0.125, 1));
  EXPECT_THAT(s.queue_length, ElementsAre(0.5, 4));
  EXPECT_EQ(s.window_s, 4);
}

TEST(DownsampleTimelineTest, WindowsSplitSamplesAndKeepTheArea) {
  // frag 1 on [0,1), 0 on [1,3), 2 on [3,4), then 0 at 4. max_points 3 ->
  // windows [0,2) and [2,4) of 2 s: (1*1 + 0*1)/2 = 0.5 and (0*1 + 2*1)/2 = 1.
  // Area: 0.5*2 + 1*2 = 3 = 1*1 + 0*2 + 2*1 as recorded.
  const std::vector<TimelineSample> tl = {At(0, 1, 0, 0), At(1, 0, 0, 0), At(3, 2, 0, 0),
                                          At(4, 0, 0, 0)};
  const TimelineSeries s = DownsampleTimeline(tl, 3);
  EXPECT_THAT(s.time_s, ElementsAre(0, 2, 4));
  EXPECT_THAT(s.frag_rate, ElementsAre(0.5, 1, 0));
  EXPECT_EQ(s.window_s, 2);
}

JobRecord Job(double jct, JobOutcome outcome = JobOutcome::kCompleted) {
  JobRecord r;
  r.jct_s = jct;
  r.outcome = outcome;
  return r;
}

TEST(ComputeJctCdfTest, OnePointPerCompletedJob) {
  // Completed JCTs 30, 10, 20 -> sorted 10, 20, 30 at 1/3, 2/3, 1; the
  // rejected job (NaN JCT) is left out.
  const JctCdf c = ComputeJctCdf({Job(30), Job(10), Job(NAN, JobOutcome::kRejected), Job(20)}, 10);
  EXPECT_EQ(c.jobs, 3);
  EXPECT_THAT(c.jct_s, ElementsAre(10, 20, 30));
  EXPECT_THAT(c.fraction, ElementsAre(1.0 / 3, 2.0 / 3, 1.0));
}

TEST(ComputeJctCdfTest, QuantilesWhenThereAreMoreJobsThanPoints) {
  // n = 3, 2 points: fraction 0.5 -> smallest JCT with F >= 0.5: F(10) = 1/3,
  // F(20) = 2/3, so 20; fraction 1 -> 30.
  const JctCdf c = ComputeJctCdf({Job(30), Job(10), Job(20)}, 2);
  EXPECT_EQ(c.jobs, 3);
  EXPECT_THAT(c.jct_s, ElementsAre(20, 30));
  EXPECT_THAT(c.fraction, ElementsAre(0.5, 1.0));
}

TEST(ComputeJctCdfTest, NoCompletedJobs) {
  const JctCdf c = ComputeJctCdf({Job(NAN, JobOutcome::kRejected), Job(0, JobOutcome::kPlaced)}, 5);
  EXPECT_EQ(c.jobs, 0);
  EXPECT_THAT(c.jct_s, IsEmpty());
}

TEST(FormatMetricTest, Formats) {
  struct Case {
    double v;
    MetricFormat f;
    const char* want;
  };
  const Case cases[] = {
      {45, MetricFormat::kDuration, "45.0 s"},
      {750, MetricFormat::kDuration, "12.5 min"},   // 750 / 60
      {11520, MetricFormat::kDuration, "3.20 h"},   // 11520 / 3600
      {354240, MetricFormat::kDuration, "4.10 d"},  // 354240 / 86400
      {0.1234, MetricFormat::kPercent, "12.3%"},
      {0.41234, MetricFormat::kRate, "0.412"},
      {7, MetricFormat::kCount, "7"},
      {2.26, MetricFormat::kDecimal, "2.26"},  // 3 significant digits
      {1234.56, MetricFormat::kDecimal, "1234.6"},
      {NAN, MetricFormat::kCount, "-"},
      {INFINITY, MetricFormat::kDuration, "-"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatMetric(c.v, c.f), c.want) << c.v;
  }
}

// The unit of a row of values: from the largest, with decimals for 3
// significant digits of the smallest non-zero one (at most 3 decimals).
TEST(ChooseUnitTest, OneUnitForValuesThatAreCompared) {
  // The bug: 7560 s = 2.10 h and 6666 s = 111.1 min side by side. 7560 s is
  // over 2 h: hours for both, 6666 / 3600 = 1.85.
  DisplayUnit u = ChooseUnit(MetricFormat::kDuration, {7560, 6666});
  EXPECT_EQ(u.name, "h");
  EXPECT_EQ(FormatInUnit(7560, NAN, u), "2.10 h");
  EXPECT_EQ(FormatInUnit(6666, NAN, u), "1.85 h");
  // 200 s and 400 s: minutes (400 >= 120), 200 / 60 = 3.33: 2 decimals.
  u = ChooseUnit(MetricFormat::kDuration, {200, 400, NAN});
  EXPECT_EQ(FormatInUnit(200, NAN, u), "3.33 min");
  EXPECT_EQ(FormatInUnit(400, 30, u), "6.67 ±0.50 min");
  // 30 s next to 3 h: hours, at most 3 decimals (30 / 3600 = 0.008).
  u = ChooseUnit(MetricFormat::kDuration, {30, 10800});
  EXPECT_EQ(FormatInUnit(30, NAN, u), "0.008 h");
  EXPECT_EQ(FormatInUnit(10800, NAN, u), "3.000 h");
  // Zeros do not ask for decimals; no finite value: seconds.
  EXPECT_EQ(FormatInUnit(0, NAN, ChooseUnit(MetricFormat::kDuration, {0, 50})), "0.0 s");
  EXPECT_EQ(ChooseUnit(MetricFormat::kDuration, {NAN}).name, "s");
  // Shares: percent with the interval after the sign.
  EXPECT_EQ(FormatInUnit(0.834, 0.005, ChooseUnit(MetricFormat::kPercent, {0.834})), "83.4% ±0.5");
  // Counts: whole numbers, a decimal when a value is a mean over replicas.
  EXPECT_EQ(FormatInUnit(5, NAN, ChooseUnit(MetricFormat::kCount, {5, 7})), "5");
  EXPECT_EQ(FormatInUnit(5, NAN, ChooseUnit(MetricFormat::kCount, {5, 7.5})), "5.0");
  EXPECT_EQ(FormatInUnit(NAN, 1, u), "-");
}

TEST(ReportMetricsTest, KnownAndUnknownKeys) {
  const ReportMetric m = FindReportMetric("makespan_s");
  EXPECT_TRUE(m.known);
  EXPECT_EQ(m.format, MetricFormat::kDuration);
  EXPECT_EQ(m.better, ReportMetric::Better::kLower);
  const ReportMetric u = FindReportMetric("energy_kwh_something_new");
  EXPECT_FALSE(u.known);
  EXPECT_EQ(u.label, "energy_kwh_something_new");
  EXPECT_EQ(u.better, ReportMetric::Better::kNeither);
  EXPECT_EQ(ReportMetrics("fill").front().key, "jobs_total");
  EXPECT_EQ(FindReportMetric("fill_allocation").format, MetricFormat::kPercent);
}

// Regression (report_showed_raw_keys): the arrival-window, admission and time-out metrics that
// `compare` shows (and the README tells Alibaba users to read) were rows named by their JSON keys,
// in raw units, uncoloured. Every numeric key the simulator writes is a known row of the report
// now, labelled as the terminal labels it (sim/metrics.h MetricInfos), with its direction.
TEST(ReportMetricsTest, EveryMetricTheSimulatorWritesIsAKnownRow) {
  for (const MetricInfo& info : MetricInfos()) {
    SCOPED_TRACE(std::string(info.key));
    const ReportMetric m = FindReportMetric(std::string(info.key));
    EXPECT_TRUE(m.known);
    EXPECT_EQ(m.label, info.label);
  }
  EXPECT_EQ(FindReportMetric("utilization_arrival_window").format, MetricFormat::kPercent);
  EXPECT_EQ(FindReportMetric("rejected_slice_hours").better, ReportMetric::Better::kLower);
}

TEST(EscapeTest, Html) {
  EXPECT_EQ(EscapeHtml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(EscapeHtml("plain"), "plain");
}

TEST(EscapeTest, JsonForScriptHidesTagStarts) {
  EXPECT_EQ(JsonForScript(R"({"n":"</script><!--"})"), R"({"n":"\u003c/script>\u003c!--"})");
}

}  // namespace
}  // namespace migsched
