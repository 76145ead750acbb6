// HtmlReport: one self-contained HTML file that shows simulation results as
// tables and charts (docs/report.md). The file opens offline: the charting
// library (Chart.js, third_party/chartjs/, compiled into the binary) and the
// page's own script and styles are inlined, and the data is embedded as JSON
// that the page's script draws.
//
// What the page shows, for the runs added (one per policy, say), in order:
//  * a summary: per key metric (report_data.h KeyMetrics) the best run or
//    swept value, its change against the next best and, when both have
//    replicas of the same seeds, the paired 95% interval of that change
//    (sim/replicas.h ComparePaired); how many jobs each run rejected and why;
//  * the key charts: with several runs a bar chart per key metric (a bar per
//    run, from zero, whiskers at each mean's 95% interval); a sweep's key
//    metrics against the parameter;
//  * a table of all metrics, every metric per run and its ratio to the first run
//    (report/report_data.h ReportMetrics), coloured by the metric's better
//    direction only between runs of the same workload whose job counts match
//    replica by replica (ComparabilityNotes); a per-profile table (JCT mean, wait
//    p95, completed / rejected per requested profile), profiles by size;
//  * online runs with a timeline: fragmentation rate, utilisation and queue
//    length over time, one line per run (DownsampleTimeline);
//  * online runs with job records: the JCT distribution (CDF) per run;
//  * runs with GPU snapshots (SimResult::snapshots): per snapshot a slot map
//    of every GPU, one chart per GPU model (each model has its own placement
//    grid, hence its own axis), instances drawn on the grid coloured by
//    profile, idle instances hatched;
//  * fill-mode runs: allocation and fragmentation against the requested load;
//  * a sweep (SetSweep): each metric against the swept parameter (y axis
//    from zero, whiskers at 95% intervals with replicas), except the metrics
//    that are the same at every value (listed in one line instead).
// Every row of a table (and every chart axis) has one unit, chosen from its
// values (report_data.h ChooseUnit).
//
// The page sets data-render-status="ok" on <html> once every chart drew (and
// hides its "drawing..." line), or "error" with the messages in
// #render-errors (window.onerror and the drawing code), and data-charts-drawn
// to the number of charts drawn; the browser test
// (tests/e2e/report_html_test.cc) reads them.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_REPORT_HTML_REPORT_H_
#define MIGSCHED_REPORT_HTML_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "report/report_data.h"
#include "sim/metrics.h"
#include "sim/sim_result.h"

namespace migsched {

struct HtmlReportOptions {
  // Points per timeline series and per JCT distribution (DownsampleTimeline,
  // ComputeJctCdf); bounds the file size of long runs. >= 2.
  int max_points = 1500;
};

class HtmlReport {
 public:
  explicit HtmlReport(std::string title, HtmlReportOptions options = {});

  // A line under the title (e.g. the workload and cluster).
  void SetSubtitle(std::string text) { subtitle_ = std::move(text); }
  // The run's settings, shown as a key/value table (objects and arrays as
  // JSON text).
  void SetSettings(const nlohmann::ordered_json& settings) { settings_ = settings; }
  // A line in the Notes section.
  void AddNote(std::string text) { notes_.push_back(std::move(text)); }

  // A simulated run with everything the simulation recorded: its metrics,
  // and when present the timeline, job records, snapshots and fill curve.
  // The first run added is the reference of the ratios. `workload` names
  // what it ran (e.g. a workload description and seed); runs whose names
  // differ are not compared ("" = the same as the others).
  void AddRun(const std::string& label, const SimResult& result, const std::string& workload = "");
  // A run known only by its metrics in MetricsToJson form (e.g. read back
  // from `migsched simulate --json`): it appears in the tables only.
  // kInvalidArgument if `metrics` is not an object with a string "mode".
  Status AddRunMetrics(const std::string& label, const nlohmann::json& metrics,
                       const std::string& workload = "");

  // Replaces the metrics of run `i` (0-based, in the order added), e.g. by
  // the means over replicas (sim/replicas.h ReplicaMeans) with their "ci95"
  // half-widths and their "paired" changes against the first run
  // (PairedToJson), which the tables then show: "mean ±half" cells and
  // paired ratios coloured only when significant. Its charts stay those of
  // the result added. kInvalidArgument as AddRunMetrics, or for no run `i`.
  Status ReplaceRunMetrics(size_t i, const nlohmann::json& metrics);

  // Why a run's ratios to the first run mean nothing, one sentence per such
  // run: another workload (both named and different), or job counts that do
  // not match the first run's (sim/replicas.h ComparableToReference, the rule
  // `compare`'s terminal and JSON use too, over JobCountsOfJson: each
  // replica's "replica_results", else the metrics themselves): another number
  // of replicas, or in some replica another number of jobs in the workload,
  // completed or (online) rejected; its times and rates are then over other
  // jobs. The sentence gives the means when they differ, else the first
  // replica that does. Those ratios are shown uncoloured, the run is left out
  // of the summary's lines, and the page says why. Empty when every run
  // compares.
  std::vector<std::string> ComparabilityNotes() const;

  // A sweep of `param` (e.g. "threshold"): one chart per metric against the
  // parameter values, in the order given (the page sorts nothing). `label`
  // names what was swept (e.g. the policy). kInvalidArgument if `points` is
  // empty or a value is not finite. Replaces an earlier sweep.
  Status SetSweep(const std::string& param, const std::string& label,
                  const std::vector<std::pair<double, Metrics>>& points);
  // Same with metrics in MetricsToJson form (a saved sweep output).
  Status SetSweepJson(const std::string& param, const std::string& label,
                      const std::vector<std::pair<double, nlohmann::json>>& points);

  // Number of runs added.
  int runs() const { return static_cast<int>(runs_.size()); }
  // The charts the page draws, in page order: each an object with "kind"
  // ("bars", "timeline", "cdf", "fill", "slotmap", "sweep"), "section" and
  // "title" (a slot map also "run", "snapshot" and "model"; bars and sweep
  // charts "metric" and "unit", bars their "labels", "values" and "halves").
  nlohmann::json Charts() const;
  // Everything embedded in the page as JSON (runs' series, charts, sweep).
  nlohmann::json Data() const;
  // The page. Needs at least one run or a sweep (else a page saying so).
  // Writing it to a file is the caller's (the CLI: cli/output_files.h).
  std::string Render() const;

 private:
  struct Run {
    std::string label;
    std::string workload;       // "" = not named
    nlohmann::json metrics;     // MetricsToJson form
    nlohmann::json timeline;    // {"time_s": [...], ...} or null
    nlohmann::json jct_cdf;     // {"jct_s": [...], "fraction": [...]} or null
    nlohmann::json snapshots;   // array
    nlohmann::json fill_curve;  // array or null
  };
  // Why run `i` does not compare with run 0, or "".
  std::string Incomparable(size_t i) const;
  // The key metrics (report_data.h KeyMetrics) of `mode` that some of `objs`
  // have; jobs rejected only when some were.
  static std::vector<ReportMetric> KeyRows(const std::vector<const nlohmann::json*>& objs,
                                           const std::string& mode);
  // The page's opening lines: per key metric the best run (or swept value),
  // by how much against the next best, and the paired 95% interval of that
  // change when both have replicas of the same seeds.
  std::string KeyFindingsHtml() const;
  std::string RejectionsHtml() const;
  std::string SummaryTableHtml() const;
  std::string ProfileTableHtml() const;
  std::string SweepTableHtml() const;
  std::string SettingsHtml() const;

  std::string title_;
  HtmlReportOptions options_;
  std::string subtitle_;
  nlohmann::ordered_json settings_;
  std::vector<std::string> notes_;
  std::vector<Run> runs_;
  std::string sweep_param_, sweep_label_;
  std::vector<std::pair<double, nlohmann::json>> sweep_;
};

}  // namespace migsched

#endif  // MIGSCHED_REPORT_HTML_REPORT_H_
