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

// The summary of one run: first, when jobs were rejected, how many and why;
// then a few labelled lines (named as in sim/metrics.h MetricInfos) and a
// per-profile table ordered by profile size (ProfileKeyLess).
void PrintSummary(const Metrics& m, std::ostream& out);

// How many jobs of `m` were rejected and why, one line per reason (most
// frequent first, at most 5 and a line for the rest), each line starting with
// `indent`; nothing when none was.
void PrintRejections(const Metrics& m, const std::string& indent, std::ostream& out);

// One row per run, the first row being the reference: a table of values, then
// a table of each metric's ratio to the first row's, with a legend giving
// every column's better direction. A run that completed fewer jobs than
// another is marked '*' and explained; the ratios of a run that does not
// compare with the first (ComparableToReference, sim/replicas.h: another
// number of jobs completed or rejected) are not shown ('-'), except for
// REJECTED and REJ SLICE-H (RatioComparable).
void PrintComparison(const std::vector<Metrics>& runs, std::ostream& out);

// The metrics the comparison shows, with their JSON keys, in column order.
struct ComparedMetric {
  const char* key;      // MetricsToJson key
  const char* header;   // column header
  MetricBetter better;  // sim/metrics.h MetricInfos
};
const std::vector<ComparedMetric>& ComparedMetrics();

// Whether the ratio of `key` between a run and the reference is shown:
// `runs_compare` (the run compares with the reference, ComparableToReference
// in sim/replicas.h: the one rule; else its times, rates, utilisation and
// energy are over other jobs, and it would look better for doing less), or
// the metric counts the rejected jobs (rejected, rejected_slice_hours), which
// compares anyway.
bool RatioComparable(const std::string& key, bool runs_compare);

// Value of a compared metric.
double MetricValue(const Metrics& m, const std::string& key);

// The share of the reference's gap between its mean JCT and its zero-wait
// floor (mean duration) that `m` closes: (JCT_ref - JCT_m) / (JCT_ref -
// floor_ref); 1 = no job waits, 0 = as the reference, negative = worse. NaN
// when the reference has no gap.
double GapClosed(const Metrics& m, const Metrics& reference);
// "+12%", "-5%", "-" for NaN.
std::string GapClosedCell(double share);

// A metric's value as a table cell: durations for *_s keys, percentages for
// shares, "-" for a missing value (NaN), e.g. energy without catalog power data.
std::string MetricCell(const std::string& key, double v);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_REPORT_H_
