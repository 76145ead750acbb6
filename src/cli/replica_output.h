// Terminal and JSON output of replicated runs (docs/algorithms.md §9
// "Replicas"; statistics in sim/replicas.h): every figure as the mean over
// the replicas with the half-width of its 95% confidence interval, and for
// `compare` the paired change of each policy against the first one.
//
// Thread-safety: pure functions of their arguments.
#ifndef MIGSCHED_CLI_REPLICA_OUTPUT_H_
#define MIGSCHED_CLI_REPLICA_OUTPUT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/metrics.h"
#include "sim/replicas.h"

namespace migsched::cli {

// runs[i][r]: run i (a policy, a swept value) in replica r; every runs[i] has
// the same number of replicas, replica r of every run on the same workload.
using ReplicaRuns = std::vector<std::vector<Metrics>>;

// "34.7 min ±1.2", "83.4% ±0.5", "2.31 ±0.08": the mean in the unit of
// MetricCell (cli/report.h) and its half-width in the same unit; the mean
// alone when there is no interval (one replica).
std::string MeanCell(const std::string& key, const Interval& interval);
// "0.87 ±0.03*": a paired ratio, '*' when significant; "-" without pairs.
std::string PairedCell(const PairedChange& change);

// One policy over its replicas: the summary lines of PrintSummary as means
// with their intervals, and the per-profile table.
void PrintReplicaSummary(const std::vector<Metrics>& replicas, std::ostream& out);

// `compare` over replicas: the table of means (± half-widths) of every
// compared metric, then the paired change of every run against the first
// (labels[0]), replica by replica, as the ratio of means with its 95%
// interval and '*' where the paired difference is significant, and the share
// of the reference's gap to the zero-wait floor each run closes. A run that
// does not compare with the first (ComparableToReference, sim/replicas.h: in
// some replica another number of jobs completed or rejected) shows no change
// ('-') but for REJECTED and REJ SLICE-H (RatioComparable, cli/report.h), and
// a line names it and where it first differs.
void PrintReplicaComparison(const std::vector<std::string>& labels, const ReplicaRuns& runs,
                            std::ostream& out);

// `compare --by-profile`: per requested profile (by size), a row per run with
// jobs, mean and p95 wait, mean and p95 JCT, slowdown and bounded slowdown
// (means with intervals over replicas), and the paired ratio of the p95 wait
// and the mean JCT against the first run.
void PrintByProfile(const std::vector<std::string>& labels, const ReplicaRuns& runs,
                    std::ostream& out);

// The JSON of one run over its replicas: its metrics as ReplicaMeans, then
// "replicas", "seeds", "ci95" (ReplicaHalfWidths) and "replica_results"
// (every replica's MetricsToJson). With one replica: MetricsToJson of it, as
// without --replicas.
nlohmann::ordered_json ReplicaRunJson(const std::vector<Metrics>& replicas,
                                      const std::vector<uint64_t>& seeds);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_REPLICA_OUTPUT_H_
