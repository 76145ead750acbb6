// `full`'s own defaults through the CLI (sched/full_policy.h, docs/results.md
// section 3): `simulate` and `sweep` run `full` with the demand-weighted
// metric, evacuation queue and the look-ahead reservation (guard after 1800 s,
// slack 1) unless --metric, --reserve-full, --max-skip-seconds,
// --reservation-slack or --evacuation is given; other policies keep the global
// defaults. The effective options are
// read back from the run's JSON settings.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/simulate.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadJson;

using ::migsched::testing::RunMigsched;
using ::migsched::testing::Simulate;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;

struct FlagsCase {
  std::string name;
  std::string policy;
  std::vector<std::string> extra;   // flags the user gives
  std::string metric;               // expected settings.metric
  int reserve_full;                 // expected settings.reserve_full
  nlohmann::json max_skip_seconds;  // expected settings.max_skip_seconds (null = off)
  double reservation_slack;         // expected settings.reservation_slack
  std::string evacuation;           // expected settings.evacuation
};
// gtest prints a case by its name (not its bytes) in ctest's list.
void PrintTo(const FlagsCase& c, std::ostream* os) { *os << c.name; }

// full's own defaults (sched/full_policy.h, docs/results.md section 3): demand-weighted, no
// reserve, the guard after 1800 s with slack 1, evacuation for any waiting job; the other
// policies the global ones (fragcost, 0, off, 0, off).
const std::vector<FlagsCase> kCases = {
    {"FullDefaults", "full", {}, "demand-weighted", 0, 1800.0, 1, "queue"},
    {"FullMetricOverridden", "full", {"--metric", "fragcost"}, "fragcost", 0, 1800.0, 1, "queue"},
    // Overriding one option leaves full's default for the others.
    {"FullReserveOverridden",
     "full",
     {"--reserve-full", "1"},
     "demand-weighted",
     1,
     1800.0,
     1,
     "queue"},
    {"FullGuardOverridden",
     "full",
     {"--max-skip-seconds", "600"},
     "demand-weighted",
     0,
     600.0,
     1,
     "queue"},
    // An explicit -1 still turns the guard off.
    {"FullGuardTurnedOff",
     "full",
     {"--max-skip-seconds", "-1"},
     "demand-weighted",
     0,
     nullptr,
     1,
     "queue"},
    {"FullSlackOverridden",
     "full",
     {"--reservation-slack", "0"},
     "demand-weighted",
     0,
     1800.0,
     0,
     "queue"},
    {"FullEvacuationOverridden",
     "full",
     {"--evacuation", "off"},
     "demand-weighted",
     0,
     1800.0,
     1,
     "off"},
    {"LbFragKeepsGlobalDefaults", "lb+frag", {}, "fragcost", 0, nullptr, 0, "off"},
    {"FirstFitKeepsGlobalDefaults", "first-fit", {}, "fragcost", 0, nullptr, 0, "off"},
};

class FullDefaultsCliTest : public ::testing::TestWithParam<FlagsCase> {};

TEST_P(FullDefaultsCliTest, SimulateSettings) {
  const FlagsCase& c = GetParam();
  std::vector<std::string> more = {"--jobs", "20", "--policy", c.policy};
  more.insert(more.end(), c.extra.begin(), c.extra.end());
  const nlohmann::json j = Simulate("2xA100-40GB", "paper-mix", more);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["settings"]["metric"], c.metric);
  EXPECT_EQ(j["settings"]["reserve_full"], c.reserve_full);
  EXPECT_EQ(j["settings"]["max_skip_seconds"], c.max_skip_seconds);
  EXPECT_EQ(j["settings"]["reservation_slack"], c.reservation_slack);
  EXPECT_EQ(j["settings"]["evacuation"], c.evacuation);
  // What the scheduler knows of run times: time limits, by default (no oracle).
  EXPECT_EQ(j["settings"]["expected_ends"], "limits");
}

INSTANTIATE_TEST_SUITE_P(Cases, FullDefaultsCliTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The reservation horizon and keeping (§13, docs/results.md "The reservation horizon",
// "Reservation keeping"): full's 30 min and keeping unless given; the other policies reserve for
// any start (null: no horizon) and keep nothing. The overtaking guard of §5 is off (null) for
// every policy, `full` included (docs/results.md "Overtaking among equal requests"), unless given.
TEST(FullDefaultsCliTest, ReservationHorizonAndKeepingAreFullsOwnUnlessGiven) {
  const std::vector<std::string> base = {"--jobs", "20", "--policy"};
  auto horizon = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    const nlohmann::json j = Simulate("2xA100-40GB", "paper-mix", args);
    return j.is_null() ? nlohmann::json("no run") : j["settings"]["reservation_horizon_s"];
  };
  EXPECT_EQ(horizon({"full"}), 1800.0);
  EXPECT_EQ(horizon({"full", "--reservation-horizon", "600"}), 600.0);
  EXPECT_EQ(horizon({"full", "--reservation-horizon", "-1"}), nullptr);
  EXPECT_EQ(horizon({"first-fit"}), nullptr);
  auto keep = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    const nlohmann::json j = Simulate("2xA100-40GB", "paper-mix", args);
    return j.is_null() ? nlohmann::json("no run") : j["settings"]["reservation_keep"];
  };
  EXPECT_EQ(keep({"full"}), true);
  EXPECT_EQ(keep({"full", "--reservation-keep", "off"}), false);
  EXPECT_EQ(keep({"first-fit"}), false);
  auto oldest = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    const nlohmann::json j = Simulate("2xA100-40GB", "paper-mix", args);
    return j.is_null() ? nlohmann::json("no run") : j["settings"]["reservation_oldest"];
  };
  EXPECT_EQ(oldest({"full"}), true);
  EXPECT_EQ(oldest({"full", "--reservation-oldest", "off"}), false);
  EXPECT_EQ(oldest({"first-fit"}), false);
  auto guard = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    const nlohmann::json j = Simulate("2xA100-40GB", "paper-mix", args);
    return j.is_null() ? nlohmann::json("no run") : j["settings"]["overtake_guard"];
  };
  EXPECT_EQ(guard({"full"}), nullptr);
  EXPECT_EQ(guard({"full", "--overtake-guard", "0.5"}), 0.5);
  EXPECT_EQ(guard({"full", "--overtake-guard", "-1"}), nullptr);
  EXPECT_EQ(guard({"first-fit"}), nullptr);
}

TEST(FullDefaultsCliTest, SweepOfFullUsesItsDefaults) {
  const std::string json = WriteTempFile("full-defaults-sweep.json", "");
  const auto r =
      RunMigsched({"sweep", "--cluster", "2xA100-40GB", "--workload", "paper-mix", "--jobs", "20",
                   "--policy", "full", "--param", "threshold=0.3,0.5", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(json)["settings"]["metric"], "demand-weighted");
  EXPECT_EQ(ReadJson(json)["settings"]["max_skip_seconds"], 1800.0);
  EXPECT_EQ(ReadJson(json)["settings"]["reservation_slack"], 1.0);
}

// --expected-ends (sim/sim_options.h knowledge): recorded in the run's settings (limits by
// default; known flagged as an oracle), refused where it would be ignored (fill mode) and for a
// value other than limits | known | unknown.
TEST(FullDefaultsCliTest, ExpectedEndsFlag) {
  const std::string json = WriteTempFile("full-defaults-unknown-ends.json", "");
  nlohmann::json unknown =
      Simulate("2xA100-40GB", "paper-mix",
               {"--jobs", "20", "--policy", "full", "--expected-ends", "unknown"});
  ASSERT_FALSE(unknown.is_null());
  EXPECT_EQ(unknown["settings"]["expected_ends"], "unknown");
  EXPECT_EQ(unknown["settings"]["expected_ends_oracle"], false);
  nlohmann::json limits =
      Simulate("2xA100-40GB", "paper-mix", {"--jobs", "20", "--policy", "full"});
  ASSERT_FALSE(limits.is_null());
  EXPECT_EQ(limits["settings"]["expected_ends"], "limits");
  EXPECT_EQ(limits["settings"]["user_estimates"], "model");
  auto r = RunMigsched({"simulate", "--cluster", "2xA100-40GB", "--workload", "paper-mix", "--jobs",
                        "20", "--policy", "full", "--expected-ends", "known", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(json)["settings"]["expected_ends_oracle"], true);
  EXPECT_THAT(r.out, HasSubstr("an ORACLE run"));
  r = RunMigsched({"simulate", "--cluster", "2xA100-40GB", "--workload", "paper-mix", "--jobs",
                   "20", "--mode", "fill", "--expected-ends", "unknown", "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--expected-ends applies to --mode online only"));
  r = RunMigsched({"simulate", "--cluster", "2xA100-40GB", "--workload", "paper-mix",
                   "--expected-ends", "maybe", "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--expected-ends"));
}

// Regression (compare_uses_full_defaults): `compare` and `report` ran `full` with the global
// options (FragCost) while `simulate` used full's defaults (demand-weighted). The same workload
// and seed must give `full` the same results in `compare` as in `simulate` (on this workload the
// two metrics give different JCTs, so the old behaviour fails the test).
TEST(FullDefaultsCliTest, CompareRunsFullWithItsDefaults) {
  const std::vector<std::string> common = {"--cluster", "2xA100-40GB", "--workload",
                                           "paper-mix", "--jobs",      "60",
                                           "--seed",    "3",           "--quiet"};
  const std::string cjson = WriteTempFile("full-defaults-compare.json", "");
  std::vector<std::string> cargs = {"compare", "--policies", "full,first-fit", "--json", cjson};
  cargs.insert(cargs.end(), common.begin(), common.end());
  auto r = RunMigsched(cargs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sjson = WriteTempFile("full-defaults-simulate.json", "");
  std::vector<std::string> sargs = {"simulate", "--policy", "full", "--json", sjson};
  sargs.insert(sargs.end(), common.begin(), common.end());
  r = RunMigsched(sargs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json c = ReadJson(cjson);
  const nlohmann::json s = ReadJson(sjson);
  const nlohmann::json* full = nullptr;
  for (const auto& run : c["results"]) {
    if (run["policy"] == "full") full = &run;
  }
  ASSERT_NE(full, nullptr);
  for (const char* key :
       {"jct_mean_s", "wait_p95_s", "makespan_s", "reconfigurations", "migrations", "frag_mean"}) {
    EXPECT_EQ((*full)[key], s[key]) << key;
  }
  // Each policy's options, as it ran (regression: compare's JSON showed only the global settings,
  // so full's own defaults appeared as fragcost, no reuse first, FIFO). By docs/policies.md
  // "Defaults of `full`": demand-weighted, reuse first, response-ratio order; first-fit the plain
  // defaults.
  const nlohmann::json& fo = (*full)["scheduler_options"];
  EXPECT_EQ(fo["metric"], "demand-weighted");
  EXPECT_EQ(fo["reuse_first"], true);
  EXPECT_EQ(fo["queue_order"], "response-ratio");
  const nlohmann::json* ff = nullptr;
  for (const auto& run : c["results"]) {
    if (run["policy"] == "first-fit") ff = &run;
  }
  ASSERT_NE(ff, nullptr);
  EXPECT_EQ((*ff)["scheduler_options"]["metric"], "fragcost");
  EXPECT_EQ((*ff)["scheduler_options"]["reuse_first"], false);
  EXPECT_EQ((*ff)["scheduler_options"]["queue_order"], "fifo");
}

// The --policy help lists every registered policy and the alias.
TEST(FullDefaultsCliTest, SimulateHelpListsThePolicies) {
  const auto r = RunMigsched({"simulate", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("first-fit | lb | lb+frag | full | best-fit | driver-default | "
                               "mfi | largest-free-run | static | static-all-balanced | "
                               "frag-free-reference"));
  EXPECT_THAT(r.out, HasSubstr("aliases: frag-aware (= lb+frag)"));
  EXPECT_THAT(r.out, HasSubstr("full defaults to"));
  EXPECT_THAT(r.out, HasSubstr("--expected-ends"));
}

// Regression (gang_counted_once): the demand-weighted metric counted a gang as one arrival. With
// 48 one-slice tasks at 0 s and one 8x7g.80gb gang at 60 s in the window (and 20 small jobs a day
// later), a 7g placement was 1 of 69 arrivals, so a task on an empty GPU cost almost nothing and
// the tasks went one per GPU over all 16 GPUs: the gang waited an hour for eight of them to end,
// where first-fit started it at once. Counted by its instances (8 of 76) the tasks pack: an A100
// 80GB holds 7 1g.10gb, so 7 GPUs take the 48, and the gang starts at its arrival on 8 of the 9
// whole GPUs left, after one create each (in parallel: 0.023 s).
TEST(FullDefaultsCliTest, AGangInTheDemandWindowKeepsWholeGpusForIt) {
  std::string trace = "id,arrival_s,profile,count,duration_s,time_limit_s\n";
  for (int i = 0; i < 48; ++i) trace += fmt::format("t{},0,1g.10gb,1,3600,14400\n", i);
  trace += "gang,60,7g.80gb,8,3600,7200\n";
  for (int i = 0; i < 20; ++i) {
    trace += fmt::format("late{},{},{},1,600,3600\n", i, 100000 + 10 * i,
                         i % 2 == 0 ? "1g.20gb" : "2g.20gb");
  }
  const std::string path = WriteTempFile("gang-window.csv", trace);
  const std::string jobs = WriteTempFile("gang-window-jobs.csv", "");
  auto r = RunMigsched({"simulate", "--cluster", "16xA100-80GB", "--workload", path, "--policy",
                        "full", "--jobs-csv", jobs, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(jobs);
  std::string line;
  std::getline(in, line);  // id,name,request,outcome,arrival_s,placed_s,start_s,wait_s,...
  std::set<std::string> task_gpus;
  double gang_wait = -1;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_GE(f.size(), 11u) << line;
    if (f[1].starts_with("t")) task_gpus.insert(f[10].substr(0, f[10].find(':')));
    if (f[1] == "gang") gang_wait = std::stod(f[7]);
  }
  EXPECT_EQ(task_gpus.size(), 7u);
  EXPECT_NEAR(gang_wait, 0.023, 1e-6);
}

}  // namespace
}  // namespace migsched
