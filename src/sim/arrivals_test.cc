#include "sim/arrivals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "testing/builders.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;

// Demands by job name, as a caller would resolve them on its GPU model.
std::function<double(const Job&)> DemandTable(std::map<std::string, double> table) {
  return [table](const Job& j) {
    auto it = table.find(j.name);
    return it == table.end() ? 0.0 : it->second;
  };
}

// Hand-computed example used below:
//   A: 1 x 3/7 GPU for 700 s = 300 GPU-s; B: 2 x 1 GPU for 100 s = 200;
//   C: 1 x 1/7 GPU for 700 s = 100.  E[dD] = 600 / 3 = 200 GPU-s.
//   N = 4 GPUs, load 0.5: G = 200 / (0.5 * 4) = 100 s.
std::vector<WorkloadJob> Abc() {
  return {AJob().Fraction(1).Named("A").ArrivesAt(10).Runs(700),
          AJob().Fraction(1).Named("B").ArrivesAt(20).Gang(2).Runs(100),
          AJob().Fraction(1).Named("C").ArrivesAt(40).Runs(700)};
}
ArrivalOptions AbcOptions(ArrivalMode mode) {
  ArrivalOptions o;
  o.mode = mode;
  o.load = 0.5;
  o.num_gpus = 4;
  o.demand = DemandTable({{"A", 3.0 / 7}, {"B", 1.0}, {"C", 1.0 / 7}});
  return o;
}

TEST(ArrivalsTest, MeanGapHandExample) {
  auto g = MeanGapForLoad(Abc(), AbcOptions(ArrivalMode::kPoisson));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_NEAR(*g, 100.0, 1e-9);
}

TEST(ArrivalsTest, TraceOrderScaleFactorHandExample) {
  // Original gaps 10 and 20 (mean 15) must become a mean of G = 100:
  // k = 100 / 15, arrivals 0, 10k = 66.67, 30k = 200.
  std::vector<WorkloadJob> jobs = Abc();
  ASSERT_TRUE(RegenerateArrivals(&jobs, AbcOptions(ArrivalMode::kTraceOrder)).ok());
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].name, "A");
  EXPECT_EQ(jobs[1].name, "B");
  EXPECT_EQ(jobs[2].name, "C");
  EXPECT_EQ(jobs[0].arrival_s, 0);
  EXPECT_NEAR(jobs[1].arrival_s, 200.0 / 3, 1e-9);
  EXPECT_NEAR(jobs[2].arrival_s, 200.0, 1e-9);
  // Offered load = 600 GPU-s / (4 GPUs * 3 jobs * 100 s) = 0.5.
}

TEST(ArrivalsTest, TraceOrderSortsStablyAndKeepsGapRatios) {
  // Unsorted, with a tie (b1, b2 at 5) that must keep vector order.
  std::vector<WorkloadJob> jobs = {AJob().Fraction(1).Named("c").ArrivesAt(35).Runs(10),
                                   AJob().Fraction(1).Named("b1").ArrivesAt(5).Runs(10),
                                   AJob().Fraction(1).Named("a").Runs(10),
                                   AJob().Fraction(1).Named("b2").ArrivesAt(5).Runs(10),
                                   AJob().Fraction(1).Named("d").ArrivesAt(100).Runs(10)};
  ArrivalOptions o;
  o.mode = ArrivalMode::kTraceOrder;
  o.load = 0.8;
  o.num_gpus = 2;
  o.demand = [](const Job&) { return 0.5; };
  // Hand: E[dD] = 0.5 * 10 = 5 GPU-s; G = 5 / (0.8 * 2) = 3.125 s; original
  // mean gap = 100 / 4 = 25 s; k = 0.125.
  ASSERT_TRUE(RegenerateArrivals(&jobs, o).ok());
  std::vector<std::string> order;
  for (const WorkloadJob& j : jobs) order.push_back(j.name);
  EXPECT_THAT(order, ::testing::ElementsAre("a", "b1", "b2", "c", "d"));
  const std::vector<double> expected = {0, 0.625, 0.625, 4.375, 12.5};
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_NEAR(jobs[i].arrival_s, expected[i], 1e-12);
  // Ratios of gaps: originals 5, 0, 30, 65 -> 5:30:65 kept.
  EXPECT_NEAR((jobs[3].arrival_s - jobs[2].arrival_s) / (jobs[1].arrival_s - jobs[0].arrival_s),
              6.0, 1e-12);
  EXPECT_NEAR((jobs[4].arrival_s - jobs[3].arrival_s) / (jobs[1].arrival_s - jobs[0].arrival_s),
              13.0, 1e-12);
}

TEST(ArrivalsTest, PoissonMeanGapMatchesFormula) {
  const uint64_t seed = 20240601;
  std::printf("ArrivalsTest.PoissonMeanGapMatchesFormula seed %llu\n",
              static_cast<unsigned long long>(seed));
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  // 20,001 jobs with mixed shapes: demand 1/7..7/7, count 1 or 2, durations
  // 60..600 s. The expected G comes from the formula, summed here directly.
  std::vector<WorkloadJob> jobs;
  double work = 0;
  for (int i = 0; i < 20001; ++i) {
    WorkloadJob j =
        AJob().Fraction(1).Named("j" + std::to_string(i)).Gang(1 + i % 2).Runs(60.0 * (1 + i % 10));
    j.gpu_fraction = (1 + i % 7) / 7.0;
    work += j.count * j.gpu_fraction * j.duration_s;
    jobs.push_back(j);
  }
  ArrivalOptions o;
  o.load = 0.9;
  o.num_gpus = 16;
  o.seed = seed;
  o.demand = [](const Job& j) { return j.gpu_fraction; };
  const double expected_gap = work / jobs.size() / (0.9 * 16);
  ASSERT_TRUE(RegenerateArrivals(&jobs, o).ok());
  EXPECT_EQ(jobs.front().arrival_s, 0);
  int above_mean = 0;
  for (size_t i = 1; i < jobs.size(); ++i) {
    ASSERT_GE(jobs[i].arrival_s, jobs[i - 1].arrival_s);
    above_mean += (jobs[i].arrival_s - jobs[i - 1].arrival_s) > expected_gap;
  }
  // Mean of 20,000 exponential gaps: relative standard error 1/sqrt(20000) =
  // 0.7%; allow 3%.
  const double observed_gap = jobs.back().arrival_s / (jobs.size() - 1);
  EXPECT_NEAR(observed_gap / expected_gap, 1.0, 0.03);
  // Exponential: P(gap > mean) = e^-1 = 0.368; sigma = 0.0034, allow 0.015.
  EXPECT_NEAR(above_mean / 20000.0, std::exp(-1.0), 0.015);
  // Offered load over the generated span, as defined in arrivals.h.
  EXPECT_NEAR(work / (16 * jobs.size() * observed_gap), 0.9, 0.03);
}

TEST(ArrivalsTest, PoissonIsDeterministicAndKeepsOrder) {
  auto run = [](uint64_t seed) {
    std::vector<WorkloadJob> jobs = Abc();
    std::swap(jobs[0], jobs[2]);  // C, B, A: poisson keeps vector order
    ArrivalOptions o = AbcOptions(ArrivalMode::kPoisson);
    o.seed = seed;
    EXPECT_TRUE(RegenerateArrivals(&jobs, o).ok());
    return jobs;
  };
  std::vector<WorkloadJob> a = run(7), b = run(7), c = run(8);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].name, "C");
  EXPECT_EQ(a[0].arrival_s, 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
  EXPECT_NE(a[1].arrival_s, c[1].arrival_s);
}

TEST(ArrivalsTest, SingleAndNoJobs) {
  std::vector<WorkloadJob> none;
  EXPECT_TRUE(RegenerateArrivals(&none, AbcOptions(ArrivalMode::kPoisson)).ok());
  for (ArrivalMode m : {ArrivalMode::kPoisson, ArrivalMode::kTraceOrder}) {
    std::vector<WorkloadJob> one = {AJob().Fraction(1).Named("A").ArrivesAt(123).Runs(700)};
    ASSERT_TRUE(RegenerateArrivals(&one, AbcOptions(m)).ok());
    EXPECT_EQ(one[0].arrival_s, 0);
  }
}

TEST(ArrivalsTest, ModeNames) {
  EXPECT_EQ(*ParseArrivalMode("poisson"), ArrivalMode::kPoisson);
  EXPECT_EQ(*ParseArrivalMode("trace-order"), ArrivalMode::kTraceOrder);
  EXPECT_EQ(ArrivalModeName(ArrivalMode::kTraceOrder), "trace-order");
  EXPECT_EQ(ParseArrivalMode("uniform").status().message(),
            "'uniform' is not one of poisson, trace-order");
}

TEST(ArrivalsTest, Errors) {
  struct Case {
    std::string label;
    std::function<void(ArrivalOptions*, std::vector<WorkloadJob>*)> mutate;
    StatusCode code;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"load 0", [](ArrivalOptions* o, std::vector<WorkloadJob>*) { o->load = 0; },
       StatusCode::kInvalidArgument, "arrivals: load must be a number > 0, got 0"},
      {"load nan", [](ArrivalOptions* o, std::vector<WorkloadJob>*) { o->load = NAN; },
       StatusCode::kInvalidArgument, "arrivals: load must be a number > 0, got nan"},
      {"no gpus", [](ArrivalOptions* o, std::vector<WorkloadJob>*) { o->num_gpus = 0; },
       StatusCode::kInvalidArgument, "arrivals: num_gpus must be >= 1, got 0"},
      {"no demand", [](ArrivalOptions* o, std::vector<WorkloadJob>*) { o->demand = nullptr; },
       StatusCode::kInvalidArgument, "arrivals: no demand function given"},
      {"unresolvable job", [](ArrivalOptions*, std::vector<WorkloadJob>* j) { (*j)[1].name = "X"; },
       StatusCode::kInvalidArgument,
       "arrivals: job 'X': GPU demand 0 per instance must be in (0, 1] (is its request "
       "2xgpu_fraction 1 available on the cluster's GPU model?)"},
      {"zero duration",
       [](ArrivalOptions*, std::vector<WorkloadJob>* j) { (*j)[2].duration_s = 0; },
       StatusCode::kInvalidArgument, "arrivals: job 'C': duration_s 0 must be > 0"},
      {"trace-order without spread",
       [](ArrivalOptions* o, std::vector<WorkloadJob>* j) {
         o->mode = ArrivalMode::kTraceOrder;
         for (WorkloadJob& x : *j) x.arrival_s = 5;
       },
       StatusCode::kFailedPrecondition,
       "arrivals: trace-order needs at least two distinct arrival times; all 3 jobs arrive at "
       "5 s (use poisson)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    std::vector<WorkloadJob> jobs = Abc();
    ArrivalOptions o = AbcOptions(ArrivalMode::kPoisson);
    c.mutate(&o, &jobs);
    std::vector<WorkloadJob> before = jobs;
    Status st = RegenerateArrivals(&jobs, o);
    EXPECT_EQ(st.code(), c.code);
    EXPECT_EQ(st.message(), c.error);
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].arrival_s, before[i].arrival_s);
  }
}

}  // namespace
}  // namespace migsched
