// Reconfiguration latency as distributions (sim/reconfig_latency.h, `--reconfig-latency`): the
// SPEC forms and their errors, the draws' statistics against bounds worked out by hand, and the
// simulator's use of them (fixed reproduces --reconfig-ms exactly, draws per seed, in step order).
#include "sim/reconfig_latency.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/rng.h"
#include "sim/metrics.h"
#include "sim/paper_mix.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;
using ::migsched::testing::WriteTempFile;
using Kind = LatencyDistribution::Kind;

// The seed of a randomized test: MIGSCHED_SEED when set, else `fallback`; printed.
uint64_t TestSeed(uint64_t fallback) {
  const char* s = std::getenv("MIGSCHED_SEED");
  const uint64_t seed = s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : fallback;
  std::printf("MIGSCHED_SEED=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

TEST(ReconfigLatencyTest, ParsesEveryForm) {
  auto fixed = ParseLatencySpec("fixed:23");
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->kind, Kind::kFixed);
  EXPECT_EQ(fixed->fixed_ms, 23);
  EXPECT_EQ(fixed->ToString(), "fixed:23");

  auto ln = ParseLatencySpec("lognormal:250,1.5");
  ASSERT_TRUE(ln.ok()) << ln.status().ToString();
  EXPECT_EQ(ln->kind, Kind::kLognormal);
  EXPECT_EQ(ln->median_ms, 250);
  EXPECT_EQ(ln->sigma, 1.5);
  EXPECT_EQ(ln->ToString(), "lognormal:250,1.5");
  // Mean of a lognormal: median × exp(sigma² / 2) = 250 × e^1.125.
  EXPECT_NEAR(ln->MeanMs(), 250 * std::exp(1.125), 1e-9);

  // Both kinds from one bare SPEC; `field` is the preset of docs/mig-hardware.md §9.
  auto both = ParseReconfigLatency({"lognormal:100,0.5"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->create, LatencyDistribution::Lognormal(100, 0.5));
  EXPECT_EQ(both->destroy, LatencyDistribution::Lognormal(100, 0.5));
  EXPECT_FALSE(both->IsFixedUniform());
  auto field = ParseReconfigLatency({"field"});
  ASSERT_TRUE(field.ok());
  EXPECT_EQ(field->create, LatencyDistribution::Lognormal(250, 1.0));
  EXPECT_EQ(field->destroy, LatencyDistribution::Lognormal(1000, 0.7));
  EXPECT_EQ(field->ToString(), "create lognormal:250,1, destroy lognormal:1000,0.7");
  EXPECT_TRUE(ParseReconfigLatency({"fixed:0"})->IsFixedUniform());
}

TEST(ReconfigLatencyTest, PrefixedSpecsOverrideTheBareOneInAnyOrder) {
  for (const std::vector<std::string>& v :
       {std::vector<std::string>{"fixed:23", "destroy=fixed:900"},
        std::vector<std::string>{"destroy=fixed:900", "fixed:23"}}) {
    auto rl = ParseReconfigLatency(v);
    ASSERT_TRUE(rl.ok()) << rl.status().ToString();
    EXPECT_EQ(rl->create, LatencyDistribution::Fixed(23));
    EXPECT_EQ(rl->destroy, LatencyDistribution::Fixed(900));
    EXPECT_FALSE(rl->IsFixedUniform());
  }
  // create=field: the preset's create distribution; the destroys keep the default 23 ms.
  auto rl = ParseReconfigLatency({"create=field"});
  ASSERT_TRUE(rl.ok());
  EXPECT_EQ(rl->create, FieldCreateLatency());
  EXPECT_EQ(rl->destroy, LatencyDistribution::Fixed(23));
}

TEST(ReconfigLatencyTest, BadSpecsGiveClearErrors) {
  const struct {
    std::vector<std::string> values;
    std::string message;
  } cases[] = {
      {{"23"}, "must be fixed:MS, lognormal:MEDIAN_MS,SIGMA, empirical:FILE or field, got '23'"},
      {{"gamma:2,3"},
       "must be fixed:MS, lognormal:MEDIAN_MS,SIGMA, empirical:FILE or field, got 'gamma:2,3'"},
      {{"fixed:-1"}, "fixed:MS needs MS, a finite number of milliseconds >= 0, got 'fixed:-1'"},
      {{"fixed:nan"}, "fixed:MS needs MS, a finite number of milliseconds >= 0, got 'fixed:nan'"},
      {{"lognormal:250"},
       "lognormal:MEDIAN_MS,SIGMA needs two numbers, e.g. lognormal:250,1, got 'lognormal:250'"},
      {{"lognormal:0,1"}, "lognormal:MEDIAN_MS,SIGMA needs MEDIAN_MS > 0, got 'lognormal:0,1'"},
      {{"lognormal:250,-0.5"},
       "lognormal:MEDIAN_MS,SIGMA needs SIGMA >= 0, got 'lognormal:250,-0.5'"},
      {{"empirical:"}, "empirical:FILE needs a file name, got 'empirical:'"},
      {{"create=bogus"},
       "must be fixed:MS, lognormal:MEDIAN_MS,SIGMA, empirical:FILE or field, got 'bogus'"},
      {{"fixed:1", "fixed:2"}, "the create latency is given twice ('fixed:2')"},
      {{"destroy=fixed:1", "destroy=field"},
       "the destroy latency is given twice ('destroy=field')"},
      {{}, "no SPEC given"},
  };
  for (const auto& c : cases) {
    auto rl = ParseReconfigLatency(c.values);
    ASSERT_FALSE(rl.ok()) << c.message;
    EXPECT_EQ(rl.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(rl.status().message(), c.message);
  }
  auto missing = ParseLatencySpec("empirical:/nonexistent/reconfig.txt");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "empirical: /nonexistent/reconfig.txt: cannot open the file");
}

// Regression: lognormal:250,1000 was taken, and its draws (250 x e^(1000 z)) and its mean
// overflowed: jobs ended at t = inf and the run printed "utilization -nan%". A sigma above 10 is
// refused; 10 itself (e^10 = 22026 per standard deviation) is taken.
// Regression (trial_reconfig_ms_huge): a fixed time of 1e308 ms was taken and every time of the
// run came out infinite. Times, medians and measurements are taken up to an hour
// (kMaxLatencyMs, 3,600,000 ms), the bound itself included.
TEST(ReconfigLatencyTest, TimesPastAnHourAreRefused) {
  EXPECT_TRUE(LatencyDistribution::Fixed(3600000).Validate().ok());
  EXPECT_EQ(LatencyDistribution::Fixed(3600001).Validate().message(),
            "fixed: milliseconds must be a number from 0 to 3600000, got 3600001");
  EXPECT_TRUE(LatencyDistribution::Lognormal(3600000, 1).Validate().ok());
  EXPECT_EQ(LatencyDistribution::Lognormal(1e308, 1).Validate().message(),
            "lognormal: the median must be a number of milliseconds > 0 and at most 3600000, got "
            "1e+308");
  LatencyDistribution measured;
  measured.kind = LatencyDistribution::Kind::kEmpirical;
  measured.samples_ms = {23, 4e6};
  EXPECT_EQ(measured.Validate().message(),
            "empirical: every measurement must be a number from 0 to 3600000 ms, got 4000000");
}

TEST(ReconfigLatencyTest, LognormalSpreadThatOverflowsIsRefused) {
  auto wide = ParseReconfigLatency({"lognormal:250,1000"});
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message(),
            "lognormal: sigma must be a number from 0 to 10 (e^10 = 22026 times the median per "
            "standard deviation; measured MIG operations have 0.7-1), got 1000 (in "
            "'lognormal:250,1000')");  // "got" once (regression: trial_latency_got_twice)
  EXPECT_FALSE(ParseReconfigLatency({"destroy=lognormal:250,10.5"}).ok());
  auto ten = ParseReconfigLatency({"lognormal:250,10"});
  ASSERT_TRUE(ten.ok()) << ten.status().ToString();
}

TEST(ReconfigLatencyTest, EmpiricalReadsLinesAndJsonListsAndNamesTheBadLine) {
  const std::string lines =
      WriteTempFile("creates.txt", "# measured creates, ms\n30\n\n12.5\n 80 \n");
  auto d = ParseLatencySpec("empirical:" + lines);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, Kind::kEmpirical);
  EXPECT_EQ(d->samples_ms, (std::vector<double>{12.5, 30, 80}));  // sorted
  EXPECT_NEAR(d->MeanMs(), (12.5 + 30 + 80) / 3, 1e-12);
  EXPECT_EQ(d->ToString(), "empirical:" + lines);

  const std::string list = WriteTempFile("destroys.json", " [900, 1200.5, 3000]\n");
  auto j = ParseLatencySpec("empirical:" + list);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->samples_ms, (std::vector<double>{900, 1200.5, 3000}));

  const std::string bad_line = WriteTempFile("bad.txt", "30\n-4\n");
  EXPECT_EQ(ParseLatencySpec("empirical:" + bad_line).status().message(),
            "empirical: " + bad_line + ":2: '-4' is not a finite number of milliseconds >= 0");
  const std::string bad_json = WriteTempFile("bad.json", "[1, \"2\"]");
  EXPECT_EQ(
      ParseLatencySpec("empirical:" + bad_json).status().message(),
      "empirical: " + bad_json + ": element 1 is \"2\", not a finite number of milliseconds >= 0");
  const std::string empty = WriteTempFile("empty.txt", "# nothing measured\n");
  EXPECT_EQ(ParseLatencySpec("empirical:" + empty).status().message(),
            "empirical: " + empty + ": no measurements (empty sample)");
}

// Regression (a sample saved by Excel or a Windows editor was refused at its first line): a UTF-8
// byte-order mark at the start of an empirical file is skipped, in both forms.
TEST(ReconfigLatencyTest, EmpiricalFileWithAUtf8ByteOrderMark) {
  const std::string lines = WriteTempFile("bom.txt",
                                          "\xEF\xBB\xBF"
                                          "30\r\n12.5\r\n");
  auto d = ParseLatencySpec("empirical:" + lines);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->samples_ms, (std::vector<double>{12.5, 30}));  // sorted
  const std::string list = WriteTempFile("bom.json", "\xEF\xBB\xBF[900, 1200.5]");
  auto j = ParseLatencySpec("empirical:" + list);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->samples_ms, (std::vector<double>{900, 1200.5}));
}

// 20,000 lognormal draws (median 250 ms, sigma 0.5) against bounds worked out by hand. The log of
// a draw is N(ln 250, 0.25): its sample mean has standard error 0.5 / sqrt(20000) = 0.003536 and
// its sample standard deviation about 0.5 / sqrt(2 × 20000) = 0.0025; the share of draws below the
// median is 1/2 with standard error sqrt(0.25 / 20000) = 0.003536, and below median × e^0.5
// (z = 1) it is Phi(1) = 0.841345 with standard error sqrt(0.841345 × 0.158655 / 20000) =
// 0.002583; the sample mean of the draws is median × e^(0.125) = 283.2374 ms with standard
// deviation of one draw 283.2374 × sqrt(e^0.25 - 1) = 150.997 ms, standard error 1.0677 ms.
// Every bound is 5 standard errors (a chance failure below 1e-6 per check).
TEST(ReconfigLatencyTest, LognormalSampleStatisticsWithinHandBounds) {
  const uint64_t seed = TestSeed(20261202);
  SCOPED_TRACE("MIGSCHED_SEED=" + std::to_string(seed));
  const LatencyDistribution d = LatencyDistribution::Lognormal(250, 0.5);
  Rng rng(seed);
  constexpr int kN = 20000;
  double sum = 0, sum_log = 0, sum_log2 = 0;
  int below_median = 0, below_z1 = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = d.DrawMs(rng);
    ASSERT_GT(x, 0);
    sum += x;
    sum_log += std::log(x);
    sum_log2 += std::log(x) * std::log(x);
    below_median += x < 250;
    below_z1 += x < 250 * std::exp(0.5);
  }
  const double mean_log = sum_log / kN;
  const double sd_log = std::sqrt((sum_log2 - kN * mean_log * mean_log) / (kN - 1));
  EXPECT_NEAR(mean_log, std::log(250.0), 5 * 0.003536);
  EXPECT_NEAR(sd_log, 0.5, 5 * 0.0025);
  EXPECT_NEAR(static_cast<double>(below_median) / kN, 0.5, 5 * 0.003536);
  EXPECT_NEAR(static_cast<double>(below_z1) / kN, 0.841345, 5 * 0.002583);
  EXPECT_NEAR(sum / kN, 283.2374, 5 * 1.0677);
}

// Every value of an empirical sample is drawn with probability 1/n: 30,000 draws from 3 values,
// each count binomial(30000, 1/3): mean 10,000, standard deviation sqrt(30000 × 2/9) = 81.65;
// bound 5 standard deviations.
TEST(ReconfigLatencyTest, EmpiricalDrawsEveryValueEvenly) {
  const uint64_t seed = TestSeed(7);
  SCOPED_TRACE("MIGSCHED_SEED=" + std::to_string(seed));
  LatencyDistribution d;
  d.kind = Kind::kEmpirical;
  d.samples_ms = {10, 20, 40};
  Rng rng(seed);
  int count[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) {
    const double x = d.DrawMs(rng);
    count[x == 10 ? 0 : x == 20 ? 1 : 2] += 1;
  }
  for (int c : count) EXPECT_NEAR(c, 10000, 5 * 81.65);
}

// The preset's quantiles as docs/mig-hardware.md §9 states them, from the normal quantiles
// z(0.05) = -1.644854, z(0.99) = 2.326348, z(0.9999) = 3.719016 (published tables):
// creates 250 × e^-1.644854 = 48.3 ms, 250 × e^2.326348 = 2,560 ms;
// destroys 1000 × e^(0.7 × 2.326348) = 5,096 ms, 1000 × e^(0.7 × 3.719016) = 13,508 ms.
TEST(ReconfigLatencyTest, FieldPresetQuantilesAsDocumented) {
  const LatencyDistribution c = FieldCreateLatency(), d = FieldDestroyLatency();
  ASSERT_EQ(c.kind, Kind::kLognormal);
  ASSERT_EQ(d.kind, Kind::kLognormal);
  auto quantile = [](const LatencyDistribution& x, double p) {
    return x.median_ms * std::exp(x.sigma * Rng::StandardNormalQuantile(p));
  };
  EXPECT_NEAR(quantile(c, 0.5), 250, 1e-9);
  EXPECT_NEAR(quantile(c, 0.05), 48.3, 0.05);
  EXPECT_NEAR(quantile(c, 0.99), 2560, 1);
  EXPECT_NEAR(quantile(d, 0.5), 1000, 1e-9);
  EXPECT_NEAR(quantile(d, 0.99), 5096, 1);
  EXPECT_NEAR(quantile(d, 0.9999), 13508, 2);
}

// ---- in the simulator ----

SimOptions LatencyOptions() {
  static ManualClock clock;  // decision times all 0: results comparable bit for bit
  SimOptions o;
  o.clock = &clock;
  o.self_check = true;
  return o;
}

std::shared_ptr<const ReconfigLatency> Latency(const std::vector<std::string>& values) {
  auto rl = ParseReconfigLatency(values);
  EXPECT_TRUE(rl.ok()) << rl.status().ToString();
  return std::make_shared<const ReconfigLatency>(rl.ok() ? *rl : ReconfigLatency{});
}

SimResult Simulate(const std::vector<const GpuModel*>& gpus, const std::vector<WorkloadJob>& jobs,
                   const std::string& policy, const SimOptions& o) {
  auto r = RunSimulation(gpus, jobs, policy, SchedulerOptions{}, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

std::vector<WorkloadJob> PaperMix(uint64_t seed, int gpus) {
  PaperMixOptions o;
  o.num_jobs = 120;
  o.num_gpus = gpus;
  o.load = 1.2;
  o.seed = seed;
  auto jobs = GeneratePaperMix(Model("A100-40GB"), o);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? *jobs : std::vector<WorkloadJob>{};
}

// `--reconfig-latency fixed:MS` is `--reconfig-ms MS`: the same metrics and job records, bit for
// bit, on a saturated paper-mix for policies that reconfigure, migrate or reuse.
TEST(ReconfigLatencySimTest, FixedSpecReproducesReconfigMsExactly) {
  const std::vector<const GpuModel*> gpus(3, &Model("A100-40GB"));
  const std::vector<WorkloadJob> jobs = PaperMix(3, 3);
  for (double ms : {23.0, 0.0, 2000.0}) {
    for (const std::string policy : {"first-fit", "full", "frag-aware"}) {
      SCOPED_TRACE(policy + " " + std::to_string(ms));
      SimOptions plain = LatencyOptions();
      plain.reconfig_ms = ms;
      SimOptions spec = LatencyOptions();
      spec.reconfig_ms = 777;  // not used: the distribution replaces it
      spec.reconfig_latency = Latency({"fixed:" + std::to_string(ms)});
      spec.reconfig_seed = 99;
      const SimResult a = Simulate(gpus, jobs, policy, plain),
                      b = Simulate(gpus, jobs, policy, spec);
      EXPECT_EQ(MetricsToJson(a.metrics).dump(), MetricsToJson(b.metrics).dump());
      EXPECT_TRUE(a.jobs == b.jobs);
    }
  }
}

// Two 4g.20gb jobs of 100 s at t = 0 on one A100 40GB under first-fit, creates c = 0.1 s and
// destroys d = 0.04 s: a is created over [0, c] and runs [c, 100 + c]; its 4g@0 is destroyed over
// [100 + c, 100 + c + d]; b, placed at 100 + c, is created after that destroy on the same GPU,
// over [100 + c + d, 100 + 2c + d], and ends at 200 + 2c + d = 200.24 s.
TEST(ReconfigLatencySimTest, CreatesAndDestroysTakeTheirOwnFixedLatencies) {
  const std::vector<WorkloadJob> jobs = {AJob("4g.20gb").Named("a").Runs(100),
                                         AJob("4g.20gb").Named("b").Runs(100)};
  SimOptions o = LatencyOptions();
  o.reconfig_latency = Latency({"create=fixed:100", "destroy=fixed:40"});
  const SimResult r = Simulate({&Model("A100-40GB")}, jobs, "first-fit", o);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].start_s, 0.1, 1e-12);
  EXPECT_NEAR(r.jobs[0].end_s, 100.1, 1e-9);
  EXPECT_NEAR(r.jobs[1].placed_s, 100.1, 1e-9);
  EXPECT_NEAR(r.jobs[1].start_s, 100.24, 1e-9);
  EXPECT_NEAR(r.jobs[1].end_s, 200.24, 1e-9);
  EXPECT_NEAR(r.metrics.makespan_s, 200.24, 1e-9);
}

// The same run with lognormal latencies: the operations draw in order (create a, destroy a,
// create b) from the stream Rng(DeriveSeed(seed, kStream)), one uniform each: latency k is
// median × exp(sigma × Phi^-1(u_k + 2^-54)). So a starts at x1, b starts at 100 + x1 + x2 + x3.
TEST(ReconfigLatencySimTest, DrawsFollowTheStepOrderOfTheRunsOwnStream) {
  const std::vector<WorkloadJob> jobs = {AJob("4g.20gb").Named("a").Runs(100),
                                         AJob("4g.20gb").Named("b").Runs(100)};
  const uint64_t seed = 12345;
  SimOptions o = LatencyOptions();
  o.reconfig_latency = Latency({"create=lognormal:200,1", "destroy=lognormal:1000,0.5"});
  o.reconfig_seed = seed;
  Rng u(Rng::DeriveSeed(seed, ReconfigLatencySampler::kStream));
  const double x1 = 0.2 * std::exp(1.0 * Rng::StandardNormalQuantile(u.Uniform01() + 0x1.0p-54));
  const double x2 = 1.0 * std::exp(0.5 * Rng::StandardNormalQuantile(u.Uniform01() + 0x1.0p-54));
  const double x3 = 0.2 * std::exp(1.0 * Rng::StandardNormalQuantile(u.Uniform01() + 0x1.0p-54));
  const SimResult r = Simulate({&Model("A100-40GB")}, jobs, "first-fit", o);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_NEAR(r.jobs[0].start_s, x1, 1e-12);
  EXPECT_NEAR(r.jobs[1].placed_s, 100 + x1, 1e-9);
  EXPECT_NEAR(r.jobs[1].start_s, 100 + x1 + x2 + x3, 1e-9);
}

// Same seed, same run; another seed, other latencies (and so other start times).
TEST(ReconfigLatencySimTest, DrawsAreDeterministicPerSeed) {
  const uint64_t seed = TestSeed(5);
  SCOPED_TRACE("MIGSCHED_SEED=" + std::to_string(seed));
  const std::vector<const GpuModel*> gpus(3, &Model("A100-40GB"));
  const std::vector<WorkloadJob> jobs = PaperMix(seed, 3);
  SimOptions o = LatencyOptions();
  o.reconfig_latency = Latency({"field"});
  o.reconfig_seed = seed;
  const SimResult a = Simulate(gpus, jobs, "first-fit", o),
                  b = Simulate(gpus, jobs, "first-fit", o);
  EXPECT_EQ(MetricsToJson(a.metrics).dump(), MetricsToJson(b.metrics).dump());
  EXPECT_TRUE(a.jobs == b.jobs);
  o.reconfig_seed = seed + 1;
  const SimResult c = Simulate(gpus, jobs, "first-fit", o);
  ASSERT_EQ(a.jobs.size(), c.jobs.size());
  ASSERT_FALSE(a.jobs.empty());
  // The first job creates its instance on an empty cluster: its start is its first draw.
  EXPECT_NE(a.jobs[0].start_s, c.jobs[0].start_s);
}

TEST(ReconfigLatencySimTest, OptionsValidateTheDistributions) {
  SimOptions o = LatencyOptions();
  auto bad = std::make_shared<ReconfigLatency>();
  bad->destroy = LatencyDistribution::Lognormal(-3, 1);
  o.reconfig_latency = bad;
  EXPECT_EQ(o.Validate().message(),
            "reconfig_latency: destroy latency: lognormal: the median must be a number of "
            "milliseconds > 0 and at most 3600000, got -3");
}

}  // namespace
}  // namespace migsched
