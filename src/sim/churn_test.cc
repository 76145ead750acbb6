#include "sim/churn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "sim/paper_mix.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

const GpuModel& A100() { return testing::Model("A100-40GB"); }

TEST(ChurnTest, FirstJobsMatchIndependentReference) {
  // Expected values from tests/data/reference/churn_reference.py, a Python
  // re-implementation of the draws documented in churn.h (default options,
  // seed 1, 4 GPUs).
  auto jobs = GenerateChurn(A100(), ChurnOptions{});
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 500u);
  struct Expected {
    const char* name;
    int cs;
    ReferenceJob kind;
    double duration;
    Migratable migratable;
    double arrival;
  };
  const std::vector<Expected> expected = {
      {"ch-0001", 1, kBloom7b1Offload, 534.6165437931629, Migratable::kCheckpoint, 0},
      {"ch-0002", 7, kResNet50Inference, 149.21235291346554, Migratable::kNone, 470.41578807177154},
      {"ch-0003", 1, kResNet50Inference, 309.41294342253946, Migratable::kCheckpoint,
       541.9696202443106},
      {"ch-0004", 2, kResNet50Inference, 123.62235684848991, Migratable::kCheckpoint,
       1038.4991841638393},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const WorkloadJob& j = (*jobs)[i];
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(j.name, expected[i].name);
    EXPECT_TRUE(j.profile.empty());
    EXPECT_DOUBLE_EQ(j.gpu_fraction, expected[i].cs / 7.0);
    EXPECT_EQ(j.pcie_gbps, expected[i].kind.pcie_gbps);
    EXPECT_NEAR(j.duration_s, expected[i].duration, 1e-9);
    EXPECT_EQ(j.migratable, expected[i].migratable);
    EXPECT_FALSE(j.latency_sensitive);
    EXPECT_NEAR(j.arrival_s, expected[i].arrival, 1e-6);
  }
  EXPECT_EQ(jobs->back().name, "ch-0500");
  EXPECT_NEAR(jobs->back().arrival_s, 111668.0093915406, 1e-4);
}

TEST(ChurnTest, ClassesResolveOnEveryModelAndTheSameSeedGivesTheSameJobs) {
  ChurnOptions o;
  o.num_jobs = 300;
  auto a = GenerateChurn(A100(), o);
  auto b = GenerateChurn(A100(), o);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].arrival_s, (*b)[i].arrival_s);
    EXPECT_EQ((*a)[i].duration_s, (*b)[i].duration_s);
  }
  const GpuModel& h100 = testing::Model("H100-80GB");
  std::map<std::string, int> on_a100, on_h100;
  for (const WorkloadJob& j : *a) {
    ++on_a100[A100().profile(ResolveProfile(A100(), j)).name];
    ++on_h100[h100.profile(ResolveProfile(h100, j)).name];
  }
  for (const char* p : {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}) {
    EXPECT_GT(on_a100[p], 0) << p;
  }
  for (const char* p : {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}) {
    EXPECT_GT(on_h100[p], 0) << p;
  }
}

TEST(ChurnTest, OffersTheLoadAndArrivesInBursts) {
  // Over many jobs the long-run arrival rate gives the offered load:
  // sum(demand × duration) / (span × GPUs) -> load.
  ChurnOptions o;
  o.num_jobs = 40000;
  o.num_gpus = 8;
  o.load = 1.1;
  auto jobs = GenerateChurn(A100(), o);
  ASSERT_TRUE(jobs.ok());
  double work = 0;
  for (const WorkloadJob& j : *jobs) work += j.gpu_fraction * j.duration_s;
  const double span = jobs->back().arrival_s - jobs->front().arrival_s;
  EXPECT_NEAR(work / (span * o.num_gpus), 1.1, 0.06);
  // Bursts: arrivals per 15-minute window vary more than a Poisson process's
  // (whose variance equals its mean).
  std::map<int64_t, int> per_window;
  for (const WorkloadJob& j : *jobs) ++per_window[static_cast<int64_t>(j.arrival_s / 900)];
  const int64_t windows = static_cast<int64_t>(span / 900) + 1;
  double mean = static_cast<double>(jobs->size()) / windows, var = 0;
  for (int64_t w = 0; w < windows; ++w) {
    const double c = per_window.count(w) ? per_window[w] : 0;
    var += (c - mean) * (c - mean);
  }
  var /= windows - 1;
  EXPECT_GT(var / mean, 1.5);
  // Migratable and latency-sensitive shares as documented (10% none, 10%
  // restart, 10% latency-sensitive), within sampling noise.
  int none = 0, restart = 0, ls = 0;
  for (const WorkloadJob& j : *jobs) {
    none += j.migratable == Migratable::kNone;
    restart += j.migratable == Migratable::kRestart;
    ls += j.latency_sensitive;
  }
  EXPECT_NEAR(none / 40000.0, 0.1, 0.01);
  EXPECT_NEAR(restart / 40000.0, 0.1, 0.01);
  EXPECT_NEAR(ls / 40000.0, 0.1, 0.01);
}

// Regression: at --load 1e-9 a gap spans about 1e7 phases of an hour, and walking each one made
// `simulate --workload churn --load 1e-9` run for hours. The long-run rate still gives the load:
// sum(demand x duration) / (span x GPUs), as in OffersTheLoadAndArrivesInBursts, within 10% over
// 4000 jobs (the mean of 4000 exponential gaps has a relative spread of 1/sqrt(4000) = 1.6%).
TEST(ChurnTest, ATinyLoadIsOfferedWithoutWalkingEveryPhase) {
  ChurnOptions o;
  o.num_jobs = 4000;
  o.num_gpus = 2;
  o.load = 1e-9;
  auto jobs = GenerateChurn(A100(), o);
  ASSERT_TRUE(jobs.ok());
  double work = 0;
  for (const WorkloadJob& j : *jobs) work += j.gpu_fraction * j.duration_s;
  const double span = jobs->back().arrival_s - jobs->front().arrival_s;
  EXPECT_NEAR(work / (span * o.num_gpus) / 1e-9, 1.0, 0.1);
}

TEST(ChurnTest, BadOptionsNameTheOption) {
  ChurnOptions o;
  o.pcie_share = 2;
  EXPECT_EQ(GenerateChurn(A100(), o).status().message(),
            "churn: pcie_share must be in [0, 1], got 2");
  o = ChurnOptions{};
  o.burst_factor = 0.5;
  EXPECT_FALSE(GenerateChurn(A100(), o).ok());
}

}  // namespace
}  // namespace migsched
