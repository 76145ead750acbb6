#include "cli/replica_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

#include "cli/report.h"

namespace migsched::cli {
namespace {

using ::testing::HasSubstr;

// One run's replicas, each {jobs_completed, rejected} of 10 jobs (the rest
// timed out), with a mean JCT of `jct_s` over a floor of 50 s and a rejected
// slice-hour per rejected job.
std::vector<Metrics> RunOfCounts(const std::string& policy,
                                 const std::vector<std::array<int64_t, 2>>& counts, double jct_s) {
  std::vector<Metrics> out;
  for (const auto& [completed, rejected] : counts) {
    Metrics m;
    m.mode = "online";
    m.policy = policy;
    m.jobs_total = 10;
    m.jobs_completed = completed;
    m.rejected = rejected;
    m.rejected_slice_hours = static_cast<double>(rejected);
    m.jct_mean_s = jct_s;
    m.duration_mean_s = 50;
    out.push_back(m);
  }
  return out;
}

// The cells of the first line of `out` after `from` that starts with
// `label`: columns are two or more spaces apart (a paired cell, "1.33 ±1.43",
// has one space inside).
std::vector<std::string> TableRowCells(const std::string& out, const std::string& from,
                                       const std::string& label) {
  const size_t start = out.find(from);
  if (start == std::string::npos) return {};
  const size_t row = out.find("\n" + label + " ", start);
  if (row == std::string::npos) return {};
  const std::string line = out.substr(row + 1, out.find('\n', row + 1) - row - 1);
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == ' ' && i + 1 < line.size() && line[i + 1] == ' ') {
      if (!cell.empty()) cells.push_back(cell);
      cell.clear();
    } else if (!(line[i] == ' ' && cell.empty())) {
      cell += line[i];
    }
  }
  if (!cell.empty()) cells.push_back(cell);
  return cells;
}

// The column of `key` in the ratio tables: after POLICY and GAP CLOSED.
size_t RatioColumn(const std::string& key) {
  const auto& cols = ComparedMetrics();
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].key == key) return i + 2;
  }
  return 0;
}

// The bug: the replica table showed the paired ratios of every policy, while
// `compare --json` nulled them when some replica's jobs differed and the
// report compared the means. Replica 0 matches here, replica 2 does not.
TEST(ReplicaComparisonTest, ARunThatDiffersInOneReplicaShowsNoRatios) {
  // ref: 9, 8 and 9 completed, one rejected in each replica (replica 1 timed one out).
  const ReplicaRuns runs = {RunOfCounts("ref", {{9, 1}, {8, 1}, {9, 1}}, 100),
                            RunOfCounts("late", {{9, 1}, {8, 1}, {8, 2}}, 80),
                            RunOfCounts("same", {{9, 1}, {8, 1}, {9, 1}}, 100)};
  std::ostringstream out;
  PrintReplicaComparison({"ref", "late", "same"}, runs, out);
  EXPECT_THAT(out.str(),
              HasSubstr("Runs that completed or rejected another number of jobs than ref in some "
                        "replica show no ratio ('-') except REJECTED and REJ SLICE-H: late "
                        "(replica 2: 8 jobs completed, ref 9).\n"));
  const std::vector<std::string> late = TableRowCells(out.str(), "Paired change", "late");
  ASSERT_EQ(late.size(), ComparedMetrics().size() + 2) << out.str();
  // REJECTED and REJ SLICE-H: means 4/3 against 1, paired differences {0, 0, 1}:
  // mean 1/3, sd sqrt(1/3), half t(0.975, 2) × sd / sqrt(3) = 4.303 / 3 = 1.43.
  for (size_t i = 1; i < late.size(); ++i) {
    const bool rejections =
        i == RatioColumn("rejected") || i == RatioColumn("rejected_slice_hours");
    EXPECT_EQ(late[i], rejections ? "1.33 ±1.43" : "-") << "column " << i;
  }
  // A run with every replica's counts the reference's compares: gap closed 0
  // ((100 - 100) / (100 - 50)), JCT ratio 1.
  const std::vector<std::string> same = TableRowCells(out.str(), "Paired change", "same");
  ASSERT_EQ(same.size(), ComparedMetrics().size() + 2) << out.str();
  EXPECT_EQ(same[1], "+0% ±0");
  EXPECT_EQ(same[RatioColumn("jct_mean_s")], "1.00 ±0.00");
}

TEST(ReplicaComparisonTest, EveryRunComparesNoLine) {
  const ReplicaRuns runs = {RunOfCounts("ref", {{10, 0}, {10, 0}}, 100),
                            RunOfCounts("other", {{10, 0}, {10, 0}}, 90)};
  std::ostringstream out;
  PrintReplicaComparison({"ref", "other"}, runs, out);
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("show no ratio")));
  // JCT 90 against 100 in both replicas: ratio 0.90, no spread.
  EXPECT_EQ(TableRowCells(out.str(), "Paired change", "other")[RatioColumn("jct_mean_s")],
            "0.90 ±0.00*");
}

// One run per policy (PrintComparison): the same rule, so a run that
// completed as many jobs but rejected one the reference timed out has no
// ratios but for the rejections.
TEST(ComparisonTableTest, ARunThatRejectedAnotherNumberOfJobsShowsNoRatios) {
  const std::vector<Metrics> runs = {RunOfCounts("ref", {{9, 0}}, 100).front(),
                                     RunOfCounts("rejecting", {{9, 1}}, 80).front()};
  std::ostringstream out;
  PrintComparison(runs, out);
  EXPECT_THAT(out.str(), HasSubstr("Runs that completed or rejected another number of jobs than "
                                   "ref show no ratio ('-') except REJECTED and REJ SLICE-H.\n"));
  const std::vector<std::string> row = TableRowCells(out.str(), "Ratio to ref", "rejecting");
  ASSERT_EQ(row.size(), ComparedMetrics().size() + 2) << out.str();
  EXPECT_EQ(row[1], "-");  // GAP CLOSED
  EXPECT_EQ(row[RatioColumn("jct_mean_s")], "-");
  // 1 rejected against 0: no ratio to 0 either.
  EXPECT_EQ(row[RatioColumn("rejected")], "-");
}

// Regression (trial_compare_zero_completed): a policy that completed no job showed a JCT, wait
// and slowdowns of 0 in compare's table (0 reads as a perfect result); simulate's summary shows
// "-" there. The times are over completed jobs: with none there are none. The metrics columns
// (ratio table less GAP CLOSED) are one to the left of RatioColumn.
TEST(ComparisonTableTest, APolicyThatCompletedNoJobShowsNoTimes) {
  std::vector<Metrics> runs = {RunOfCounts("ref", {{3, 0}}, 100).front(),
                               RunOfCounts("none-done", {{0, 3}}, 0).front()};
  runs[1].jct_mean_s = runs[1].wait_mean_s = runs[1].slowdown_mean = 0;
  std::ostringstream out;
  PrintComparison(runs, out);
  const std::vector<std::string> row = TableRowCells(out.str(), "POLICY", "none-done*");
  ASSERT_EQ(row.size(), ComparedMetrics().size() + 1) << out.str();
  for (const char* key :
       {"jct_mean_s", "jct_p95_s", "wait_mean_s", "slowdown_mean", "bounded_slowdown_mean"}) {
    EXPECT_EQ(row[RatioColumn(key) - 1], "-") << key << "\n" << out.str();
  }
  // Counts stay: 3 rejected.
  EXPECT_EQ(row[RatioColumn("rejected") - 1], "3");
  // The reference, which completed 3, shows its JCT (100 s).
  const std::vector<std::string> ref = TableRowCells(out.str(), "POLICY", "ref");
  EXPECT_EQ(ref[RatioColumn("jct_mean_s") - 1], "100.0 s");
}

}  // namespace
}  // namespace migsched::cli
