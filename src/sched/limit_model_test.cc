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

// One request for the tests of the power (which pools every request).
const RequestKey kKey{"1g.5gb", 0, 0, 1};
const RequestKey kSmall{"1g.5gb", 0, 0, 1};
const RequestKey kLarge{"7g.40gb", 0, 0, 1};

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
  m.Ended(1, 3600, 1100, kKey);
  ASSERT_EQ(m.samples(), 1u);
  m.Started(2, 0);
  m.Ended(2, 0, 50, kKey);     // no limit
  m.Ended(3, 600, 700, kKey);  // never started here (adopted after a restart)
  m.Started(4, 0);
  m.Ended(4, std::nan(""), 10, kKey);
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
    m.Ended(10 + k, limit, limit / 10, kKey);
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
    m.Ended(id, 60.0 * (1 + k % 7), 30, kKey);
  }
  EXPECT_EQ(m.Power(), 0);
  for (int k = 0; k < int(kLimitModelWindow); ++k, ++id) {
    m.Started(id, 0);
    m.Ended(id, 60.0 * (1 + k % 7), 60.0 * (1 + k % 7), kKey);
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
      m.Ended(id, limit, 1000 + run, kKey);
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

// Run times learned per request (§5), by hand. 16 runs of kSmall ran a hundredth of their limit
// (log share a = ln 0.01) and 4 runs of kLarge all of it (log share 0): 20 runs, the window's mean
// m = 16a/20 = 4a/5. kLarge: (0 + 5m) / (4 + 5) - m = -4m/9 = -16a/45, factor 100^(16/45) =
// 5.14175; kSmall: (16a + 5m) / (16 + 5) - m = 16(a - m)/21 = 16a/105, factor 0.01^(16/105) =
// 0.495722. A request with no run has factor 1, and so has every request before the 20th run.
TEST(LimitModelTest, RequestFactorsByHand) {
  LimitModel m;
  for (int k = 0; k < 20; ++k) {
    const bool large = k % 5 == 4;  // runs 4, 9, 14, 19
    if (k == 19) {
      EXPECT_EQ(m.RequestFactor(kSmall), 1) << "19 runs: too few";
      EXPECT_EQ(m.RequestFactor(kLarge), 1);
    }
    m.Add(3600, large ? 3600 : 36, large ? kLarge : kSmall);
  }
  EXPECT_NEAR(m.RequestFactor(kLarge), std::pow(100.0, 16.0 / 45), 1e-9);
  EXPECT_NEAR(m.RequestFactor(kLarge), 5.14175, 1e-5);
  EXPECT_NEAR(m.RequestFactor(kSmall), std::pow(0.01, 16.0 / 105), 1e-9);
  EXPECT_NEAR(m.RequestFactor(kSmall), 0.495722, 1e-6);
  EXPECT_EQ(m.RequestFactor(RequestKey{"3g.20gb", 0, 0, 1}), 1);
  EXPECT_EQ(m.RequestFactor(RequestKey{"7g.40gb", 0, 0, 2}), 1)
      << "a gang of two is another request";
}

// Randomized against a naive computation written out here (seed printed): four requests with
// log shares drawn around their own means, the window's mean over the last kLimitModelWindow runs
// of all, each request's over its last kRequestRunWindow, after every run.
TEST(LimitModelTest, RequestFactorsMatchANaiveComputationAfterEveryRun) {
  const uint64_t seed = 20261208;
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  const std::vector<RequestKey> keys = {kSmall, kLarge, {"2g.10gb", 0, 0, 1}, {"1g.5gb", 0, 0, 4}};
  LimitModel m;
  std::vector<std::pair<size_t, double>> all;  // (request, log share)
  for (int run = 0; run < 1500; ++run) {
    const size_t r = static_cast<size_t>(rng.Uniform01() * 3.999 * (run < 300 ? 0.5 : 1));
    const double limit = 60 * std::exp(6 * rng.Uniform01());
    const double t = limit * std::exp(-0.5 * static_cast<double>(r) - 2 * rng.Uniform01());
    m.Add(limit, t, keys[r]);
    all.push_back({r, std::log(std::max(t, kLimitModelMinRunS)) - std::log(limit)});
    const size_t from = all.size() > kLimitModelWindow ? all.size() - kLimitModelWindow : 0;
    double mean = 0;
    for (size_t i = from; i < all.size(); ++i) mean += all[i].second;
    mean /= static_cast<double>(all.size() - from);
    for (size_t k = 0; k < keys.size(); ++k) {
      std::vector<double> own;
      for (const auto& [req, share] : all) {
        if (req == k) own.push_back(share);
      }
      if (own.size() > kRequestRunWindow) own.erase(own.begin(), own.end() - kRequestRunWindow);
      double expect = 1;
      if (all.size() >= kLimitModelMinJobs && !own.empty()) {
        double sum = 0;
        for (double x : own) sum += x;
        expect = std::exp((sum + kRequestRunPrior * mean) /
                              (static_cast<double>(own.size()) + kRequestRunPrior) -
                          mean);
      }
      ASSERT_NEAR(m.RequestFactor(keys[k]), expect, 1e-9 * expect)
          << "run " << run << " request " << k;
    }
  }
}

}  // namespace
}  // namespace migsched
