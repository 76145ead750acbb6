#include "sim/paper_mix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

const GpuModel& PaperA100() { return testing::Model("A100-40GB"); }

TEST(PaperMixTest, FirstJobsMatchIndependentReference) {
  // Expected values from tests/data/reference/paper_mix_reference.py, a
  // Python re-implementation of the documented draws (default options, seed 1).
  auto jobs = GeneratePaperMix(PaperA100(), PaperMixOptions{});
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 200u);
  struct Expected {
    const char* name;
    const char* profile;
    ReferenceJob kind;
    double duration, arrival;
  };
  const std::vector<Expected> expected = {
      {"pm-0001", "3g.20gb", kResNet50Inference, 793.2968742569325, 0},
      {"pm-0002", "1g.5gb", kBloom7b1Offload, 2587.8312544882356, 192.52762059948225},
      {"pm-0003", "7g.40gb", kResNet50Inference, 1581.9689455526182, 425.4927525821004},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const WorkloadJob& j = (*jobs)[i];
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(j.name, expected[i].name);
    EXPECT_EQ(j.profile, expected[i].profile);
    EXPECT_EQ(j.pcie_gbps, expected[i].kind.pcie_gbps);
    EXPECT_EQ(j.alpha, expected[i].kind.alpha);
    EXPECT_NEAR(j.duration_s, expected[i].duration, 1e-9);
    EXPECT_NEAR(j.arrival_s, expected[i].arrival, 1e-9);
    EXPECT_EQ(j.count, 1);
    EXPECT_EQ(j.migratable, Migratable::kCheckpoint);
    EXPECT_FALSE(j.latency_sensitive);
  }
  EXPECT_EQ(jobs->back().name, "pm-0200");
}

TEST(PaperMixTest, SameSeedSameJobsOtherSeedDiffers) {
  PaperMixOptions o;
  o.num_jobs = 50;
  o.seed = 77;
  auto a = GeneratePaperMix(PaperA100(), o);
  auto b = GeneratePaperMix(PaperA100(), o);
  o.seed = 78;
  auto c = GeneratePaperMix(PaperA100(), o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  int differ = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    const WorkloadJob &x = (*a)[i], &y = (*b)[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.profile, y.profile);
    EXPECT_EQ(x.arrival_s, y.arrival_s);
    EXPECT_EQ(x.duration_s, y.duration_s);
    EXPECT_EQ(x.pcie_gbps, y.pcie_gbps);
    EXPECT_EQ(x.alpha, y.alpha);
    EXPECT_EQ(x.latency_sensitive, y.latency_sensitive);
    differ += x.profile != (*c)[i].profile || x.duration_s != (*c)[i].duration_s;
  }
  EXPECT_GT(differ, 25);
}

TEST(PaperMixTest, SharesAndDistributionsStatistically) {
  const uint64_t seed = 4242;
  std::printf("PaperMixTest.SharesAndDistributionsStatistically seed %llu\n",
              static_cast<unsigned long long>(seed));
  for (double pcie_share : {0.2, 0.6}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " pcie_share " << pcie_share);
    PaperMixOptions o;
    o.num_jobs = 20000;
    o.seed = seed;
    o.pcie_share = pcie_share;
    o.latency_sensitive_share = 0.3;
    auto jobs = GeneratePaperMix(PaperA100(), o);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    const double n = jobs->size();
    std::map<std::string, int> profiles;
    int resnet = 0, bloom560 = 0, bloom7b1 = 0, ls = 0, below_median = 0;
    double duration_sum = 0, work = 0;
    for (const WorkloadJob& j : *jobs) {
      ++profiles[j.profile];
      if (j.pcie_gbps == kResNet50Inference.pcie_gbps && j.alpha == kResNet50Inference.alpha) {
        ++resnet;
      } else if (j.pcie_gbps == kBloom560mOffload.pcie_gbps && j.alpha == kBloom560mOffload.alpha) {
        ++bloom560;
      } else if (j.pcie_gbps == kBloom7b1Offload.pcie_gbps && j.alpha == kBloom7b1Offload.alpha) {
        ++bloom7b1;
      } else {
        ADD_FAILURE() << j.name << " is no reference job";
      }
      ls += j.latency_sensitive;
      ASSERT_GE(j.duration_s, 300);
      ASSERT_LE(j.duration_s, 3600);
      duration_sum += j.duration_s;
      // Median of log-uniform(300, 3600) = sqrt(300 * 3600) = 1039.23 s.
      below_median += j.duration_s < std::sqrt(300.0 * 3600.0);
      const GpuModel& m = PaperA100();
      work += static_cast<double>(m.profile(m.FindProfile(j.profile)).compute_slices) /
              m.compute_slices() * j.duration_s;
    }
    // Binomial shares: sigma <= sqrt(0.25 / 20000) = 0.0035; allow 0.015.
    for (const auto& [name, w] : o.profile_weights) {
      EXPECT_NEAR(profiles[name] / n, w, 0.015) << name;
    }
    EXPECT_NEAR((bloom560 + bloom7b1) / n, pcie_share, 0.015);
    EXPECT_NEAR(static_cast<double>(bloom7b1) / (bloom560 + bloom7b1), 0.5, 0.03);
    EXPECT_NEAR(ls / n, 0.3, 0.015);
    EXPECT_NEAR(below_median / n, 0.5, 0.015);
    // Mean of log-uniform(a, b) = (b - a) / ln(b / a) = 3300 / ln 12 = 1328.0 s;
    // its sd is 909 s, so the sample mean's sd is 6.4 s (0.5%); allow 2%.
    EXPECT_NEAR(duration_sum / n / (3300 / std::log(12.0)), 1.0, 0.02);
    // Offered load on 4 GPUs over the generated arrivals (arrivals.h formula).
    ASSERT_EQ(jobs->front().arrival_s, 0);
    const double mean_gap = jobs->back().arrival_s / (n - 1);
    EXPECT_NEAR(work / (4 * n * mean_gap), 0.9, 0.03);
  }
}

TEST(PaperMixTest, Errors) {
  struct Case {
    std::string label;
    std::function<void(PaperMixOptions*)> mutate;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"pcie share", [](PaperMixOptions* o) { o->pcie_share = 1.5; },
       "paper-mix: pcie_share must be in [0, 1], got 1.5"},
      {"jobs", [](PaperMixOptions* o) { o->num_jobs = -1; },
       "paper-mix: num_jobs must be >= 0, got -1"},
      {"gpus", [](PaperMixOptions* o) { o->num_gpus = 0; },
       "paper-mix: num_gpus must be >= 1, got 0"},
      {"load", [](PaperMixOptions* o) { o->load = -1; },
       "paper-mix: load must be a number > 0, got -1"},
      {"durations", [](PaperMixOptions* o) { o->max_duration_s = 100; },
       "paper-mix: durations need 0 < min_duration_s <= max_duration_s, got 300 and 100"},
      {"unknown profile",
       [](PaperMixOptions* o) {
         o->profile_weights = {{"2g.20gb", 1}};
       },
       "paper-mix: profile '2g.20gb' is not offered by GPU model 'A100 40GB'"},
      {"negative weight",
       [](PaperMixOptions* o) {
         o->profile_weights = {{"1g.5gb", -1}};
       },
       "paper-mix: weight of profile '1g.5gb' must be a number >= 0, got -1"},
      {"zero weights",
       [](PaperMixOptions* o) {
         o->profile_weights = {{"1g.5gb", 0}};
       },
       "paper-mix: profile_weights need at least one weight > 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    PaperMixOptions o;
    c.mutate(&o);
    auto jobs = GeneratePaperMix(PaperA100(), o);
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), c.error);
  }
  // The default weights name A100 40GB profiles; an A30 offers none of them.
  auto a30 = GeneratePaperMix(testing::Model("A30-24GB"), PaperMixOptions{});
  EXPECT_EQ(a30.status().message(),
            "paper-mix: profile '1g.5gb' is not offered by GPU model 'A30 24GB'");
  PaperMixOptions none;
  none.num_jobs = 0;
  auto empty = GeneratePaperMix(PaperA100(), none);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace migsched
