// Statistical properties of the `serving` and `training` generators
// (sim/workload_families.h). Tolerances are 99.9% binomial intervals worked
// out by hand: for a share p over n jobs, 3.29 * sqrt(p (1 - p) / n).
#include "sim/workload_families.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;
using ::testing::HasSubstr;

constexpr int kN = 4000;

double Share(const std::vector<WorkloadJob>& jobs, bool (*pred)(const WorkloadJob&)) {
  int k = 0;
  for (const WorkloadJob& j : jobs) k += pred(j) ? 1 : 0;
  return static_cast<double>(k) / static_cast<double>(jobs.size());
}

std::vector<WorkloadJob> Serving(ServingOptions o) {
  o.num_jobs = kN;
  auto jobs = GenerateServing(Model("A100-40GB"), o);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? *jobs : std::vector<WorkloadJob>{};
}

// p = 0.7, n = 4000: 3.29 * sqrt(0.21 / 4000) = 0.0238.
TEST(ServingWorkloadTest, LatencySensitiveShareIsWithinItsBinomialInterval) {
  const std::vector<WorkloadJob> jobs = Serving({});
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kN));
  EXPECT_NEAR(Share(jobs, [](const WorkloadJob& j) { return j.latency_sensitive; }), 0.7, 0.0238);
}

// p = 0.2: 3.29 * sqrt(0.16 / 4000) = 0.0208; a service of several
// instances has exactly multi_count (2) of them.
TEST(ServingWorkloadTest, MultiInstanceServicesHaveTheirShareAndCount) {
  const std::vector<WorkloadJob> jobs = Serving({});
  EXPECT_NEAR(Share(jobs, [](const WorkloadJob& j) { return j.count > 1; }), 0.2, 0.0208);
  for (const WorkloadJob& j : jobs) EXPECT_TRUE(j.count == 1 || j.count == 2) << j.name;
}

// Bounded Pareto on [L, H] = [600, 604800] with shape a = 1.2:
// P(X > 10 L) = (10^-a - (L/H)^a) / (1 - (L/H)^a) = 0.0629;
// 3.29 * sqrt(0.0629 * 0.9371 / 4000) = 0.0126.
TEST(ServingWorkloadTest, LifetimesAreHeavyTailedBoundedPareto) {
  const std::vector<WorkloadJob> jobs = Serving({});
  const double a = 1.2, lh = std::pow(600.0 / 604800.0, a);
  const double p = (std::pow(10.0, -a) - lh) / (1 - lh);
  EXPECT_NEAR(p, 0.0629, 1e-4);
  EXPECT_NEAR(Share(jobs, [](const WorkloadJob& j) { return j.duration_s > 6000; }), p, 0.0126);
  for (const WorkloadJob& j : jobs) {
    EXPECT_GE(j.duration_s, 600);
    EXPECT_LE(j.duration_s, 604800);
  }
}

// rate(t) = (1 + A sin(2 pi t / P)) / G: the share of arrivals in the first
// half of a period is (P/2 + A P / pi) / P = 1/2 + A / pi = 0.6910 for A =
// 0.6. Over >= 100 periods the partial last one shifts it by <= 0.01; the
// binomial part is 3.29 * sqrt(0.691 * 0.309 / 4000) = 0.0240: 0.034 in all.
TEST(ServingWorkloadTest, ArrivalsFollowTheDiurnalRate) {
  ServingOptions o;
  o.diurnal_period_s = 600;
  const std::vector<WorkloadJob> jobs = Serving(o);
  EXPECT_DOUBLE_EQ(jobs.front().arrival_s, 0);
  ASSERT_GE(jobs.back().arrival_s, 100 * o.diurnal_period_s);
  const double share =
      Share(jobs, [](const WorkloadJob& j) { return std::fmod(j.arrival_s, 600.0) < 300.0; });
  EXPECT_NEAR(share, 0.5 + 0.6 / std::numbers::pi, 0.034);
  for (size_t i = 1; i < jobs.size(); ++i) EXPECT_GE(jobs[i].arrival_s, jobs[i - 1].arrival_s);
  // Without the swing the halves are even: 3.29 * sqrt(0.25 / 4000) + 0.01.
  o.diurnal_amplitude = 0;
  EXPECT_NEAR(
      Share(Serving(o), [](const WorkloadJob& j) { return std::fmod(j.arrival_s, 600.0) < 300.0; }),
      0.5, 0.036);
}

TEST(ServingWorkloadTest, IsSeeded) {
  ServingOptions o;
  o.num_jobs = 50;
  auto a = GenerateServing(Model("A100-40GB"), o);
  auto b = GenerateServing(Model("A100-40GB"), o);
  o.seed = 2;
  auto c = GenerateServing(Model("A100-40GB"), o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool same = true, differ = false;
  for (size_t i = 0; i < a->size(); ++i) {
    same = same && (*a)[i].arrival_s == (*b)[i].arrival_s &&
           (*a)[i].duration_s == (*b)[i].duration_s && (*a)[i].name == (*b)[i].name;
    differ = differ || (*a)[i].duration_s != (*c)[i].duration_s;
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differ);
  EXPECT_EQ((*a)[0].name, "sv-0001");
}

TEST(ServingWorkloadTest, RejectsOptionsOutOfRange) {
  ServingOptions o;
  o.latency_sensitive_share = 1.5;
  EXPECT_THAT(GenerateServing(Model("A100-40GB"), o).status().message(),
              HasSubstr("serving: latency_sensitive_share must be in [0, 1]"));
  o = {};
  o.multi_count = 1;
  EXPECT_THAT(GenerateServing(Model("A100-40GB"), o).status().message(),
              HasSubstr("multi_count must be >= 2"));
}

std::vector<WorkloadJob> Training(TrainingOptions o) {
  o.num_jobs = kN;
  auto jobs = GenerateTraining(Model("A100-40GB"), o);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? *jobs : std::vector<WorkloadJob>{};
}

// Gangs of 2+ (weights 0.3 + 0.2 + 0.1 = 0.6; no cap on 8 GPUs, every class
// holds at least 8 instances there): 3.29 * sqrt(0.24 / 4000) = 0.0255.
// Checkpointable p = 0.9: 3.29 * sqrt(0.09 / 4000) = 0.0156.
TEST(TrainingWorkloadTest, GangAndCheckpointSharesAreWithinTheirIntervals) {
  TrainingOptions o;
  o.num_gpus = 8;
  const std::vector<WorkloadJob> jobs = Training(o);
  EXPECT_NEAR(Share(jobs, [](const WorkloadJob& j) { return j.count >= 2; }), 0.6, 0.0255);
  EXPECT_NEAR(
      Share(jobs, [](const WorkloadJob& j) { return j.migratable == Migratable::kCheckpoint; }),
      0.9, 0.0156);
  for (const WorkloadJob& j : jobs) {
    EXPECT_FALSE(j.latency_sensitive);
    EXPECT_GE(j.duration_s, 3600);
    EXPECT_LE(j.duration_s, 2 * 86400.0);
  }
  // 7g (weight 0.35) is the most common class: 3.29 * sqrt(0.35 * 0.65 / 4000) = 0.0248.
  EXPECT_NEAR(Share(jobs, [](const WorkloadJob& j) { return j.gpu_fraction == 1.0; }), 0.35,
              0.0248);
}

// On one A100 a 7g gang can hold one instance at most, a 3g gang two: the
// gang of 8 is capped there.
TEST(TrainingWorkloadTest, GangsAreCappedAtWhatTheClusterHolds) {
  TrainingOptions o;
  o.num_gpus = 1;
  o.gang_sizes = {{8, 1.0}};
  o.classes = {{7, 1.0}};
  for (const WorkloadJob& j : Training(o)) ASSERT_EQ(j.count, 1);
  o.classes = {{3, 1.0}};
  for (const WorkloadJob& j : Training(o)) ASSERT_EQ(j.count, 2);
}

TEST(TrainingWorkloadTest, IsSeededAndNamed) {
  TrainingOptions o;
  o.num_jobs = 20;
  auto a = GenerateTraining(Model("A100-40GB"), o);
  auto b = GenerateTraining(Model("A100-40GB"), o);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].arrival_s, (*b)[i].arrival_s);
    EXPECT_EQ((*a)[i].count, (*b)[i].count);
  }
  EXPECT_EQ((*a)[0].name, "tr-0001");
  EXPECT_DOUBLE_EQ((*a)[0].arrival_s, 0);
}

}  // namespace
}  // namespace migsched
