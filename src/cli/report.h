// Readable renderings of simulation metrics for the terminal.
#ifndef MIGSCHED_CLI_REPORT_H_
#define MIGSCHED_CLI_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "sim/metrics.h"

namespace migsched::cli {

// "45 s", "12.5 min", "3.2 h", "4.1 d".
std::string FormatDuration(double seconds);

// The summary of one run, a few labelled lines plus a per-profile table.
void PrintSummary(const Metrics& m, std::ostream& out);

// One row per run, the first row being the reference: a table of values, then
// a table of each metric's ratio to the first row's.
void PrintComparison(const std::vector<Metrics>& runs, std::ostream& out);

// The metrics the comparison shows, with their JSON keys, in column order.
struct ComparedMetric {
  const char* key;     // MetricsToJson key
  const char* header;  // column header
  bool lower_is_better;
};
const std::vector<ComparedMetric>& ComparedMetrics();

// Value of a compared metric.
double MetricValue(const Metrics& m, const std::string& key);

// A metric's value as a table cell: durations for *_s keys, percentages for
// shares, "-" for a missing value (NaN), e.g. energy without catalog power data.
std::string MetricCell(const std::string& key, double v);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_REPORT_H_
