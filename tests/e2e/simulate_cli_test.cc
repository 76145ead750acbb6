// End-to-end runs of `migsched simulate` and `compare` on tiny traces whose
// outcome is worked out by hand in the comments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
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
using ::testing::Not;

// Rows of a CSV file as maps header -> field (our outputs quote nothing in
// these columns).
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  auto split = [](const std::string& l) {
    std::vector<std::string> out;
    std::stringstream ss(l);
    std::string f;
    while (std::getline(ss, f, ',')) out.push_back(f);
    if (!l.empty() && l.back() == ',') out.push_back("");
    return out;
  };
  std::getline(in, line);
  header = split(line);
  while (std::getline(in, line)) {
    auto f = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < f.size(); ++i) row[header[i]] = f[i];
    rows.push_back(row);
  }
  return rows;
}

// One A100 40GB; two 4g.20gb jobs of 100 s at t=0 (only placement: 4g@0) and
// a 3g.20gb job of 50 s at t=10 (3g@4, beside the first 4g). Each MIG create
// or destroy costs 23 ms, serialised per GPU.
const char kTwoFourG[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,4g.20gb,100\n"
    "b,0,4g.20gb,100\n"
    "c,10,3g.20gb,50\n";

TEST(SimulateCliTest, FragAwareReusesTheIdleInstance) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string json = WriteTempFile("out.json", "");
  const std::string jobs = WriteTempFile("jobs.csv", "");
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                        "frag-aware", "--json", json, "--jobs-csv", jobs, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("makespan"));
  // a: create 4g@0 (0 -> 0.023), runs 0.023 -> 100.023.
  // c: create 3g@4 at 10 (10 -> 10.023), runs to 60.023; its instance stays idle.
  // b: waits for 4g@0; when a ends frag-aware keeps a's instance idle and b
  //    reuses it: no reconfiguration, runs 100.023 -> 200.023.
  const nlohmann::json m = ReadJson(json);
  EXPECT_NEAR(m["makespan_s"].get<double>(), 200.023, 1e-6);
  EXPECT_NEAR(m["jct_mean_s"].get<double>(), (100.023 + 200.023 + 50.023) / 3, 1e-6);
  EXPECT_NEAR(m["wait_mean_s"].get<double>(), (0.023 + 100.023 + 0.023) / 3, 1e-6);
  EXPECT_EQ(m["reconfigurations"].get<int>(), 2);
  EXPECT_EQ(m["reuses"].get<int>(), 1);
  EXPECT_EQ(m["rejected"].get<int>(), 0);
  EXPECT_EQ(m["jobs_completed"].get<int>(), 3);
  EXPECT_EQ(m["migrations"].get<int>(), 0);
  for (const char* key : {"makespan_s", "jct_mean_s", "jct_p95_s", "wait_mean_s", "utilization",
                          "frag_mean", "frag_peak", "rejected", "reconfigurations", "reuses",
                          "migrations", "decision_us_mean", "decision_us_p99", "jobs_completed"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  const auto rows = ReadCsv(jobs);
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, std::string> placed;
  for (const auto& row : rows) placed[row.at("name")] = row.at("instances");
  EXPECT_EQ(placed["a"], "0:4g.20gb@0");
  EXPECT_EQ(placed["b"], "0:4g.20gb@0");
  EXPECT_EQ(placed["c"], "0:3g.20gb@4");
}

TEST(SimulateCliTest, FirstFitDestroysAndRecreates) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string json = WriteTempFile("out.json", "");
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                        "first-fit", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // first-fit destroys an instance when its job ends. c ends at 60.023 and
  // its 3g is destroyed (60.023 -> 60.046). a ends at 100.023: destroy 4g@0
  // (100.023 -> 100.046), then b's create (100.046 -> 100.069): b runs
  // 100.069 -> 200.069. Creates: a, c, b = 3; destroys: c, a, b = 3.
  const nlohmann::json m = ReadJson(json);
  EXPECT_NEAR(m["makespan_s"].get<double>(), 200.069, 1e-6);
  EXPECT_NEAR(m["jct_mean_s"].get<double>(), (100.023 + 200.069 + 50.023) / 3, 1e-6);
  EXPECT_EQ(m["reconfigurations"].get<int>(), 6);
  EXPECT_EQ(m["reuses"].get<int>(), 0);
}

// A user's trial: compare had no --jobs-csv, so pairing one job's wait across policies needed a
// simulate run per policy. The rows of both runs of kTwoFourG, by the two tests above: b reuses
// a's idle 4g under frag-aware (starts at 100.023) and waits for a destroy and a create under
// first-fit (100.069).
TEST(CompareCliTest, JobsCsvHasEveryPolicysRowsPairedById) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string jobs = WriteTempFile("jobs.csv", "");
  auto r = RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,first-fit", "--jobs-csv", jobs, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = ReadCsv(jobs);
  ASSERT_EQ(rows.size(), 6u);
  std::map<std::pair<std::string, std::string>, std::string> start;
  for (const auto& row : rows) start[{row.at("policy"), row.at("id")}] = row.at("start_s");
  ASSERT_EQ(start.size(), 6u);
  EXPECT_EQ(rows.front().at("policy"), "frag-aware");
  EXPECT_EQ(rows.back().at("policy"), "first-fit");
  // id 1 is b (the second line of the trace) under both.
  EXPECT_NEAR(std::stod(start[{"frag-aware", "1"}]), 100.023, 1e-6);
  EXPECT_NEAR(std::stod(start[{"first-fit", "1"}]), 100.069, 1e-6);
  EXPECT_NEAR(std::stod(start[{"first-fit", "0"}]), 0.023, 1e-6);
  // With replicas the file is replica 0's, and the terminal says so.
  auto reps = RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", "paper-mix",
                           "--jobs", "30", "--replicas", "2", "--seed", "5", "--policies",
                           "full,first-fit", "--jobs-csv", jobs});
  ASSERT_EQ(reps.exit_code, 0) << reps.err;
  EXPECT_THAT(reps.out, HasSubstr("note: --jobs-csv describes replica 0 (seed 5)"));
  EXPECT_EQ(ReadCsv(jobs).size(), 60u);
}

TEST(SimulateCliTest, JobThatCanNeverRunIsRejectedWithItsReason) {
  const std::string trace = WriteTempFile("a30.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "small,0,1g.6gb,60\n"
                                          "huge,5,7g.40gb,60\n");
  const std::string jobs = WriteTempFile("jobs.csv", "");
  const std::string json = WriteTempFile("out.json", "");
  auto r = RunMigsched({"simulate", "--cluster", "2xA30-24GB", "--workload", trace, "--jobs-csv",
                        jobs, "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json m = ReadJson(json);
  EXPECT_EQ(m["rejected"].get<int>(), 1);
  EXPECT_EQ(m["jobs_completed"].get<int>(), 1);
  // small: create 1g.6gb (0 -> 0.023), runs 60 s: makespan 60.023.
  EXPECT_NEAR(m["makespan_s"].get<double>(), 60.023, 1e-6);
  const auto rows = ReadCsv(jobs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].at("name"), "huge");
  EXPECT_EQ(rows[1].at("outcome"), "rejected");
  EXPECT_THAT(rows[1].at("reason"),
              HasSubstr("no GPU in the cluster (A30 24GB) offers profile 7g.40gb"));
}

TEST(SimulateCliTest, ContentionSlowsTwoBloomJobsOnOneGpu) {
  // Two Bloom-7b1 offloaded-inference jobs (17.65 GB/s, alpha 1.07) on one
  // A100 (PCIe 30.08 GB/s): each gets 15.04 GB/s, slowdown 1.07*17.65/15.04 =
  // 1.25572, so 100 s of work takes 125.572 s. Both are 2g.10gb: frag-aware puts
  // the first at 2g@4 (created 0 -> 0.023) and the second at 2g@2 (its create
  // waits for the first: 0.023 -> 0.046). From 0.023 to 0.046 the first runs
  // alone at full speed (0.023 s of work done); then both run at 1/1.25572.
  // First ends at 0.046 + (100 - 0.023) * 1.25572 = 125.5901; the second has
  // done (125.5901 - 0.046)/1.25572 = 99.977 s by then and finishes its last
  // 0.023 s alone: 125.5901 + 0.023 = 125.6131.
  const std::string trace = WriteTempFile("bloom.csv",
                                          "id,arrival_s,profile,duration_s,pcie_gbps,alpha\n"
                                          "b1,0,2g.10gb,100,17.65,1.07\n"
                                          "b2,0,2g.10gb,100,17.65,1.07\n");
  const nlohmann::json m = Simulate("1xA100-40GB", trace);
  ASSERT_FALSE(m.is_null());
  const double slow = 1.07 * 17.65 / (30.08 / 2);
  const double first_end = 0.046 + (100 - 0.023) * slow;
  const double second_end = first_end + 0.023;
  EXPECT_NEAR(m["makespan_s"].get<double>(), second_end, 1e-6);
  EXPECT_NEAR(m["jct_mean_s"].get<double>(), (first_end + second_end) / 2, 1e-6);
  // --no-contention: both take 100 s: the later-created one ends at 100.046.
  nlohmann::json no_contention = Simulate("1xA100-40GB", trace, {"--no-contention"});
  ASSERT_FALSE(no_contention.is_null());
  EXPECT_NEAR(no_contention["makespan_s"].get<double>(), 100.046, 1e-6);
}

TEST(SimulateCliTest, BadTraceLineNamesFileLineAndField) {
  const std::string trace = WriteTempFile("bad.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,1g.5gb,10\n"
                                          "b,1,1g.5gb,-3\n");
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("bad.csv:3"));
  EXPECT_THAT(r.err, HasSubstr("duration_s"));
}

// Regression: docs/formats/outputs.md describes the fill curve CSV, but no flag wrote it.
// By hand: one A100 40GB (7 compute slices), fill mode over a 7g.40gb then a 3g.20gb. The 7g is
// placed: requested 7/7 = 100%, so the steps 5%..100% (rows 1-20) show 1 arrived, 1 placed, the
// GPU full (allocation 1, FragCost 0). The 3g finds no room: requested 10/7 = 1.428...; the steps
// 105%..130% (rows 21-26, the default fill target 130%) show 2 arrived, 1 placed, acceptance 0.5.
TEST(SimulateCliTest, FillCurveCsvHasARowPerFivePercentOfRequestedCompute) {
  const std::string trace = WriteTempFile("fill.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,7g.40gb,10\n"
                                          "b,1,3g.20gb,10\n");
  const std::string csv = ::migsched::testing::MakeTempDir("fill-curve").string() + "/curve.csv";
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--mode",
                        "fill", "--fill-curve-csv", csv, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(::migsched::testing::ReadFile(csv));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 27u);
  EXPECT_EQ(lines[0],
            "target_share,requested_share,allocation,acceptance,frag_rate,arrived,placed");
  EXPECT_EQ(lines[1], "0.05,1,1,1,0,1,1");
  EXPECT_EQ(lines[20], "1,1,1,1,0,1,1");
  EXPECT_EQ(lines[21], "1.05,1.4285714285714286,1,0.5,0,2,1");
  EXPECT_EQ(lines[26], "1.3,1.4285714285714286,1,0.5,0,2,1");
}

TEST(SimulateCliTest, UnknownGpuAndPolicyAreClearErrors) {
  const std::string trace = WriteTempFile("t.csv", kTwoFourG);
  auto r = RunMigsched({"simulate", "--cluster", "2xV100", "--workload", trace, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--cluster"));
  EXPECT_THAT(r.err, HasSubstr("unknown GPU model 'V100'"));
  auto p = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                        "magic", "--quiet"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("unknown policy 'magic'"));
}

TEST(CompareCliTest, OneRowPerPolicyWithRatiosToTheFirst) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  const std::string json = WriteTempFile("cmp.json", "");
  auto r = RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,first-fit", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("frag-aware"));
  EXPECT_THAT(r.out, HasSubstr("first-fit"));
  const nlohmann::json j = ReadJson(json);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["policy"], "frag-aware");
  EXPECT_DOUBLE_EQ(j["results"][0]["ratio_to_reference"]["makespan_s"].get<double>(), 1.0);
  // Same hand-derived makespans as above: 200.069 / 200.023.
  EXPECT_NEAR(j["results"][1]["ratio_to_reference"]["makespan_s"].get<double>(), 200.069 / 200.023,
              1e-9);
  EXPECT_EQ(j["results"][1]["reconfigurations"].get<int>(), 6);
}

TEST(OutputLabelsCliTest, StrandedFiguresAreNamedTheSameInTerminalJsonAndReport) {
  // first-fit, no reconfiguration time, two 4g.20gb jobs of 100 s at t = 0 on
  // one A100 40GB: over [0, 100) b waits and the 3 free slices (units 4-7)
  // cannot take a 4g.20gb (its only placement is 0): all free slices are
  // stranded, 3 of all 7. Over [100, 200) nothing waits: 0.
  // Stranded share (of the free slices) = 100/200 = 50.0%; stranded capacity
  // (of all slices) = 3/7 × 100/200 = 3/14 = 21.4%.
  const std::string trace = WriteTempFile("two-big.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,4g.20gb,100\n"
                                          "b,0,4g.20gb,100\n");
  const std::string json = WriteTempFile("out.json", "");
  const std::string html = WriteTempFile("out.html", "");
  auto r =
      RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--policy",
                   "first-fit", "--reconfig-ms", "0", "--json", json, "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("  stranded capacity 21.4% of all compute slices (time mean)\n"
                        "  stranded share    50.0% of the free compute slices (time mean)\n"));
  const nlohmann::json m = ReadJson(json);
  EXPECT_NEAR(m["stranded_capacity_mean"].get<double>(), 3.0 / 14, 1e-12);
  EXPECT_NEAR(m["stranded_share_mean"].get<double>(), 0.5, 1e-12);
  EXPECT_FALSE(m.contains("stranded_mean"));
  const std::string page = ::migsched::testing::ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<tr data-metric=\"stranded_capacity_mean\"><th>stranded capacity "
                              "(of all compute slices, time mean)</th><td>21.4%</td>"));
  EXPECT_THAT(page, HasSubstr("<tr data-metric=\"stranded_share_mean\"><th>stranded share (of the "
                              "free compute slices, time mean)</th><td>50.0%</td>"));
}

TEST(OutputLabelsCliTest, PerProfileRowsAreInSizeOrderWithNoTimeForNoneCompleted) {
  // Listed out of order on purpose; by size: compute slices, then memory,
  // then the gang size. The 7g.80gb jobs no A100 40GB offers: rejected, so
  // their JCT and wait are "-", not 0 s.
  const std::string trace = WriteTempFile("mix.csv",
                                          "id,arrival_s,profile,count,duration_s\n"
                                          "a,0,3g.20gb,1,10\n"
                                          "b,0,7g.80gb,1,10\n"
                                          "c,0,1g.10gb,1,10\n"
                                          "d,20,7g.40gb,2,10\n"
                                          "e,40,1g.5gb,1,10\n"
                                          "f,40,7g.40gb,1,10\n"
                                          "g,60,2g.10gb,1,10\n");
  const std::string html = WriteTempFile("mix.html", "");
  auto r = RunMigsched(
      {"simulate", "--cluster", "2xA100-40GB", "--workload", trace, "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> order;
  std::istringstream lines(r.out.substr(r.out.find("  REQUEST")));
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    order.push_back(first);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "7g.40gb",
                                             "2x7g.40gb", "7g.80gb"}));
  // 1 job, 0 completed, 1 rejected (100%, no slice-hours: no GPU offers it), no timeout, no times.
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "  7g\\.80gb +1 +0 +1 +100\\.0% +0\\.0 +0 +- +- +- +- +- +-\n"));
  // The report's table: the same order (first block, JCT mean).
  const std::string page = ::migsched::testing::ReadFile(html);
  std::vector<size_t> at;
  for (const char* p :
       {"<th>1g.5gb</th>", "<th>1g.10gb</th>", "<th>2g.10gb</th>", "<th>3g.20gb</th>",
        "<th>7g.40gb</th>", "<th>2x7g.40gb</th>", "<th>7g.80gb</th>"}) {
    at.push_back(page.find(p, page.find("id=\"profile-table\"")));
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << "profile rows out of size order";
  EXPECT_EQ(at.back() == std::string::npos, false);
}

// One A100 40GB: a (7g.40gb, 10 s), b (1g.5gb, 10 s), c (7g.80gb: no A100
// 40GB offers it). frag-aware completes a and b and rejects c; static's
// all-balanced layout (2g@0, 1g@2, 1g@3, 3g@4) has no 7g.40gb: it completes b
// only and rejects a and c.
const char kStaticRejects[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,7g.40gb,10\n"
    "b,100,1g.5gb,10\n"
    "c,200,7g.80gb,10\n";

TEST(CompareCliTest, LegendGivesEveryColumnsDirection) {
  const std::string trace = WriteTempFile("two-4g.csv", kTwoFourG);
  auto r = RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,first-fit", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Lower is better for times, fragmentation, rejections (jobs and slice-hours), moves per
  // accepted job, reconfigurations, decision times and energy (also over the arrival window);
  // higher for utilisation, reuses and the two throughputs (jobs per day, jobs per kWh), and
  // utilisation and jobs per day over the arrival window.
  EXPECT_THAT(r.out, HasSubstr("Ratio to frag-aware (below 1 is lower).\n"
                               "  Lower is better: MAKESPAN, JCT MEAN, JCT P95, WAIT MEAN, "
                               "SLOWDOWN, BSLD, FRAG MEAN, FRAG PEAK, REJECTED, REJ SLICE-H, "
                               "MIG/ACCEPTED, RECONFIGS, DECIDE US, DECIDE P99, KWH and KWH "
                               "ARRIVING.\n"
                               "  Higher is better: UTIL, REUSES, JOBS/DAY, JOBS/KWH, UTIL "
                               "ARRIVING and JOBS/DAY ARRIVING.\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("*")));  // both completed every job
}

TEST(CompareCliTest, ARunOverFewerJobsIsMarkedAndGetsNoRatios) {
  const std::string trace = WriteTempFile("static.csv", kStaticRejects);
  const std::string json = WriteTempFile("cmp.json", "");
  // The one fixed layout (`static-all-balanced`; `static` lays out the workload's mix).
  auto r = RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,static-all-balanced", "--json", json, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  REJECTED by static-all-balanced: 2 of 3 jobs never ran; why:\n"
                               "        1 no GPU in the cluster (A100 40GB) offers profile "
                               "7g.80gb\n"
                               "        1 the static-all-balanced policy's layout has no 7g.40gb "
                               "instance\n"));
  EXPECT_THAT(r.out, HasSubstr("\nstatic-all-balanced*  "));
  EXPECT_THAT(r.out, HasSubstr("* static-all-balanced completed 1 of 3 jobs (2 rejected; the most "
                               "any policy completed: 2): its times, utilisation, rates and "
                               "energy are over fewer jobs, not comparable\n"));
  // Its ratio row: '-' everywhere but REJECTED (2 against frag-aware's 1).
  const size_t ratios = r.out.find("Ratio to frag-aware");
  ASSERT_NE(ratios, std::string::npos);
  const size_t row = r.out.find("\nstatic-all-balanced*", ratios);
  ASSERT_NE(row, std::string::npos);
  std::istringstream cells(r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1));
  std::vector<std::string> values;
  for (std::string c; cells >> c;) values.push_back(c);
  ASSERT_EQ(values.size(), 25u);  // the policy, GAP CLOSED and 23 columns
  for (size_t i = 1; i < values.size(); ++i) {
    EXPECT_EQ(values[i], i == 11 ? "2.00" : "-") << "column " << i;  // REJECTED is column 11
  }
  const nlohmann::json j = ReadJson(json);
  EXPECT_TRUE(j["results"][0]["comparable_to_reference"].get<bool>());
  EXPECT_FALSE(j["results"][1]["comparable_to_reference"].get<bool>());
  EXPECT_TRUE(j["results"][1]["ratio_to_reference"]["makespan_s"].is_null());
  EXPECT_TRUE(j["results"][1]["ratio_to_reference"]["jobs_per_kwh"].is_null());
  EXPECT_DOUBLE_EQ(j["results"][1]["ratio_to_reference"]["rejected"].get<double>(), 2.0);
  EXPECT_EQ(
      j["results"][1]["rejected_reasons"],
      nlohmann::json({{"no GPU in the cluster (A100 40GB) offers profile 7g.80gb", 1},
                      {"the static-all-balanced policy's layout has no 7g.40gb instance", 1}}));
}

// Regression: a run starred for completing fewer jobs did not say that they ended at their time
// limit, so "completed 0 of 2 jobs (0 rejected)" left the reader to guess. Two PCIe-bound jobs
// (25 GB/s each, 100 s of work, limit 130 s) on 2x A100 40GB (30.08 GB/s per GPU): first-fit puts
// both on GPU 0, where they share 30.08 of the 50 GB/s they ask for, run slower than 130/100 of
// their pace and both end at their limit; frag-aware puts them on two GPUs and both complete.
TEST(CompareCliTest, AStarredRunSaysHowManyJobsEndedAtTheirTimeLimit) {
  const std::string trace = WriteTempFile("limits.csv",
                                          "id,arrival_s,profile,duration_s,pcie_gbps,time_limit_s\n"
                                          "a,0,1g.5gb,100,25,130\n"
                                          "b,0,1g.5gb,100,25,130\n");
  auto r = RunMigsched({"compare", "--cluster", "2xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,first-fit", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("* first-fit completed 0 of 2 jobs (0 rejected, 2 ended at their "
                               "time limit; the most any policy completed: 2)"));
  EXPECT_THAT(r.out, Not(HasSubstr("* frag-aware")));
}

TEST(FragCliTest, PrintsFragCostAndTermsAsJson) {
  // The worked value of docs/algorithms.md §2: 1g@0 and 1g@4 on A100 40GB -> 0.5667, 1g.10gb 2
  // of 3.
  auto r =
      RunMigsched({"frag", "--gpu", "A100-40GB", "--instances", "1g.5gb@0,1g.5gb@4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu"], "A100 40GB");
  EXPECT_NEAR(j["fragcost"].get<double>(), 0.5666666666666667, 1e-9);
  EXPECT_EQ(j["terms"]["1g.10gb"]["feasible"], 2);
  EXPECT_EQ(j["terms"]["1g.10gb"]["ideal"], 3);
  EXPECT_FALSE(j["terms"].contains("7g.40gb"));  // ideal 0: left out
}

TEST(FragCliTest, InvalidInstanceListSaysWhichAndWhy) {
  struct Case {
    std::string instances;
    std::string error;
  } cases[] = {
      {"3g.20gb@0,2g.10gb@2",
       "instance 2 '2g.10gb@2' overlaps instance 1 '3g.20gb@0' (placement units 2-3)"},
      {"3g.20gb@2",
       "instance 1 '3g.20gb@2': start 2 is not a placement of 3g.20gb (valid starts: 0, 4)"},
      {"5g.25gb@0", "instance 1 '5g.25gb@0': unknown profile '5g.25gb' on A100 40GB"},
      {"1g.5gb", "instance 1 '1g.5gb': expected PROFILE@START, e.g. 3g.20gb@4"},
      {"4g.20gb@0,1g.10gb@4,1g.10gb@6,1g.5gb@7",
       "instance 4 '1g.5gb@7': start 7 is not a placement"},
  };
  for (const Case& c : cases) {
    auto r = RunMigsched({"frag", "--gpu", "A100-40GB", "--instances", c.instances});
    EXPECT_EQ(r.exit_code, 1) << c.instances;
    EXPECT_THAT(r.err, HasSubstr(c.error)) << c.instances;
  }
}

}  // namespace
}  // namespace migsched
