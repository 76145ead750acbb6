// Hand-derived traces through the whole simulator (§4 step 5, §5, §8, §9 of
// docs/algorithms.md). Every expected value is worked out in the comment next
// to it; r = 0.023 s is one MIG create or destroy.
#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sched/policy.h"
#include "sim/churn.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::JobBuilder;
using ::migsched::testing::Model;
using ::testing::HasSubstr;

constexpr double kR = 0.023;  // seconds per create/destroy (default 23 ms)

// Reference jobs of §8 (HPCAsia'25): Bloom-7b1 and Bloom-560m offloaded inference.
const JobBuilder kBloom7b1 = AJob().Pcie(17.65, 1.07);
const JobBuilder kBloom560m = AJob().Pcie(5.7, 1.25);

std::vector<const GpuModel*> Gpus(const std::string& model, int n) {
  return std::vector<const GpuModel*>(n, &Model(model));
}

SimOptions Options(double reconfig_ms = 23) {
  static ManualClock clock;  // decision times are all 0: nothing wall-clock in the expectations
  SimOptions o;
  o.reconfig_ms = reconfig_ms;
  o.clock = &clock;
  o.self_check = true;
  return o;
}

SimResult Simulate(const std::vector<const GpuModel*>& gpus, const std::vector<WorkloadJob>& jobs,
                   const std::string& policy, const SimOptions& options = Options()) {
  auto r = RunSimulation(gpus, jobs, policy, SchedulerOptions{}, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// Two 4g.20gb jobs of 100 s at t = 0 on one A100 40GB: 4g.20gb has the single
// placement 0, so the second waits for the first.
const std::vector<WorkloadJob> kTwoBig = {AJob("4g.20gb").Named("a").Runs(100),
                                          AJob("4g.20gb").Named("b").Runs(100)};

TEST(SimulatorTest, FragAwareReusesTheIdleInstance) {
  SimResult r = Simulate(Gpus("A100-40GB", 1), kTwoBig, "frag-aware");
  ASSERT_EQ(r.jobs.size(), 2u);
  // a: create 4g@0 over [0, r]; runs [r, 100 + r].
  EXPECT_NEAR(r.jobs[0].placed_s, 0, 1e-12);
  EXPECT_NEAR(r.jobs[0].start_s, kR, 1e-12);
  EXPECT_NEAR(r.jobs[0].end_s, 100 + kR, 1e-9);
  EXPECT_EQ(r.jobs[0].instances, "0:4g.20gb@0");
  // frag-aware keeps the idle 4g@0; b reuses it with no reconfiguration:
  // placed and started at 100 + r, ends at 200 + r.
  EXPECT_NEAR(r.jobs[1].placed_s, 100 + kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].start_s, 100 + kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 200 + kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].wait_s, 100 + kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct_s, 200 + kR, 1e-9);
  const Metrics& m = r.metrics;
  EXPECT_NEAR(m.makespan_s, 200 + kR, 1e-9);
  EXPECT_EQ(m.creates, 1);
  EXPECT_EQ(m.destroys, 0);
  EXPECT_EQ(m.reuses, 1);
  EXPECT_EQ(m.reconfigurations, 1);
  EXPECT_EQ(m.setup_reconfigurations, 0);
  EXPECT_EQ(m.jobs_completed, 2);
  EXPECT_EQ(m.rejected, 0);
  // JCTs {100 + r, 200 + r}: mean 150 + r; p50 (h = 0.5) the midpoint; p95
  // (h = 0.95) 100 + r + 0.95 × 100.
  EXPECT_NEAR(m.jct_mean_s, 150 + kR, 1e-9);
  EXPECT_NEAR(m.jct_p50_s, 150 + kR, 1e-9);
  EXPECT_NEAR(m.jct_p95_s, 195 + kR, 1e-9);
  // Waits {r, 100 + r}.
  EXPECT_NEAR(m.wait_mean_s, 50 + kR, 1e-9);
  // 4 of 7 compute slices are held from t = 0 to the end.
  EXPECT_NEAR(m.utilization, 4.0 / 7, 1e-9);
  // FragCost(4g@0) = 0: every profile that still fits by capacity (1g.5gb at
  // 4, 5, 6; 1g.10gb at 4, 6; 2g at 4; 3g at 4) fits as well as it ideally can.
  EXPECT_NEAR(m.frag_mean, 0, 1e-12);
  // 2 jobs over 200.023 s: 2 / (200.023 / 86400) per day.
  EXPECT_NEAR(m.jobs_per_day, 2 * 86400 / (200 + kR), 1e-6);
  EXPECT_EQ(m.migrations, 0);
}

TEST(SimulatorTest, FirstFitDestroysOnReleaseAndRecreates) {
  SimResult r = Simulate(Gpus("A100-40GB", 1), kTwoBig, "first-fit");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].end_s, 100 + kR, 1e-9);
  // a ends at 100 + r; its 4g@0 is destroyed over [100 + r, 100 + 2r]; b is
  // placed at 100 + r and its create waits behind the destroy on the same GPU:
  // [100 + 2r, 100 + 3r]; b runs [100 + 3r, 200 + 3r].
  EXPECT_NEAR(r.jobs[1].placed_s, 100 + kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].start_s, 100 + 3 * kR, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 200 + 3 * kR, 1e-9);
  const Metrics& m = r.metrics;
  EXPECT_NEAR(m.makespan_s, 200 + 3 * kR, 1e-9);
  EXPECT_EQ(m.creates, 2);   // one per job
  EXPECT_EQ(m.destroys, 2);  // one per release
  EXPECT_EQ(m.reuses, 0);
  EXPECT_EQ(m.reconfigurations, 4);
  // JCTs {100 + r, 200 + 3r}, mean 150 + 2r; waits {r, 100 + 3r}, mean 50 + 2r.
  EXPECT_NEAR(m.jct_mean_s, 150 + 2 * kR, 1e-9);
  EXPECT_NEAR(m.wait_mean_s, 50 + 2 * kR, 1e-9);
  // 4 slices held over [0, 100 + r] by a and [100 + r, 200 + 3r] by b.
  EXPECT_NEAR(m.utilization, 4.0 / 7, 1e-9);
}

TEST(SimulatorTest, StaticRejectsAProfileOutsideItsLayout) {
  // all-balanced on A100 40GB is 2g.10gb + 2 × 1g.5gb + 3g.20gb: no 4g.
  SimResult r = Simulate(Gpus("A100-40GB", 1), kTwoBig, "static");
  const Metrics& m = r.metrics;
  EXPECT_EQ(m.rejected, 2);
  EXPECT_EQ(m.jobs_completed, 0);
  EXPECT_EQ(m.jobs_total, 2);
  EXPECT_EQ(m.makespan_s, 0);
  EXPECT_EQ(m.setup_reconfigurations, 4);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r.jobs[0].reason, "the static policy's layout has no 4g.20gb instance");
  EXPECT_TRUE(std::isnan(r.jobs[0].start_s));
  EXPECT_TRUE(std::isnan(r.jobs[0].jct_s));
  EXPECT_EQ(r.jobs[0].instances, "");
  EXPECT_EQ(m.per_profile.at("4g.20gb").rejected, 2);
}

TEST(SimulatorTest, StaticReusesThePreCreatedInstance) {
  // A 3g.20gb job arriving at 5 s runs at once on the layout's 3g.20gb@4.
  SimResult r =
      Simulate(Gpus("A100-40GB", 1), {AJob("3g.20gb").Named("a").ArrivesAt(5).Runs(100)}, "static");
  const Metrics& m = r.metrics;
  EXPECT_EQ(m.setup_reconfigurations, 4);  // 2g.10gb@0, 1g.5gb@2, 1g.5gb@3, 3g.20gb@4
  EXPECT_EQ(m.reconfigurations, 0);
  EXPECT_EQ(m.creates, 0);
  EXPECT_EQ(m.reuses, 1);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].instances, "0:3g.20gb@4");
  EXPECT_DOUBLE_EQ(r.jobs[0].start_s, 5);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 105);
  EXPECT_DOUBLE_EQ(m.makespan_s, 100);  // from the first arrival (5 s)
  EXPECT_DOUBLE_EQ(m.wait_mean_s, 0);
  // 3 of 7 slices busy over the whole makespan.
  EXPECT_NEAR(m.utilization, 3.0 / 7, 1e-12);
}

TEST(SimulatorTest, RejectsAtArrivalAndStillFinishes) {
  // A30 offers 1g.6gb, 2g.12gb, 4g.24gb: a 7g.40gb job can never run.
  SimResult r = Simulate(
      Gpus("A30-24GB", 1),
      {AJob("7g.40gb").Named("big").Runs(10), AJob("1g.6gb").Named("ok").ArrivesAt(1).Runs(10)},
      "frag-aware");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r.jobs[0].reason, "no GPU in the cluster (A30 24GB) offers profile 7g.40gb");
  EXPECT_EQ(r.jobs[1].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r.metrics.rejected, 1);
  EXPECT_EQ(r.metrics.jobs_completed, 1);
  EXPECT_EQ(r.metrics.jobs_total, 2);
  // First arrival 0 (the rejected job), last completion 1 + r + 10.
  EXPECT_NEAR(r.metrics.makespan_s, 11 + kR, 1e-9);
}

TEST(SimulatorTest, RejectsAGangLargerThanTheCluster) {
  // 5 full-GPU instances on 4 GPUs: never. 4 of them: one per GPU, created in
  // parallel (different GPUs), so the gang starts at r.
  SimResult r = Simulate(Gpus("A100-40GB", 4),
                         {AJob("7g.40gb").Named("five").Runs(10).Gang(5),
                          AJob("7g.40gb").Named("four").Runs(10).Gang(4)},
                         "first-fit");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_EQ(r.jobs[0].reason,
            "gang of 5x7g.40gb instances is larger than the cluster (at most 4 at once)");
  EXPECT_EQ(r.jobs[1].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r.jobs[1].instances, "0:7g.40gb@0;1:7g.40gb@0;2:7g.40gb@0;3:7g.40gb@0");
  EXPECT_NEAR(r.jobs[1].start_s, kR, 1e-12);
  EXPECT_NEAR(r.jobs[1].end_s, 10 + kR, 1e-9);
  EXPECT_EQ(r.metrics.creates, 4);
  EXPECT_EQ(r.metrics.per_profile.at("5x7g.40gb").rejected, 1);
  EXPECT_EQ(r.metrics.per_profile.at("4x7g.40gb").completed, 1);
}

TEST(SimulatorTest, GangStartsWhenItsSlowestGpuIsReconfigured) {
  // 2 × A100, first-fit. a (1g.5gb) -> GPU 0 1g@0, create over [0, r].
  // b (gang of 2 × 3g.20gb): GPU 0 3g@4 (3g@0 overlaps 1g@0), then GPU 1 3g@0.
  // GPU 0's create for b waits behind a's: [r, 2r]; GPU 1's runs [0, r]. b
  // starts at max(2r, r) = 2r.
  SimResult r =
      Simulate(Gpus("A100-40GB", 2),
               {AJob("1g.5gb").Named("a").Runs(10), AJob("3g.20gb").Named("b").Runs(10).Gang(2)},
               "first-fit");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].start_s, kR, 1e-12);
  EXPECT_EQ(r.jobs[1].instances, "0:3g.20gb@4;1:3g.20gb@0");
  EXPECT_NEAR(r.jobs[1].placed_s, 0, 1e-12);
  EXPECT_NEAR(r.jobs[1].start_s, 2 * kR, 1e-12);
  EXPECT_NEAR(r.jobs[1].end_s, 10 + 2 * kR, 1e-9);
}

// §8 with pcie_max = 30.08 GB/s (A100): two Bloom-7b1 jobs (17.65 GB/s,
// alpha 1.07) share it: n = 2, share 15.04, slowdown 1.07 × 17.65 / 15.04.
const double kSlow2 = 1.07 * 17.65 / (30.08 / 2);  // = 1.2556848...

TEST(SimulatorTest, ContentionSlowsTwoPcieJobsOnOneGpu) {
  // No reconfiguration time: both 3g.20gb jobs start at 0 (3g@4 then 3g@0).
  // a (100 s) and b (200 s) both progress at 1/kSlow2. a ends at 100 kSlow2;
  // then b has done 100 s of work and runs alone at rate 1 (alone: 1.07 ×
  // 17.65 / 30.08 = 0.628 -> max(1, .) = 1): b ends at 100 kSlow2 + 100.
  SimResult r = Simulate(Gpus("A100-40GB", 1),
                         {kBloom7b1.Profile("3g.20gb").Named("a").Runs(100),
                          kBloom7b1.Profile("3g.20gb").Named("b").Runs(200)},
                         "frag-aware", Options(0));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].end_s, 100 * kSlow2, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 100 * kSlow2 + 100, 1e-9);
}

TEST(SimulatorTest, ContentionStartsWhenTheJobRunsNotWhenItIsPlaced) {
  // Default r, frag-aware: a -> 3g@4 created over [0, r]; b -> 3g@0 created
  // over [r, 2r] (same GPU, serialised). a runs alone at rate 1 over [r, 2r]
  // (work done r), then both at 1/kSlow2. a's remaining 100 - r takes
  // (100 - r) kSlow2: a ends at 2r + (100 - r) kSlow2. By then b has done
  // 100 - r, its last r runs alone at rate 1: b ends r later.
  SimResult r = Simulate(Gpus("A100-40GB", 1),
                         {kBloom7b1.Profile("3g.20gb").Named("a").Runs(100),
                          kBloom7b1.Profile("3g.20gb").Named("b").Runs(100)},
                         "frag-aware");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].instances, "0:3g.20gb@4");
  EXPECT_NEAR(r.jobs[1].start_s, 2 * kR, 1e-12);
  const double a_end = 2 * kR + (100 - kR) * kSlow2;
  EXPECT_NEAR(r.jobs[0].end_s, a_end, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, a_end + kR, 1e-9);
}

TEST(SimulatorTest, SinglePcieJobAndNonPcieNeighbourRunAtFullSpeed) {
  // a is alone among PCIe-bound jobs (the ResNet-like c has pcie_gbps 0): n = 1
  // -> slowdown max(1, 0.628) = 1; both end at 100.
  SimResult r = Simulate(
      Gpus("A100-40GB", 1),
      {kBloom7b1.Profile("3g.20gb").Named("a").Runs(100), AJob("3g.20gb").Named("c").Runs(100)},
      "frag-aware", Options(0));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 100);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_s, 100);
}

TEST(SimulatorTest, ContentionOnlySlowsTheSensitiveJob) {
  // Bloom-560m (5.7 GB/s, alpha 1.25) next to Bloom-7b1: n = 2; 560m:
  // 1.25 × 5.7 / 15.04 = 0.474 -> 1 (full speed, ends at 100); 7b1 at
  // 1/kSlow2 until 100 (work 100/kSlow2), then alone at rate 1: ends at
  // 100 + (100 - 100/kSlow2).
  SimResult r = Simulate(Gpus("A100-40GB", 1),
                         {kBloom560m.Profile("3g.20gb").Named("s").Runs(100),
                          kBloom7b1.Profile("3g.20gb").Named("b").Runs(100)},
                         "frag-aware", Options(0));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].end_s, 100, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 200 - 100 / kSlow2, 1e-9);
}

TEST(SimulatorTest, GangRunsAtItsSlowestGpusRate) {
  // 2 × A100, first-fit, r = 0. a (3g, 50 s) -> GPU 0 3g@0. g (gang of 2 ×
  // 3g, 100 s) -> GPU 0 3g@4 and GPU 1 3g@0. GPU 0 has 2 PCIe jobs (rate
  // 1/kSlow2), GPU 1 one (rate 1): g runs at min = 1/kSlow2, like a. a needs
  // 50 kSlow2; then g (work done 50) runs at 1: ends 50 kSlow2 + 50.
  SimResult r = Simulate(Gpus("A100-40GB", 2),
                         {kBloom7b1.Profile("3g.20gb").Named("a").Runs(50),
                          kBloom7b1.Profile("3g.20gb").Named("g").Runs(100).Gang(2)},
                         "first-fit", Options(0));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[1].instances, "0:3g.20gb@4;1:3g.20gb@0");
  EXPECT_NEAR(r.jobs[0].end_s, 50 * kSlow2, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 50 * kSlow2 + 50, 1e-9);
}

TEST(SimulatorTest, ContentionOffRunsEveryJobAtRateOne) {
  SimOptions o = Options(0);
  o.contention = false;
  SimResult r = Simulate(Gpus("A100-40GB", 1),
                         {kBloom7b1.Profile("3g.20gb").Named("a").Runs(100),
                          kBloom7b1.Profile("3g.20gb").Named("b").Runs(200)},
                         "frag-aware", o);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 100);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_s, 200);
}

TEST(SimulatorTest, UtilizationAndFragmentationOfTwoSmallJobs) {
  // first-fit, r = 0: a (1g.5gb, 100 s) -> 1g@0, b (1g.5gb, 50 s) -> 1g@1.
  // Busy slices: 2 over [0, 50], 1 over [50, 100]: utilisation
  // (2×50 + 1×50) / (7 × 100) = 3/14.
  // FragCost{1g@0, 1g@1} = 0.2: free units 2..7, 5 slices; 1g.5gb 5/5,
  // 1g.10gb 3/3 (2, 4, 6), 2g 2/2 (2, 4), 3g 1/1 (4), 4g 0/1 (ideal: the two
  // 1g at 4, 5 would leave 4g@0); 7g left out (no capacity): 1 - 4/5.
  // FragCost{1g@0} = 4/15 (§2 table). frag_mean = (0.2×50 + 4/15×50) / 100 = 7/30;
  // frag_peak = 4/15.
  SimResult r = Simulate(Gpus("A100-40GB", 1),
                         {AJob("1g.5gb").Named("a").Runs(100), AJob("1g.5gb").Named("b").Runs(50)},
                         "first-fit", Options(0));
  const Metrics& m = r.metrics;
  EXPECT_DOUBLE_EQ(m.makespan_s, 100);
  EXPECT_NEAR(m.utilization, 3.0 / 14, 1e-12);
  EXPECT_NEAR(m.frag_mean, 7.0 / 30, 1e-9);
  EXPECT_NEAR(m.frag_peak, 4.0 / 15, 1e-9);
  EXPECT_DOUBLE_EQ(m.stranded_share_mean, 0);  // the queue is never non-empty
  // Timeline: t = 0 (both placed), 50 (b done), 100 (a done).
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_DOUBLE_EQ(r.timeline[0].time_s, 0);
  EXPECT_EQ(r.timeline[0].running_jobs, 2);
  EXPECT_NEAR(r.timeline[0].utilization, 2.0 / 7, 1e-12);
  EXPECT_NEAR(r.timeline[0].frag_rate, 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(r.timeline[1].time_s, 50);
  EXPECT_EQ(r.timeline[1].running_jobs, 1);
  EXPECT_NEAR(r.timeline[1].frag_rate, 4.0 / 15, 1e-9);
  EXPECT_DOUBLE_EQ(r.timeline[2].time_s, 100);
  EXPECT_EQ(r.timeline[2].running_jobs, 0);
  EXPECT_DOUBLE_EQ(r.timeline[2].utilization, 0);
}

TEST(SimulatorTest, StrandedCapacityWhileABigJobWaits) {
  // first-fit, r = 0, the two-4g trace: over [0, 100) b waits; the GPU has 3
  // free slices (units 4-7) where no 4g.20gb fits (its only placement is 0):
  // stranded 3/3 = 1. Over [100, 200) the queue is empty: 0. Mean 100/200.
  // Stranded capacity: 3 of 7 slices over half the makespan: 3/14.
  SimResult r = Simulate(Gpus("A100-40GB", 1), kTwoBig, "first-fit", Options(0));
  const Metrics& m = r.metrics;
  EXPECT_DOUBLE_EQ(m.makespan_s, 200);
  EXPECT_NEAR(m.stranded_share_mean, 0.5, 1e-12);
  EXPECT_NEAR(m.stranded_capacity_mean, 3.0 / 14, 1e-12);
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_EQ(r.timeline[0].queue_length, 1);
  EXPECT_DOUBLE_EQ(r.timeline[0].stranded, 1);
  EXPECT_EQ(r.timeline[1].queue_length, 0);
  EXPECT_DOUBLE_EQ(r.timeline[1].stranded, 0);
  // Per profile: JCTs {100, 200} -> mean 150; waits {0, 100} -> p95 = 95.
  const ProfileMetrics& p = m.per_profile.at("4g.20gb");
  EXPECT_EQ(p.jobs, 2);
  EXPECT_EQ(p.completed, 2);
  EXPECT_DOUBLE_EQ(p.jct_mean_s, 150);
  EXPECT_DOUBLE_EQ(p.wait_mean_s, 50);
  EXPECT_DOUBLE_EQ(p.wait_p95_s, 95);
}

TEST(SimulatorTest, FractionJobsAreReportedUnderTheirProfile) {
  // gpu_fraction 0.4 by compute on A100: 3g.20gb (3/7 = 0.43 is the smallest >= 0.4).
  WorkloadJob j = AJob("").Named("f").Runs(10);
  j.gpu_fraction = 0.4;
  SimResult r = Simulate(Gpus("A100-40GB", 1), {j}, "first-fit");
  EXPECT_EQ(r.metrics.per_profile.count("3g.20gb"), 1u);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].request, "gpu_fraction 0.4");
  EXPECT_EQ(r.jobs[0].instances, "0:3g.20gb@0");
}

TEST(SimulatorTest, ProgressIsReportedAtTheEnd) {
  SimOptions o = Options();
  std::vector<SimProgress> seen;
  o.progress = [&](const SimProgress& p) { seen.push_back(p); };
  Simulate(Gpus("A100-40GB", 1), kTwoBig, "frag-aware", o);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done, 2);
  EXPECT_EQ(seen.back().total, 2);
  EXPECT_NEAR(seen.back().sim_time_s, 200 + kR, 1e-9);
}

TEST(SimulatorTest, BadInputIsRejected) {
  const auto gpus = Gpus("A100-40GB", 1);
  auto unsorted = RunSimulation(
      gpus, {AJob("1g.5gb").Named("late").ArrivesAt(5), AJob("1g.5gb").Named("early").ArrivesAt(2)},
      "first-fit", SchedulerOptions{}, Options());
  ASSERT_FALSE(unsorted.ok());
  EXPECT_EQ(unsorted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unsorted.status().message(),
            "jobs must be sorted by arrival_s: job 1 ('early') arrives at 2 s, before job 0 "
            "('late') at 5 s");

  auto no_jobs = RunSimulation(gpus, {}, "first-fit", SchedulerOptions{}, Options());
  EXPECT_EQ(no_jobs.status().message(), "the workload has no jobs");

  auto no_gpus = RunSimulation({}, kTwoBig, "first-fit", SchedulerOptions{}, Options());
  EXPECT_EQ(no_gpus.status().message(), "the cluster has no GPUs");

  auto zero = RunSimulation(gpus, {AJob("1g.5gb").Named("z").Runs(0)}, "first-fit",
                            SchedulerOptions{}, Options());
  EXPECT_EQ(zero.status().message(), "job 0 ('z'): duration_s must be from 1e-06 to 1e+15 s");

  auto policy = RunSimulation(gpus, kTwoBig, "no-such", SchedulerOptions{}, Options());
  EXPECT_EQ(policy.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(policy.status().message(), HasSubstr("unknown policy 'no-such'"));
  // Regression: the list of known names left out the reference, which the simulator takes.
  EXPECT_THAT(policy.status().message(),
              HasSubstr("; the simulator also runs frag-free-reference (the fragmentation-free "
                        "indicator, not a policy)"));

  SimOptions bad = Options();
  bad.reconfig_ms = -1;
  auto opt = RunSimulation(gpus, kTwoBig, "first-fit", SchedulerOptions{}, bad);
  EXPECT_EQ(opt.status().message(), "reconfig_ms must be a finite number >= 0, got -1");
}

TEST(SimulatorTest, ContentionNeedsThePcieBandwidthOfEveryModel) {
  GpuModel::Spec spec = Model("A100-40GB").spec();
  spec.name = "No PCIe";
  spec.short_names = {"NOPCIE"};
  spec.aliases = {};
  spec.pcie_max_gbps = 0;
  auto model = GpuModel::Create(spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<WorkloadJob> jobs = {AJob("1g.5gb").Named("plain"),
                                         kBloom7b1.Profile("1g.5gb").Named("bloom").ArrivesAt(1)};
  auto r = RunSimulation({&*model}, jobs, "first-fit", SchedulerOptions{}, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "contention is on and job 1 ('bloom') is PCIe-bound, but GPU model 'No PCIe' has no "
            "pcie_max_gbps in the catalog (turn contention off or add it)");
  SimOptions off = Options();
  off.contention = false;
  EXPECT_TRUE(RunSimulation({&*model}, jobs, "first-fit", SchedulerOptions{}, off).ok());
}

// `full`'s periodic migration pass (every 300 s) once stepped through every interval while one
// job ran: a one-line trace of duration 1e12 s took 3.3e9 passes. Now the ticks between two
// events that no pass can use are skipped. By hand: event times 0 (arrival), r (the create
// done, start), 300 (the first tick: idle, the next event is the completion, more than 64
// intervals away, so the next tick is the first one at or after it), r + 1e12 (completion;
// the tick then due finds nothing running and nothing to arrive). A tick that rounding puts
// just before the completion adds one more event time: at most 5.
TEST(SimulatorTest, AOneJobTraceWithAHugeDurationUnderFullRunsInTimeProportionalToItsEvents) {
  const std::vector<WorkloadJob> jobs = {
      AJob("3g.20gb").Named("long").Runs(1e12).Moves(Migratable::kCheckpoint)};
  const SchedulerOptions full = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  ASSERT_EQ(full.migration.defrag_interval_s, 300);  // the premise: full ticks every 300 s
  auto r = RunSimulation(Gpus("A100-40GB", 1), jobs, "full", full, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(r->event_times, 5);
  EXPECT_GE(r->event_times, 4);
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(r->jobs[0].end_s, kR + 1e12);
}

// An arrival of 1e308 s: 1e308 + 300 s is 1e308 s in doubles, so the tick was pushed at its own
// time again and again and the run never ended. By hand: the arrival and the first tick at
// 1e308 (start at once: 1e308 + r is 1e308), the completion at 1e308 + 600 = 1e308 (a second
// event time at the same instant: it was pushed after the first batch), then the next tick, one
// double later, finds nothing running: 2 event times, 3 if that tick is not yet stale.
TEST(SimulatorTest, AOneJobTraceWithAHugeArrivalTimeUnderFullEnds) {
  const std::vector<WorkloadJob> jobs = {
      AJob("3g.20gb").Named("late").ArrivesAt(1e308).Runs(600).Moves(Migratable::kRestart)};
  const SchedulerOptions full = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  auto r = RunSimulation(Gpus("A100-40GB", 1), jobs, "full", full, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(r->event_times, 3);
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r->metrics.jobs_completed, 1);
}

// `full` is the lb+frag policy with migration on among its defaults: lb+frag run with exactly
// full's options places every job where `full` does, and `full --migration off` moves nothing.
// Churn on 4 A100 at load 1.1 (seed 7) so that `full` moves some jobs (the premise).
TEST(SimulatorTest, FullIsLbFragWithMigrationOn) {
  ChurnOptions c;
  c.num_jobs = 150;
  c.load = 1.1;
  c.seed = 7;
  StatusOr<std::vector<WorkloadJob>> jobs = GenerateChurn(Model("A100-40GB"), c);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  const SchedulerOptions full = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  ASSERT_TRUE(full.migration.enabled);
  auto as_full = RunSimulation(Gpus("A100-40GB", 4), *jobs, "full", full, Options());
  auto as_lb_frag = RunSimulation(Gpus("A100-40GB", 4), *jobs, "lb+frag", full, Options());
  ASSERT_TRUE(as_full.ok() && as_lb_frag.ok());
  ASSERT_GT(as_full->metrics.migrations, 0);  // the premise: migration acts here
  EXPECT_EQ(as_full->jobs, as_lb_frag->jobs);
  EXPECT_EQ(as_full->metrics.migrations, as_lb_frag->metrics.migrations);
  SchedulerOptions off = full;
  off.migration.enabled = false;
  auto no_moves = RunSimulation(Gpus("A100-40GB", 4), *jobs, "full", off, Options());
  ASSERT_TRUE(no_moves.ok());
  EXPECT_EQ(no_moves->metrics.migrations, 0);
  EXPECT_EQ(no_moves->metrics.evacuations, 0);
  EXPECT_NE(no_moves->jobs, as_full->jobs);
}

TEST(SimOptionsTest, Validate) {
  SimOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.fill_target = 0;
  EXPECT_EQ(o.Validate().message(), "fill_target must be in (0, 100], got 0");
  o = SimOptions{};
  o.progress_interval_s = 0;
  EXPECT_EQ(o.Validate().message(), "progress_interval_s must be > 0, got 0");
  EXPECT_EQ(ParseSimMode("fill").value(), SimMode::kFill);
  EXPECT_EQ(ParseSimMode("online").value(), SimMode::kOnline);
  EXPECT_EQ(ParseSimMode("batch").status().message(),
            "simulation mode 'batch' is not one of online, fill");
}

}  // namespace
}  // namespace migsched
