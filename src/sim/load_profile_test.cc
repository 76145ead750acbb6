// The offered load per week, the long jobs and the arrival-window figures
// (sim/load_profile.h, Metrics::*_arrival_window), by hand.
#include "sim/load_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::BundledCatalog;

constexpr double kDay = 86400, kWeek = 7 * kDay;

std::vector<const GpuModel*> Gpus(const std::string& spec) {
  StatusOr<std::vector<const GpuModel*>> g = ParseClusterSpec(spec, BundledCatalog());
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : std::vector<const GpuModel*>{};
}

// 2x A100 40GB: 14 compute slices, 14 x 604800 = 8467200 slice-seconds a week.
//   a: 1g.5gb at 0 for 1 week:      1 x 604800  =  604800 (week 0; a long job)
//   b: 7g.40gb at 3 d for 3.5 d:    7 x 302400  = 2116800 (week 0)
//   c: 3g.20gb at 8 d for 1 d:      3 x 86400   =  259200 (week 1)
// Week 0: 2721600 / 8467200 = 9/28; week 1: 259200 / 8467200 = 3/98.
// Long work share 604800 / 2980800.
TEST(LoadProfileTest, OfferedLoadPerWeekAndLongJobsByHand) {
  const std::vector<WorkloadJob> jobs = {
      AJob("1g.5gb").Named("a").Runs(kWeek),
      AJob("7g.40gb").Named("b").ArrivesAt(3 * kDay).Runs(3.5 * kDay),
      AJob("3g.20gb").Named("c").ArrivesAt(8 * kDay).Runs(kDay)};
  const LoadProfile p = ProfileLoad(jobs, Gpus("2xA100-40GB"));
  EXPECT_EQ(p.weeks, 2);
  ASSERT_EQ(p.first_weeks.size(), 2u);
  EXPECT_DOUBLE_EQ(p.first_weeks[0], 9.0 / 28);
  EXPECT_DOUBLE_EQ(p.first_weeks[1], 3.0 / 98);
  EXPECT_EQ(p.long_jobs, 1);
  EXPECT_DOUBLE_EQ(p.long_work_share, 604800.0 / 2980800);
  EXPECT_EQ(p.longest_name, "a");
  EXPECT_EQ(p.longest_duration_s, kWeek);
  EXPECT_NE(DescribeLoad(p).find("0.32, 0.03"), std::string::npos) << DescribeLoad(p);
  EXPECT_NE(DescribeLoad(p).find("1 jobs run 7 days or more"), std::string::npos);
}

// Regression: a trace with arrivals 1e15 s apart made ProfileLoad allocate one entry per week
// (1.65e9 weeks: 13 GB), so `simulate` ran out of memory or seemed to hang. The weeks are now
// counted. 1e15 / 604800 = 1653439153.4, so 1653439154 weeks; b (1g.5gb, 100 s) on one A100
// 40GB offers 100 / (7 x 604800) = 100 / 4233600 in the last week, every other later week 0.
TEST(LoadProfileTest, ArrivalsFarApartAreCountedNotStoredOneByOne) {
  const std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Named("a").Runs(100),
                                         AJob("1g.5gb").Named("b").ArrivesAt(1e15).Runs(100)};
  const LoadProfile p = ProfileLoad(jobs, Gpus("1xA100-40GB"));
  EXPECT_EQ(p.weeks, 1653439154.0);
  ASSERT_EQ(p.first_weeks.size(), kShownWeeks);
  EXPECT_DOUBLE_EQ(p.first_weeks[0], 100.0 / 4233600);
  EXPECT_EQ(p.first_weeks[1], 0);
  EXPECT_EQ(p.later_min, 0);
  EXPECT_DOUBLE_EQ(p.later_max, 100.0 / 4233600);
  EXPECT_NE(DescribeLoad(p).find("then 1653439142 more weeks between 0.00 and 0.00"),
            std::string::npos)
      << DescribeLoad(p);
  // At the far end of what a trace may hold, the count is beyond any integer type.
  const LoadProfile far = ProfileLoad(
      {AJob("1g.5gb").Runs(1), AJob("1g.5gb").ArrivesAt(1e300).Runs(1)}, Gpus("1xA100-40GB"));
  EXPECT_DOUBLE_EQ(far.weeks, std::floor(1e300 / kWeek) + 1);
  EXPECT_NE(DescribeLoad(far).find("then 1.65e+294 more weeks"), std::string::npos)
      << DescribeLoad(far);
}

// Every later week has arrivals: the lowest is a real week's, not 0. Weeks 0-13 each get one
// 7g.40gb job of 1 day on one A100 40GB: 7 x 86400 / (7 x 604800) = 1/7; week 13 gets a
// second: 2/7.
TEST(LoadProfileTest, LaterWeeksRangeOverWeeksThatHaveArrivals) {
  std::vector<WorkloadJob> jobs;
  for (int w = 0; w < 14; ++w) jobs.push_back(AJob("7g.40gb").ArrivesAt(w * kWeek).Runs(kDay));
  jobs.push_back(AJob("7g.40gb").ArrivesAt(13 * kWeek + 1).Runs(kDay));
  const LoadProfile p = ProfileLoad(jobs, Gpus("1xA100-40GB"));
  EXPECT_EQ(p.weeks, 14);
  EXPECT_DOUBLE_EQ(p.later_min, 1.0 / 7);
  EXPECT_DOUBLE_EQ(p.later_max, 2.0 / 7);
}

TEST(LoadProfileTest, CapDurationsCutsOnlyLongerJobs) {
  std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Runs(kWeek), AJob("1g.5gb").Runs(10),
                                   AJob("1g.5gb").Runs(3 * kDay)};
  EXPECT_EQ(CapDurations(&jobs, kDay), 2);
  EXPECT_EQ(jobs[0].duration_s, kDay);
  EXPECT_EQ(jobs[1].duration_s, 10);
  EXPECT_EQ(jobs[2].duration_s, kDay);
}

// One A100 40GB (7 compute slices), no reconfiguration cost, contention off:
//   a: 3g.20gb at 0 for 50 s; b: 4g.20gb at 100 for 10000 s (ends at 10100).
// Arrival window [0, 100]: busy 3 x 50 = 150 slice-seconds: utilisation 150 / 700 = 3/14;
// 1 job completed in it: 1 / (100 / 86400) = 864 jobs per day. Over the makespan
// (10100 s): (150 + 40000) / 70700.
TEST(LoadProfileTest, ArrivalWindowFiguresAreOverTheArrivalsOnly) {
  const std::vector<WorkloadJob> jobs = {AJob("3g.20gb").Named("a").Runs(50),
                                         AJob("4g.20gb").Named("b").ArrivesAt(100).Runs(10000)};
  SimOptions so;
  so.reconfig_ms = 0;
  so.contention = false;
  StatusOr<SimResult> r = RunSimulation(Gpus("1xA100-40GB"), jobs, "first-fit", {}, so);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Metrics& m = r->metrics;
  EXPECT_DOUBLE_EQ(m.arrival_window_s, 100);
  EXPECT_DOUBLE_EQ(m.utilization_arrival_window, 3.0 / 14);
  EXPECT_DOUBLE_EQ(m.jobs_per_day_arrival_window, 864);
  EXPECT_DOUBLE_EQ(m.makespan_s, 10100);
  EXPECT_NEAR(m.utilization, 40150.0 / 70700, 1e-12);
  ASSERT_TRUE(m.energy_kwh_arrival_window.has_value());
  ASSERT_TRUE(m.energy_kwh.has_value());
  EXPECT_LT(*m.energy_kwh_arrival_window, *m.energy_kwh);
}

}  // namespace
}  // namespace migsched
