// End-to-end runs of `migsched sweep` (one policy over a parameter range) and
// of the flags --metric / --reserve-full (§2, §4) on a tiny hand-worked trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadJson;

using ::migsched::testing::RunMigsched;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;
using ::testing::Not;

// As tests/e2e/simulate_cli_test.cc: one A100 40GB; two 4g.20gb jobs of 100 s
// at t=0 and a 3g.20gb job of 50 s at t=10. Under lb+frag: a runs 0.023 ->
// 100.023, c 10.023 -> 60.023, b reuses a's instance 100.023 -> 200.023.
const char kTwoFourG[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,4g.20gb,100\n"
    "b,0,4g.20gb,100\n"
    "c,10,3g.20gb,50\n";

// Lines of `text` starting with `prefix`.
int CountLinesStartingWith(const std::string& text, const std::string& prefix) {
  int n = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    n += text.compare(at, prefix.size(), prefix) == 0;
    at = end + 1;
  }
  return n;
}

// Regression: `sweep --param threshold=0.2,0.4 --policy first-fit` printed two identical rows
// and no note (first-fit has no lazy/busy split), and the notes of the other flags (here
// --reuse-first on, which first-fit does not read) were not printed by sweep at all.
TEST(SweepCliTest, ASweptOptionThePolicyDoesNotReadIsNoted) {
  const std::string trace = WriteTempFile("two-4g-inert.csv", kTwoFourG);
  auto r =
      RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                   "first-fit", "--param", "threshold=0.2,0.4", "--reuse-first", "on", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  note: --reuse-first on has no effect on first-fit (read only "
                               "by lb+frag and full)\n"));
  EXPECT_THAT(r.out, HasSubstr("  note: --threshold has no effect on first-fit (no lazy/busy "
                               "split; read by lb, lb+frag and full, and by the migration planner "
                               "with --migration on): every value runs the same\n"));
  auto lb = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--policy", "lb",
                         "--param", "threshold=0.2,0.4", "--quiet"});
  ASSERT_EQ(lb.exit_code, 0) << lb.err;
  EXPECT_THAT(lb.out, Not(HasSubstr("no effect")));
}

TEST(SweepCliTest, ThreeThresholdsGiveThreeRowsAndJson) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string json = WriteTempFile("sweep.json", "");
  auto r = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                        "lb+frag", "--param", "threshold=0.2:0.6:0.2", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("THRESHOLD"));
  EXPECT_THAT(r.out, HasSubstr("JOBS/KWH"));
  // One row per value: 0.2, 0.4, 0.6.
  EXPECT_EQ(CountLinesStartingWith(r.out, "0.2 "), 1) << r.out;
  EXPECT_EQ(CountLinesStartingWith(r.out, "0.4 "), 1) << r.out;
  EXPECT_EQ(CountLinesStartingWith(r.out, "0.6 "), 1) << r.out;
  const nlohmann::json j = ReadJson(json);
  EXPECT_EQ(j["policy"], "lb+frag");
  EXPECT_EQ(j["param"], "threshold");
  ASSERT_EQ(j["results"].size(), 3u);
  const std::vector<double> values = {0.2, 0.4, 0.6};
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& row = j["results"][i];
    EXPECT_DOUBLE_EQ(row["value"].get<double>(), values[i]);
    EXPECT_DOUBLE_EQ(j["values"][i].get<double>(), values[i]);
    // One GPU: the lazy/busy split has nothing to choose between, every
    // threshold gives the hand-derived run above.
    EXPECT_NEAR(row["makespan_s"].get<double>(), 200.023, 1e-6);
    EXPECT_EQ(row["reuses"].get<int>(), 1);
    // Energy (sim/energy_test.cc TinyTraceThroughTheSimulator): 35 W x 200.023 s
    // + (250 - 35) / 7 W x 950.161 slice-seconds = 36184.32 J = 0.0100512 kWh.
    EXPECT_NEAR(row["energy_kwh"].get<double>(), 0.0100512, 1e-7);
  }
}

TEST(SweepCliTest, ListValuesAndWorkloadParameters) {
  // pcie-share rebuilds paper-mix for each value; the list is kept in order.
  const std::string json = WriteTempFile("sweep2.json", "");
  auto r = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", "paper-mix", "--jobs",
                        "20", "--policy", "first-fit", "--param", "pcie-share=0.6,0.2", "--json",
                        json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(json);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_THAT(j["results"][0]["workload_description"].get<std::string>(),
              HasSubstr("60% PCIe-bound"));
  EXPECT_THAT(j["results"][1]["workload_description"].get<std::string>(),
              HasSubstr("20% PCIe-bound"));
}

TEST(SweepCliTest, BadParametersSayWhy) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  struct Case {
    std::string param;
    std::string error;
  } cases[] = {
      {"threshold", "--param 'threshold' must be NAME=FROM:TO:STEP or NAME=V1,V2,..."},
      {"speed=1,2",
       "--param: unknown parameter 'speed' (known: threshold, load, pcie-share, "
       "reserve-full"},
      {"threshold=0.6:0.2:0.1", "--param threshold: range end 0.2 is below its start 0.6"},
      {"threshold=0.2:0.6:0", "--param threshold: range step must be > 0, got 0"},
      {"threshold=0.2:0.6", "--param threshold: range '0.2:0.6' must be FROM:TO:STEP"},
      {"threshold=0.2,x", "--param threshold: value: 'x' is not a number"},
      {"reserve-full=0,1.5", "--param reserve-full: 1.5 is not a whole number"},
      {"threshold=0.5,1.5", "threshold=1.5: threshold must be in [0, 1], got 1.5"},
      // Regression: load 0 is SimFlags' "not given", so a swept 0 quietly ran the default load
      // under the label 0; refused as `--load 0` is, before anything runs.
      {"load=0.9,0", "load=0: --load must be a finite number > 0"},
      // A workload parameter of generated workloads only, swept on a trace: refused, not ignored.
      {"pcie-share=0.2,0.6",
       "pcie-share=0.2: --pcie-share applies to the generated workloads only (paper-mix, churn, "
       "serving, training; a trace gives each job's pcie_gbps)"},
  };
  for (const Case& c : cases) {
    auto r = RunMigsched(
        {"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--param", c.param, "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << c.param;
    EXPECT_THAT(r.err, HasSubstr("migsched sweep: " + c.error)) << c.param;
  }
  // Regression (SweptFlagGivenTooIsRefused): a flag that the swept parameter replaces for each
  // value was dropped without a word; refused, as every flag that would be ignored is.
  for (const auto& [flag, value, param] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--threshold", "0.3", "threshold=0.2,0.5"}, {"--load", "0.7", "load=0.2,0.5"}}) {
    auto r = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", "churn", "--jobs",
                          "10", flag, value, "--param", param, "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_EQ(r.err, "migsched sweep: " + flag + " would be ignored: --param " + flag.substr(2) +
                         "=... sets it for each value (give one or the other)\n");
  }
}

// Regression (SweepHeaderShowedTheBaseLoad): sweeping a parameter of the workload, the header
// described the workload at the base flags' value ("churn (10 jobs, 20% PCIe-bound, load 0.9)",
// the default load, while the rows ran at 0.5 and 0.7). Now it names the workload and gives each
// value's own description; the default 0.9 appears nowhere.
TEST(SweepCliTest, AWorkloadParameterIsDescribedPerValue) {
  auto r = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", "churn", "--jobs", "10",
                        "--param", "load=0.5,0.7", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("migsched sweep: lb+frag over load (2 values) on 1x A100 40GB, churn "
                        "(load per value, below)\n"));
  EXPECT_THAT(r.out, HasSubstr("\n  load=0.5: churn (10 jobs, 20% PCIe-bound, load 0.5)\n"));
  EXPECT_THAT(r.out, HasSubstr("\n  load=0.7: churn (10 jobs, 20% PCIe-bound, load 0.7)\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("load 0.9")));
  // A parameter of the scheduler keeps the workload's one description.
  auto t = RunMigsched({"sweep", "--cluster", "1xA100-40GB", "--workload", "churn", "--jobs", "10",
                        "--param", "threshold=0.2,0.5", "--quiet"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("on 1x A100 40GB, churn (10 jobs, 20% PCIe-bound, load 0.9)\n"));
}

TEST(SimFlagsCliTest, MetricAndReserveFlags) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string json = WriteTempFile("out.json", "");
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                        "lb+frag", "--metric", "demand-weighted", "--reserve-full", "1", "--json",
                        json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(json);
  EXPECT_EQ(j["settings"]["metric"], "demand-weighted");
  EXPECT_EQ(j["settings"]["reserve_full"], 1);
  // One GPU: every choice is forced; the same run as under fragcost.
  EXPECT_NEAR(j["makespan_s"].get<double>(), 200.023, 1e-6);
  EXPECT_THAT(r.out, HasSubstr("energy"));
  auto bad = RunMigsched(
      {"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--metric", "frag", "--quiet"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--metric"));
}

}  // namespace
}  // namespace migsched
