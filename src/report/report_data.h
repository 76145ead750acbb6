// The data transforms behind the HTML report (report/html_report.h): turning a
// simulation's timeline and job records into the few thousand points a chart
// needs, and formatting metric values for its tables. Pure functions, no I/O.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_REPORT_REPORT_DATA_H_
#define MIGSCHED_REPORT_REPORT_DATA_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/sim_result.h"

namespace migsched {

// Timeline series as drawn: a step function, value[i] holding from time_s[i]
// to time_s[i + 1] (the last one is where the timeline ends).
struct TimelineSeries {
  std::vector<double> time_s;
  std::vector<double> frag_rate;     // mean FragCost over GPUs (§2)
  std::vector<double> utilization;   // busy / all compute slices
  std::vector<double> queue_length;  // jobs waiting
  // 0: the samples as recorded; > 0: each point is the time-weighted mean over
  // a window of this many seconds (see DownsampleTimeline).
  double window_s = 0;
};

// The timeline of a run as at most `max_points` (>= 2) points per series.
// TimelineSample i holds from its time to the next sample's time. If there
// are at most `max_points` samples they are returned as they are (window_s =
// 0). Otherwise the span [first time, last time] is cut into `max_points - 1`
// equal windows; point k (k < max_points - 1) is the start of window k with the
// time-weighted mean of each quantity over it (so the area under each curve,
// hence its time-weighted mean over the run, is kept exactly), and a last
// point at the last sample's time carries the last sample's values. Empty in,
// empty out.
TimelineSeries DownsampleTimeline(const std::vector<TimelineSample>& timeline, int max_points);

// The empirical distribution of job completion times (JCT) of the completed
// jobs: jct_s ascending and fraction[i] = share of completed jobs with a JCT
// <= jct_s[i]. With at most `max_points` (>= 2) completed jobs, one point per
// job (ties kept, so fraction steps by 1/n); otherwise the `max_points`
// quantiles at fraction k / max_points, k = 1..max_points, each the smallest
// JCT whose empirical CDF reaches it (sorted[ceil(k n / max_points) - 1]).
// Jobs not completed (rejected, fill mode) and non-finite JCTs are left out.
struct JctCdf {
  std::vector<double> jct_s;
  std::vector<double> fraction;
  int64_t jobs = 0;  // completed jobs it describes
};
JctCdf ComputeJctCdf(const std::vector<JobRecord>& jobs, int max_points);

// How a metric's value is written in the report's tables.
enum class MetricFormat {
  kDuration,  // seconds, shown as "45.0 s", "12.5 min", "3.20 h", "4.10 d"
  kPercent,   // a share in [0, 1], shown as "12.3%"
  kRate,      // a fragmentation rate, 3 decimals
  kCount,     // an integer
  kDecimal,   // a real number, 1 decimal
};

// A metric the report's summary table shows, by its MetricsToJson key.
struct ReportMetric {
  std::string key;
  std::string label;
  MetricFormat format = MetricFormat::kDecimal;
  // Which direction is better; ratios to the reference run are coloured by it.
  enum class Better { kLower, kHigher, kNeither };
  Better better = Better::kNeither;
  // false for a key the report does not know: shown with its raw key, in the
  // kDecimal format, uncoloured.
  bool known = true;
};

// The metrics of the summary table for a mode ("online" or "fill"), in row
// order: every metric `compare` shows (cli/report.h ComparedMetrics) plus the
// other counts and percentiles of sim/metrics.h. Keys that a newer Metrics
// adds are appended by the report as unknown metrics.
const std::vector<ReportMetric>& ReportMetrics(std::string_view mode);
// The known metric of that key (either mode), or one with known = false.
ReportMetric FindReportMetric(const std::string& key);

// The metrics the report opens with (its summary and key charts) for a mode
// ("online" or "fill"), a subset of ReportMetrics(mode): online the JCT mean,
// makespan, utilisation, fragmentation rate mean and jobs rejected; fill the
// allocation, acceptance and fragmentation rate at the end. Each has a better
// direction.
const std::vector<std::string>& KeyMetrics(std::string_view mode);

// The unit a set of values is written in: value / divisor with `decimals`
// decimals, then `suffix`. One unit for all the values that are compared
// (a table row or column, a chart axis), so that none reads "2.10 h" next to
// "111.1 min".
struct DisplayUnit {
  double divisor = 1;
  int decimals = 1;
  std::string suffix;  // " s", " min", " h", " d", "%", ""
  std::string name;    // the unit alone for an axis title: "s", "min", "h", "d", "%", ""
};

// The unit of `values` (non-finite ones ignored) in `format`:
//  * kDuration: from the largest |value|: seconds below 120 s, minutes below
//    2 h, hours below 3 days, else days (the thresholds of FormatSeconds);
//  * kPercent: "%" (× 100), 1 decimal; kRate: 3 decimals; kCount: 0
//    decimals, 1 when a value has a fraction (a mean over replicas);
//    kDecimal: 1 decimal.
// Durations and kDecimal get more decimals (at most 3) when the smallest
// non-zero |value| would otherwise show fewer than 3 significant digits
// (e.g. 200 s and 400 s: "3.33 min", "6.67 min"). No finite value: the unit of
// one value 0.
DisplayUnit ChooseUnit(MetricFormat format, const std::vector<double>& values);

// `value` in `unit`, with " ±half" (in the same unit) when `half` is finite:
// "34.70 ±1.20 min", "83.4% ±0.5", "0.052 ±0.004"; "-" when `value` is not
// finite.
std::string FormatInUnit(double value, double half, const DisplayUnit& unit);

// A value in the given format, its unit chosen from it alone
// (ChooseUnit(format, {value})); "-" for NaN or infinity.
std::string FormatMetric(double value, MetricFormat format);
// A mean and the half-width of its 95% interval (replicas, sim/replicas.h),
// in the unit of the mean alone: "34.7 ±1.2 min", "83.4% ±0.5", "0.052
// ±0.004", "412.3 ±8.1" (counts averaged over replicas have a fraction);
// FormatMetric(value) when `half` is not finite; "-" when `value` is not.
std::string FormatMetricWithHalf(double value, double half, MetricFormat format);
// "45.0 s", "12.5 min", "3.20 h", "4.10 d"; "-" when not finite.
std::string FormatSeconds(double seconds);

// `text` with &, <, >, " and ' replaced by HTML character references.
std::string EscapeHtml(std::string_view text);

// JSON text made safe to place inside an HTML <script> element: every '<'
// becomes the JSON escape \u003c (JSON has '<' only inside strings, where
// the escape means the same character), so "</script>" or "<!--" in a job
// name cannot end or corrupt the element.
std::string JsonForScript(std::string_view json_text);

}  // namespace migsched

#endif  // MIGSCHED_REPORT_REPORT_DATA_H_
