// The HTML report from the CLI (docs/report.md): the --report and
// --snapshot-at flags of `simulate`, `compare` and `report`, preparing a
// simulation so that it records what the report draws, and writing the
// report (report/html_report.h).
#ifndef MIGSCHED_CLI_REPORT_OUTPUT_H_
#define MIGSCHED_CLI_REPORT_OUTPUT_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/sim_flags.h"
#include "core/status.h"
#include "io/workload_job.h"
#include "report/html_report.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched::cli {

struct ReportFlags {
  std::string path;                 // --report FILE.html ("" = no report)
  std::vector<double> snapshot_at;  // --snapshot-at T[,T...], virtual seconds
};

// Adds --snapshot-at to `cmd`, and --report FILE.html unless `with_path` is
// false (the `report` command has its own -o).
void AddReportFlags(CLI::App* cmd, ReportFlags* flags, bool with_path = true);

// The instants the slot maps show when --snapshot-at is not given: 25%, 50%
// and 75% of the way from the first to the last arrival of `jobs` (the
// loaded part of an online run; the makespan is not known before the run).
// Empty for an empty workload.
std::vector<double> DefaultSnapshotTimes(const std::vector<WorkloadJob>& jobs);

// Makes `sim` record what the report draws: job records, the timeline, GPU
// snapshots at --snapshot-at (or DefaultSnapshotTimes) and at the peak of
// fragmentation. Online mode only for the snapshots; fill mode keeps its
// fill curve.
void PrepareForReport(const ReportFlags& flags, const std::vector<WorkloadJob>& jobs,
                      SimOptions* sim);

// One report for runs of the same setup: title, the workload line, the
// settings and notes of `setup`, and one run per (label, result).
HtmlReport MakeSimReport(const std::string& title, const SimSetup& setup, const SimFlags& flags,
                         const std::vector<std::string>& labels,
                         const std::vector<const SimResult*>& results);

// Replicated runs (runs[i][r]: run i of labels, replica r; the report's runs
// added in that order from replica 0's results): the summary, key charts and
// tables show the means over the replicas with their 95% half-widths, the
// tables the paired changes against the first run (cli/replica_output.h); a
// note says the charts over time, JCT distribution and slot maps are replica
// 0's.
void AddReplicaStats(const std::vector<std::string>& labels,
                     const std::vector<std::vector<Metrics>>& runs,
                     const std::vector<uint64_t>& seeds, HtmlReport* report);

// The report of a sweep (`migsched sweep --report`): a table with a column
// per value and each metric charted against the value; metrics[i][r] is value
// i in replica r (the table shows means ± 95% half-widths with several
// replicas, the charts the means with whiskers at those intervals, and the
// summary pairs the best value with the next best replica by replica).
// kInvalidArgument as HtmlReport::SetSweep.
StatusOr<HtmlReport> MakeSweepReport(const SimSetup& setup, const SimFlags& flags,
                                     const std::string& policy, const std::string& param,
                                     const std::vector<double>& values,
                                     const std::vector<std::vector<Metrics>>& metrics,
                                     const std::vector<uint64_t>& seeds);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_REPORT_OUTPUT_H_
