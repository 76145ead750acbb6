#include "sim/contention.h"

#include <gtest/gtest.h>

#include <vector>

namespace migsched {
namespace {

// §8 reference jobs on an A100 PCIe (pcie_max 30.08 GB/s).
constexpr double kMax = 30.08;
constexpr double kB7Gbps = 17.65, kB7Alpha = 1.07;    // Bloom-7b1
constexpr double kB560Gbps = 5.7, kB560Alpha = 1.25;  // Bloom-560m

TEST(ContentionSlowdownTest, Table) {
  struct Case {
    double alpha, gbps;
    int n;
    double want;
  };
  const Case cases[] = {
      {kB7Alpha, kB7Gbps, 1, 1.0},                    // 18.8855 / 30.08 = 0.628 -> 1
      {kB7Alpha, kB7Gbps, 2, 18.8855 / 15.04},        // 1.25568...
      {kB7Alpha, kB7Gbps, 3, 18.8855 / (30.08 / 3)},  // 1.8835...
      {kB560Alpha, kB560Gbps, 2, 1.0},                // 7.125 / 15.04 = 0.474 -> 1
      {kB560Alpha, kB560Gbps, 4, 1.0},                // 7.125 / 7.52 = 0.947 -> 1
      {kB560Alpha, kB560Gbps, 5, 7.125 / 6.016},      // 1.1843...
      {1.0, 0.0, 3, 1.0},                             // not PCIe-bound
  };
  for (const Case& c : cases) {
    EXPECT_NEAR(ContentionSlowdown(c.alpha, c.gbps, kMax, c.n), c.want, 1e-12)
        << "alpha " << c.alpha << " gbps " << c.gbps << " n " << c.n;
  }
}

TEST(ContentionModelTest, RatesFollowTheSetOfJobsPerGpu) {
  const double slow2 = 18.8855 / 15.04;
  ContentionModel m({kMax, kMax, kMax}, /*enabled=*/true);
  std::vector<JobId> affected;
  m.Add(1, kB7Gbps, kB7Alpha, {0}, &affected);
  EXPECT_EQ(affected, (std::vector<JobId>{1}));
  EXPECT_DOUBLE_EQ(m.Rate(1), 1.0);  // alone

  affected.clear();
  m.Add(2, kB7Gbps, kB7Alpha, {0, 1}, &affected);  // a gang over GPUs 0 and 1
  EXPECT_EQ(affected, (std::vector<JobId>{1, 2}));
  EXPECT_NEAR(m.Rate(1), 1 / slow2, 1e-12);
  EXPECT_NEAR(m.Rate(2), 1 / slow2, 1e-12);  // min(GPU 0: 1/slow2, GPU 1: 1)

  affected.clear();
  m.Add(3, 0.0, 1.0, {0}, &affected);  // not PCIe-bound: not counted
  EXPECT_TRUE(affected.empty());
  EXPECT_EQ(m.JobsOn(0), 2);
  EXPECT_DOUBLE_EQ(m.Rate(3), 1.0);

  affected.clear();
  m.Add(4, kB7Gbps, kB7Alpha, {1, 1}, &affected);  // two instances on GPU 1 count once
  EXPECT_EQ(m.JobsOn(1), 2);
  EXPECT_EQ(affected, (std::vector<JobId>{2, 4}));

  affected.clear();
  m.Remove(1, &affected);  // GPU 0 keeps job 2 only
  EXPECT_EQ(affected, (std::vector<JobId>{2}));
  EXPECT_NEAR(m.Rate(2), 1 / slow2, 1e-12);  // GPU 1 still has 2 jobs

  affected.clear();
  m.Remove(4, &affected);
  EXPECT_EQ(affected, (std::vector<JobId>{2}));
  EXPECT_DOUBLE_EQ(m.Rate(2), 1.0);

  affected.clear();
  m.Remove(99, &affected);  // unknown: nothing
  EXPECT_TRUE(affected.empty());
}

TEST(ContentionModelTest, DisabledMeansRateOne) {
  ContentionModel m({kMax}, /*enabled=*/false);
  std::vector<JobId> affected;
  m.Add(1, kB7Gbps, kB7Alpha, {0}, &affected);
  m.Add(2, kB7Gbps, kB7Alpha, {0}, &affected);
  EXPECT_TRUE(affected.empty());
  EXPECT_DOUBLE_EQ(m.Rate(1), 1.0);
  EXPECT_EQ(m.JobsOn(0), 0);
}

}  // namespace
}  // namespace migsched
