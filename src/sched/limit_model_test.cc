// The learned weight of time limits (sched/limit_model.h, docs/algorithms.md §5 "Limits weighed
// by what they predict"): slopes worked by hand and checked against a brute-force fit.

#include "sched/limit_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <vector>

#include "core/rng.h"

namespace migsched {
namespace {

using Samples = std::deque<LimitModel::Sample>;

// Run time = sqrt(limit) for limits e^0 .. e^19: log run = 0.5 log limit exactly, slope 0.5.
TEST(LimitModelTest, SlopeOfLogRunOnLogLimit) {
  Samples s;
  for (int k = 0; k < 20; ++k) s.push_back({double(k), 0.5 * k});
  EXPECT_NEAR(LimitModel::FitPower(s), 0.5, 1e-12);
}

// Clamped to [0, 1]: run times that fall as limits rise (slope -1) say nothing usable: 0; run
// times that spread twice as much as limits (slope 2): the limit as given, 1.
TEST(LimitModelTest, SlopeIsClampedToZeroAndOne) {
  Samples down, steep;
  for (int k = 0; k < 20; ++k) {
    down.push_back({double(k), -double(k)});
    steep.push_back({double(k), 2.0 * k});
  }
  EXPECT_EQ(LimitModel::FitPower(down), 0);
  EXPECT_EQ(LimitModel::FitPower(steep), 1);
}

// Fewer than kLimitModelMinJobs (20) samples, or limits that are all the same: 1 (the limit as
// given; with one limit for all, the order is by wait whatever the power).
TEST(LimitModelTest, TooFewSamplesOrOneLimitGiveOne) {
  Samples few, same;
  for (int k = 0; k < 19; ++k) few.push_back({double(k), 0});
  for (int k = 0; k < 40; ++k) same.push_back({std::log(3600.0), double(k % 5)});
  EXPECT_EQ(LimitModel::FitPower(few), 1);
  EXPECT_EQ(LimitModel::FitPower(same), 1);
}

// Through Started/Ended: the run time is end - first start (a second Started, a move's relaunch,
// keeps the first); a job without a limit, or never started here, is not counted.
TEST(LimitModelTest, RunTimesCountFromTheFirstStartAndUncountedJobsAreSkipped) {
  LimitModel m;
  m.Started(1, 100);
  m.Started(1, 400);  // relaunch after a move: still from 100
  m.Ended(1, 3600, 1100);
  ASSERT_EQ(m.samples(), 1u);
  m.Started(2, 0);
  m.Ended(2, 0, 50);     // no limit
  m.Ended(3, 600, 700);  // never started here (adopted after a restart)
  m.Started(4, 0);
  m.Ended(4, std::nan(""), 10);
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.Power(), 1);  // one sample: too few
  // 19 more with run = limit / 10 (limits 60 s .. 60 * 2^18 s): every run is limit / 10, so
  // with the first (run 1000 s, limit 3600 s, off that line) the slope is near but not 1.
  // Brute force below checks the same value.
  Samples ref;
  ref.push_back({std::log(3600.0), std::log(1000.0)});
  for (int k = 0; k < 19; ++k) {
    const double limit = 60.0 * std::pow(2.0, k);
    m.Started(10 + k, 0);
    m.Ended(10 + k, limit, limit / 10);
    ref.push_back({std::log(limit), std::log(limit / 10)});
  }
  EXPECT_EQ(m.samples(), 20u);
  EXPECT_DOUBLE_EQ(m.Power(), LimitModel::FitPower(ref));
  EXPECT_GT(m.Power(), 0.95);
  EXPECT_LE(m.Power(), 1.0);
}

// The window keeps the last kLimitModelWindow jobs: 500 jobs whose run time is constant (slope
// 0), then 500 whose run time is the limit (slope 1): only the second half counts.
TEST(LimitModelTest, TheWindowForgetsTheOldestJobs) {
  LimitModel m;
  uint64_t id = 0;
  for (int k = 0; k < int(kLimitModelWindow); ++k, ++id) {
    m.Started(id, 0);
    m.Ended(id, 60.0 * (1 + k % 7), 30);
  }
  EXPECT_EQ(m.Power(), 0);
  for (int k = 0; k < int(kLimitModelWindow); ++k, ++id) {
    m.Started(id, 0);
    m.Ended(id, 60.0 * (1 + k % 7), 60.0 * (1 + k % 7));
  }
  EXPECT_EQ(m.samples(), kLimitModelWindow);
  EXPECT_NEAR(m.Power(), 1, 1e-9);
}

// Randomized against a naive two-pass fit written out here (seed printed): limits log-uniform,
// run = limit^b * noise, for b drawn in [-0.5, 1.5]; the model's power is the naive slope
// clamped, after every job.
TEST(LimitModelTest, MatchesANaiveFitAfterEveryJob) {
  const uint64_t seed = 20261207;
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  for (int round = 0; round < 20; ++round) {
    const double b = -0.5 + 2 * rng.Uniform01();
    LimitModel m;
    std::vector<std::pair<double, double>> all;  // (log limit, log run)
    for (uint64_t id = 0; id < 700; ++id) {
      const double limit = 60 * std::exp(8 * rng.Uniform01());
      const double run = std::pow(limit, b) * std::exp(rng.Uniform01() - 0.5);
      m.Started(id, 1000);
      m.Ended(id, limit, 1000 + run);
      all.push_back({std::log(limit), std::log(std::max(run, kLimitModelMinRunS))});
      const size_t from = all.size() > kLimitModelWindow ? all.size() - kLimitModelWindow : 0;
      const double n = double(all.size() - from);
      double expect = 1;
      if (n >= kLimitModelMinJobs) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = from; i < all.size(); ++i) {
          sx += all[i].first;
          sy += all[i].second;
        }
        for (size_t i = from; i < all.size(); ++i) {
          sxx += (all[i].first - sx / n) * (all[i].first - sx / n);
          sxy += (all[i].first - sx / n) * (all[i].second - sy / n);
        }
        expect = std::min(1.0, std::max(0.0, sxy / sxx));
      }
      ASSERT_NEAR(m.Power(), expect, 1e-9) << "round " << round << " job " << id;
    }
  }
}

}  // namespace
}  // namespace migsched
