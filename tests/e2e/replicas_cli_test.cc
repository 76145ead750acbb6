// End-to-end runs of --replicas (docs/algorithms.md §9 "Replicas"): the
// replicas are the runs of seeds --seed + r, the figures do not depend on the
// thread count, a trace with its own arrival times is jittered, and compare
// prints means, intervals and paired changes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/simulate.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadFile;
using ::migsched::testing::ReadJson;
using ::migsched::testing::RunMigsched;
using ::migsched::testing::Simulate;
using ::migsched::testing::SimulateArgs;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;

// `j` without the wall-clock decision times, the only figures that differ
// between two identical runs (docs/formats/outputs.md).
nlohmann::json WithoutWallClock(nlohmann::json j) {
  if (j.is_object()) {
    for (const char* k : {"decision_us_mean", "decision_us_p99"}) j.erase(k);
    for (auto& [k, v] : j.items()) v = WithoutWallClock(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = WithoutWallClock(v);
  }
  return j;
}

const std::vector<std::string> kCompare = {
    "compare", "--cluster", "2xA100-40GB", "--workload",     "paper-mix",  "--jobs", "40",
    "--load",  "1.1",       "--policies",  "first-fit,full", "--replicas", "4",      "--quiet"};

TEST(ReplicasCliTest, SameSeedsGiveTheSameFiguresAtOneAndFourThreads) {
  const std::string one = WriteTempFile("rep1.json", ""), four = WriteTempFile("rep4.json", "");
  std::vector<std::string> a = kCompare, b = kCompare;
  a.insert(a.end(), {"--threads", "1", "--json", one});
  b.insert(b.end(), {"--threads", "4", "--json", four});
  auto ra = RunMigsched(a), rb = RunMigsched(b);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  const nlohmann::json ja = WithoutWallClock(ReadJson(one)), jb = WithoutWallClock(ReadJson(four));
  EXPECT_EQ(ja, jb);
  ASSERT_EQ(ja["results"][1]["replica_results"].size(), 4u);
  EXPECT_EQ(ja["settings"]["seeds"], (nlohmann::json{1, 2, 3, 4}));
}

TEST(ReplicasCliTest, ReplicaRIsTheRunOfSeedPlusR) {
  // The replicated run's stdout is checked too: run with SimulateArgs.
  const std::string rep = WriteTempFile("rep.json", "");
  auto r = RunMigsched(SimulateArgs("2xA100-40GB", "paper-mix",
                                    {"--jobs", "40", "--policy", "full", "--seed", "7",
                                     "--replicas", "3", "--json", rep, "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(rep);
  const nlohmann::json one =
      Simulate("2xA100-40GB", "paper-mix", {"--jobs", "40", "--policy", "full", "--seed", "9"});
  ASSERT_FALSE(one.is_null());
  EXPECT_EQ(j["replicas"], 3);
  EXPECT_EQ(j["seeds"], (nlohmann::json{7, 8, 9}));
  EXPECT_EQ(j["settings"]["perturbation"], "seed");
  EXPECT_EQ(j["replica_results"][2]["jct_mean_s"], one["jct_mean_s"]);
  // The top-level figure is the mean of the replicas'.
  double sum = 0;
  for (const auto& x : j["replica_results"]) sum += x["jct_mean_s"].get<double>();
  EXPECT_DOUBLE_EQ(j["jct_mean_s"].get<double>(), sum / 3);
  EXPECT_TRUE(j["ci95"]["jct_mean_s"].is_number());
  EXPECT_THAT(r.out, HasSubstr("  replicas          3 (mean ± half-width of the 95% confidence "
                               "interval)\n"));
}

// Four jobs with their own arrival times: replicas are jittered.
const char kTrace[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,7g.40gb,100\n"
    "b,10,3g.20gb,200\n"
    "c,10,4g.20gb,50\n"
    "d,400,1g.5gb,30\n";

TEST(ReplicasCliTest, ATraceWithItsOwnArrivalsIsJitteredPerReplica) {
  const std::string trace = WriteTempFile("own-times.csv", kTrace);
  const nlohmann::json j = Simulate(
      "1xA100-40GB", trace, {"--policy", "first-fit", "--replicas", "3", "--jitter", "0.2"});
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["settings"]["perturbation"], "jitter");
  EXPECT_EQ(j["settings"]["jitter"], 0.2);
  // Different durations per replica, each within ±20% of the trace's 380 s sum.
  std::vector<double> means;
  for (const auto& x : j["replica_results"]) {
    const double mean = x["duration_mean_s"].get<double>();
    EXPECT_GE(mean, 0.8 * 95);
    EXPECT_LE(mean, 1.2 * 95);
    means.push_back(mean);
  }
  EXPECT_NE(means[0], means[1]);
  // One run without --jitter: the trace as it is.
  nlohmann::json plain = Simulate("1xA100-40GB", trace, {"--policy", "first-fit"});
  ASSERT_FALSE(plain.is_null());
  EXPECT_EQ(plain["duration_mean_s"], 95);
  EXPECT_EQ(plain["settings"]["perturbation"], "none");
  // --jitter on a workload drawn from the seed is refused, not ignored.
  auto bad = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", "paper-mix",
                          "--jitter", "0.1", "--quiet"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--jitter applies to workloads whose arrival times are not drawn "
                                 "from --seed"));
}

TEST(ReplicasCliTest, CompareShowsIntervalsPairedChangesAndProfiles) {
  std::vector<std::string> args = kCompare;
  args.push_back("--by-profile");
  const std::string json = WriteTempFile("cmp-rep.json", "");
  args.insert(args.end(), {"--json", json});
  auto r = RunMigsched(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Means over 4 replicas, ± the half-width of their 95% confidence "
                               "interval.\n"));
  EXPECT_THAT(r.out, HasSubstr("Paired change against first-fit, replica by replica"));
  EXPECT_THAT(r.out, HasSubstr("\n7g.40gb "));  // a per-profile block
  const nlohmann::json j = ReadJson(json);
  const nlohmann::json& p = j["results"][1]["paired"]["jct_mean_s"];
  // The paired ratio is the ratio of the two policies' replica means.
  EXPECT_NEAR(
      p["ratio"].get<double>(),
      j["results"][1]["jct_mean_s"].get<double>() / j["results"][0]["jct_mean_s"].get<double>(),
      1e-12);
  EXPECT_TRUE(p["significant"].is_boolean());
  EXPECT_TRUE(j["results"][1]["paired"]["per_profile"]["7g.40gb"]["wait_p95_s"].is_object());
  EXPECT_TRUE(j["results"][1]["gap_closed"].is_number());
}

// The bug: `compare` had three rules for whether a policy compares with the
// reference (--report: the mean jobs completed; the terminal's replica table:
// always; --json: its ratios every replica, comparable_to_reference replica 0
// only), so the report ranked a policy the JSON gave no ratios to and left out
// one the terminal compared. Now all three follow one rule: every replica's
// jobs completed and rejected (and in the workload) the reference's. Which
// policies compare is worked out here from the JSON's replica results.
TEST(ReplicasCliTest, TerminalJsonAndReportAgreeOnWhichPoliciesCompare) {
  const std::string json = WriteTempFile("agree.json", "");
  const std::string html = WriteTempFile("agree.html", "");
  auto r = RunMigsched({"compare", "--cluster", "4xA100-40GB", "--workload", "paper-mix", "--jobs",
                        "120", "--replicas", "5", "--policies", "frag-aware,first-fit,best-fit",
                        "--report", html, "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(json);
  const std::string page = ReadFile(html);
  const nlohmann::json& ref = j["results"][0]["replica_results"];
  const size_t paired = r.out.find("Paired change against frag-aware");
  ASSERT_NE(paired, std::string::npos) << r.out;
  const size_t note = page.find("id=\"incomparable\"");
  const std::string not_compared =
      note == std::string::npos ? "" : page.substr(note, page.find("</p>", note) - note);
  for (size_t i = 1; i < j["results"].size(); ++i) {
    const nlohmann::json& run = j["results"][i];
    const std::string policy = run["policy"].get<std::string>();
    bool compares = true;
    ASSERT_EQ(run["replica_results"].size(), ref.size());
    for (size_t k = 0; k < ref.size(); ++k) {
      for (const char* key : {"jobs_total", "jobs_completed", "rejected"}) {
        compares = compares && run["replica_results"][k][key] == ref[k][key];
      }
    }
    // JSON: the field and the ratios.
    EXPECT_EQ(run["comparable_to_reference"].get<bool>(), compares) << policy;
    EXPECT_EQ(run["ratio_to_reference"]["jct_mean_s"].is_null(), !compares) << policy;
    // Terminal: the paired JCT MEAN cell of its row ('-' when not compared).
    const size_t row = r.out.find("\n" + policy + " ", paired);
    ASSERT_NE(row, std::string::npos) << r.out;
    const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
    std::istringstream cells(line);
    std::vector<std::string> words;
    for (std::string w; cells >> w;) words.push_back(w);
    ASSERT_GE(words.size(), 2u) << line;
    EXPECT_EQ(words[1] == "-", !compares) << line;  // GAP CLOSED
    EXPECT_EQ(r.out.find(policy + " (replica ", paired) != std::string::npos, !compares) << r.out;
    // Report: named in the "Not compared" line, and its column header marked.
    EXPECT_EQ(not_compared.find(policy + " ") != std::string::npos, !compares) << not_compared;
    EXPECT_EQ(page.find("<th class=\"incomparable\" title=\"" + policy + " ") != std::string::npos,
              !compares)
        << policy;
  }
}

}  // namespace
}  // namespace migsched

namespace migsched {
namespace {

TEST(ChurnCliTest, GeneratesItsWorkloadAndRefusesArrivals) {
  const std::string json = ::migsched::testing::WriteTempFile("churn.json", "");
  auto r = ::migsched::testing::RunMigsched({"simulate", "--cluster", "2xA100-40GB,1xH100-80GB",
                                             "--workload", "churn", "--jobs", "60", "--pcie-share",
                                             "0.6", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ::migsched::testing::ReadJson(json);
  EXPECT_EQ(j["jobs_total"], 60);
  EXPECT_EQ(j["rejected"], 0);  // fractions: every job runs on either model
  EXPECT_THAT(r.out, ::testing::HasSubstr("churn (60 jobs, 60% PCIe-bound, load 0.9)"));
  auto bad = ::migsched::testing::RunMigsched(
      {"simulate", "--cluster", "1xA100-40GB", "--workload", "churn", "--arrivals", "poisson"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("--arrivals: churn draws its own arrivals at --load"));
}

}  // namespace
}  // namespace migsched
