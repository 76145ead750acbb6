#include "sim/replicas.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace migsched {
namespace {

TEST(StudentT975Test, MatchesTheTables) {
  // Two-sided 95% critical values of Student's t (any statistics table).
  EXPECT_NEAR(StudentT975(1), 12.7062047, 1e-6);
  EXPECT_NEAR(StudentT975(2), 4.3026527, 1e-6);
  EXPECT_NEAR(StudentT975(9), 2.2621572, 1e-6);
  EXPECT_NEAR(StudentT975(29), 2.0452296, 1e-6);
  EXPECT_NEAR(StudentT975(100000), 1.959976, 1e-4);  // the normal's 1.96 in the limit
  EXPECT_TRUE(std::isnan(StudentT975(0)));
}

TEST(MeanIntervalTest, HandWorked) {
  // {1, 2, 3, 4}: mean 2.5, sd = sqrt(5/3) = 1.29099, t(3) = 3.18245;
  // half = 3.18245 × 1.29099 / 2 = 2.05426.
  const Interval i = MeanInterval({1, 2, 3, 4});
  EXPECT_EQ(i.n, 4);
  EXPECT_DOUBLE_EQ(i.mean, 2.5);
  EXPECT_NEAR(i.half, 2.054260, 1e-5);
  const Interval one = MeanInterval({7, NAN});  // NaN left out; one value: no interval
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_TRUE(std::isnan(one.half));
}

TEST(ComparePairedTest, PairingRemovesTheReplicaNoise) {
  // Replicas differ a lot between themselves (10, 20, 30, 40) but a is always
  // 1 below ref: the paired difference is exactly -1 with no spread, hence
  // significant, although the two means' own intervals overlap widely.
  const PairedChange c = ComparePaired({9, 19, 29, 39}, {10, 20, 30, 40});
  EXPECT_EQ(c.n, 4);
  EXPECT_DOUBLE_EQ(c.diff, -1);
  EXPECT_DOUBLE_EQ(c.diff_half, 0);
  EXPECT_DOUBLE_EQ(c.ratio, 24.0 / 25);
  EXPECT_TRUE(c.significant);
  // Differences {+1, -1, +1, -1}: mean 0, not significant; ratio 1 ± half / 25.
  const PairedChange n = ComparePaired({11, 19, 31, 39}, {10, 20, 30, 40});
  EXPECT_DOUBLE_EQ(n.diff, 0);
  EXPECT_FALSE(n.significant);
  EXPECT_DOUBLE_EQ(n.ratio, 1);
  // sd of {1, -1, 1, -1} = sqrt(4/3); half = 3.18245 × 1.1547 / 2 = 1.83739.
  EXPECT_NEAR(n.diff_half, 1.837388, 1e-5);
  EXPECT_NEAR(n.ratio_half, 1.837388 / 25, 1e-6);
}

TEST(ComparePairedTest, MissingValuesDropTheirPair) {
  const PairedChange c = ComparePaired({1, NAN, 3}, {2, 5, NAN});
  EXPECT_EQ(c.n, 1);
  EXPECT_DOUBLE_EQ(c.diff, -1);
  EXPECT_FALSE(c.significant);  // one pair: no interval
}

TEST(ReplicaJsonTest, MeansHalfWidthsAndPairsKeyByKey) {
  Metrics a, b;
  a.policy = b.policy = "p";
  a.jct_mean_s = 10;
  b.jct_mean_s = 20;
  a.per_profile["7g.40gb"].completed = 1;
  a.per_profile["7g.40gb"].wait_p95_s = 4;
  b.per_profile["7g.40gb"].completed = 1;
  b.per_profile["7g.40gb"].wait_p95_s = 8;
  a.rejected_reasons["x"] = 2;
  const nlohmann::json m = ReplicaMeans({a, b});
  EXPECT_EQ(m["policy"], "p");
  EXPECT_DOUBLE_EQ(m["jct_mean_s"].get<double>(), 15);
  EXPECT_DOUBLE_EQ(m["per_profile"]["7g.40gb"]["wait_p95_s"].get<double>(), 6);
  EXPECT_DOUBLE_EQ(m["rejected_reasons"]["x"].get<double>(), 1);  // 2 and 0
  const nlohmann::json h = ReplicaHalfWidths({a, b});
  // {10, 20}: sd = 7.0711, t(1) = 12.7062: half = 12.7062 × 7.0711 / sqrt(2) = 63.531.
  EXPECT_NEAR(h["jct_mean_s"].get<double>(), 63.531, 1e-3);
  const nlohmann::json p = PairedToJson({a, a}, {b, b});
  EXPECT_DOUBLE_EQ(p["jct_mean_s"]["ratio"].get<double>(), 0.5);
  EXPECT_TRUE(p["jct_mean_s"]["significant"].get<bool>());
  EXPECT_DOUBLE_EQ(p["per_profile"]["7g.40gb"]["wait_p95_s"]["diff"].get<double>(), -4);
  EXPECT_EQ(ValuesOf({a, b}, "per_profile/7g.40gb/wait_p95_s"), (std::vector<double>{4, 8}));
}

// Replicas of one run, each {jobs_total, jobs_completed, rejected} (online:
// the rest of jobs_total timed out).
std::vector<Metrics> CountedReplicas(const std::vector<std::array<int64_t, 3>>& counts,
                                     const std::string& mode = "online") {
  std::vector<Metrics> out;
  for (const auto& [total, completed, rejected] : counts) {
    Metrics m;
    m.mode = mode;
    m.jobs_total = total;
    m.jobs_completed = completed;
    m.rejected = rejected;
    out.push_back(m);
  }
  return out;
}

// The bug: `compare` had three rules for whether a policy compares with the
// reference. Its JSON's comparable_to_reference read replica 0 only, its
// report compared the means, its terminal table none. The one rule: every
// replica's job counts, replica by replica.
TEST(ComparableToReferenceTest, EveryReplicaMustMatchNotReplicaZeroNorTheMeans) {
  // The reference: 10 jobs; replica 1 timed one out (9 completed, 0 rejected).
  const std::vector<Metrics> ref = CountedReplicas({{10, 10, 0}, {10, 9, 0}, {10, 10, 0}});
  EXPECT_TRUE(ComparableToReference(ref, ref));
  // Replica 0 matches, replica 2 does not (9 completed: one job rejected).
  const std::vector<Metrics> late = CountedReplicas({{10, 10, 0}, {10, 9, 0}, {10, 9, 1}});
  EXPECT_FALSE(ComparableToReference(late, ref));
  JobCountsMismatch m = CompareJobCounts(JobCountsOf(late), JobCountsOf(ref));
  EXPECT_EQ(m.key, "jobs_completed");
  EXPECT_EQ(m.replica, 2u);
  EXPECT_EQ(m.value, 9);
  EXPECT_EQ(m.reference, 10);
  // The same means (29 of 30 completed), other replicas: 9 against 10 in replica 0.
  const std::vector<Metrics> swapped = CountedReplicas({{10, 9, 0}, {10, 10, 0}, {10, 10, 0}});
  m = CompareJobCounts(JobCountsOf(swapped), JobCountsOf(ref));
  EXPECT_EQ(m.key, "jobs_completed");
  EXPECT_EQ(m.replica, 0u);
  // The same jobs completed, but in replica 1 the job the reference timed out
  // was rejected: what ran differs (utilisation, energy).
  const std::vector<Metrics> rejecting = CountedReplicas({{10, 10, 0}, {10, 9, 1}, {10, 10, 0}});
  m = CompareJobCounts(JobCountsOf(rejecting), JobCountsOf(ref));
  EXPECT_EQ(m.key, "rejected");
  EXPECT_EQ(m.replica, 1u);
  EXPECT_EQ(m.value, 1);
  EXPECT_EQ(m.reference, 0);
  // Another workload size comes first.
  m = CompareJobCounts(JobCountsOf(CountedReplicas({{10, 10, 0}, {11, 10, 1}, {10, 9, 1}})),
                       JobCountsOf(ref));
  EXPECT_EQ(m.key, "jobs_total");
  EXPECT_EQ(m.replica, 1u);
  // Other numbers of replicas do not pair: the means, 9.5 completed against 29 / 3.
  m = CompareJobCounts(JobCountsOf(CountedReplicas({{10, 10, 0}, {10, 9, 0}})), JobCountsOf(ref));
  EXPECT_EQ(m.key, "jobs_completed");
  EXPECT_EQ(m.replica, JobCountsMismatch::kMeans);
  EXPECT_DOUBLE_EQ(m.value, 9.5);
  EXPECT_DOUBLE_EQ(m.reference, 29 / 3.0);
  EXPECT_TRUE(CompareJobCounts(JobCountsOf(CountedReplicas({{10, 10, 0}})),
                               JobCountsOf(CountedReplicas({{10, 10, 0}, {10, 10, 0}})))
                  .comparable());
  // Fill mode: the arrivals that found no room are what is measured, not compared.
  EXPECT_TRUE(ComparableToReference(CountedReplicas({{50, 0, 5}, {50, 0, 7}}, "fill"),
                                    CountedReplicas({{50, 0, 9}, {50, 0, 7}}, "fill")));
}

TEST(ComparableToReferenceTest, JsonFormsReadEachReplicasResults) {
  const std::vector<Metrics> ref = CountedReplicas({{10, 10, 0}, {10, 9, 0}, {10, 10, 0}});
  const std::vector<Metrics> late = CountedReplicas({{10, 10, 0}, {10, 9, 0}, {10, 9, 1}});
  // A replicated run's JSON (cli/replica_output.h ReplicaRunJson): its means,
  // then every replica's results.
  auto replicated = [](const std::vector<Metrics>& reps) {
    nlohmann::json j = ReplicaMeans(reps);
    j["replica_results"] = nlohmann::json::array();
    for (const Metrics& m : reps) j["replica_results"].push_back(MetricsToJson(m));
    return j;
  };
  const JobCountsMismatch m =
      CompareJobCounts(JobCountsOfJson(replicated(late)), JobCountsOfJson(replicated(ref)));
  EXPECT_EQ(m.key, "jobs_completed");
  EXPECT_EQ(m.replica, 2u);
  EXPECT_TRUE(CompareJobCounts(JobCountsOfJson(replicated(ref)), JobCountsOfJson(replicated(ref)))
                  .comparable());
  // One run: the object itself. A count absent from either is not compared.
  const nlohmann::json a = {{"mode", "online"}, {"jobs_completed", 10}};
  const nlohmann::json b = {{"mode", "online"}, {"jobs_completed", 10}, {"rejected", 2}};
  EXPECT_TRUE(CompareJobCounts(JobCountsOfJson(a), JobCountsOfJson(b)).comparable());
  const nlohmann::json c = {{"mode", "online"}, {"jobs_completed", 9}};
  EXPECT_EQ(CompareJobCounts(JobCountsOfJson(c), JobCountsOfJson(b)).key, "jobs_completed");
}

TEST(JitterWorkloadTest, KeepsOrderAndBatchesAndStaysWithinTheFraction) {
  std::vector<WorkloadJob> jobs(5);
  const double arrivals[] = {0, 100, 100, 300, 1000};
  for (int i = 0; i < 5; ++i) {
    jobs[i].arrival_s = arrivals[i];
    jobs[i].duration_s = 60;
  }
  std::vector<WorkloadJob> a = jobs, b = jobs, c = jobs;
  JitterWorkload(&a, 0.05, 7);
  JitterWorkload(&b, 0.05, 7);
  JitterWorkload(&c, 0.05, 8);
  EXPECT_DOUBLE_EQ(a[0].arrival_s, 0);               // the first arrival keeps its time
  EXPECT_DOUBLE_EQ(a[1].arrival_s, a[2].arrival_s);  // a gap of 0 stays 0
  bool differs = false;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);  // same seed, same workload
    EXPECT_EQ(a[i].duration_s, b[i].duration_s);
    differs = differs || a[i].arrival_s != c[i].arrival_s;
    EXPECT_GE(a[i].duration_s, 57);
    EXPECT_LE(a[i].duration_s, 63);
    if (i > 0) {
      const double gap = arrivals[i] - arrivals[i - 1],
                   jittered = a[i].arrival_s - a[i - 1].arrival_s;
      EXPECT_GE(jittered, 0.95 * gap - 1e-9);
      EXPECT_LE(jittered, 1.05 * gap + 1e-9);
    }
  }
  EXPECT_TRUE(differs);  // another seed, another workload
  std::vector<WorkloadJob> d = jobs;
  JitterWorkload(&d, 0, 7);  // no jitter: unchanged
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d[i].arrival_s, jobs[i].arrival_s);
}

}  // namespace
}  // namespace migsched
