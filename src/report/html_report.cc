#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/assets.h"
#include "report/report_data.h"
#include "sim/metrics.h"
#include "sim/replicas.h"

namespace migsched {
namespace {

// A number from a metrics object; NaN when absent or not a number (NaN is
// written as null by MetricsToJson's JSON).
double Number(const nlohmann::json& obj, const std::string& key) {
  if (!obj.is_object()) return NAN;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return NAN;
  return it->get<double>();
}

std::string ModeOf(const nlohmann::json& metrics) {
  auto it = metrics.find("mode");
  return it != metrics.end() && it->is_string() ? it->get<std::string>() : "online";
}

// Keys never shown as metric rows: text, tables of their own, and the swept
// value of a saved sweep's result.
bool IsDescriptiveKey(const std::string& key) {
  return key == "mode" || key == "policy" || key == "cluster" || key == "per_profile" ||
         key == "value" || key == "replicas" || key == "seeds" || key == "ci95" ||
         key == "paired" || key == "replica_results" || key == "gap_closed" ||
         key == "gap_closed_ci95";
}

// The half-width of `key`'s 95% interval in a replicated run's metrics
// ("ci95"), NaN when absent; `profile` non-empty: of per_profile[profile].
double HalfWidth(const nlohmann::json& metrics, const std::string& key,
                 const std::string& profile = "") {
  auto it = metrics.find("ci95");
  if (it == metrics.end() || !it->is_object()) return NAN;
  if (profile.empty()) return Number(*it, key);
  auto pp = it->find("per_profile");
  if (pp == it->end() || !pp->is_object() || !pp->contains(profile)) return NAN;
  return Number((*pp)[profile], key);
}

// Each replica's value of `key` ("replica_results", cli/replica_output.h
// ReplicaRunJson), NaN where a replica lacks it; empty for a run without
// replicas.
std::vector<double> ReplicaValues(const nlohmann::json& metrics, const std::string& key) {
  std::vector<double> out;
  auto it = metrics.find("replica_results");
  if (it == metrics.end() || !it->is_array()) return out;
  for (const auto& r : *it) out.push_back(Number(r, key));
  return out;
}

// The paired change of run `a` against run `b` replica by replica (sim/replicas.h
// ComparePaired), when both have replicas of the same seeds; n = 0 otherwise.
PairedChange PairedBetween(const nlohmann::json& a, const nlohmann::json& b,
                           const std::string& key) {
  const std::vector<double> va = ReplicaValues(a, key), vb = ReplicaValues(b, key);
  if (va.size() < 2 || va.size() != vb.size() || !a.contains("seeds") ||
      a["seeds"] != b.value("seeds", nlohmann::json())) {
    return PairedChange{};
  }
  return ComparePaired(va, vb);
}

// The replicas a run's metrics are over (1 without "replicas").
int ReplicasOf(const nlohmann::json& metrics) {
  const double n = Number(metrics, "replicas");
  return std::isfinite(n) && n > 1 ? static_cast<int>(n) : 1;
}

// A change in percent, signed: "-12.0%", "+3.4%".
std::string Percent(double change) { return fmt::format("{:+.1f}%", 100 * change); }

// How the best of a set of runs (or sweep points) compares with the next
// best on `m`: "-12.0% against NAME (2.10 h); 95% interval ..." (lower is
// better) and how sure it is: the paired 95% interval of the ratio when both
// have replicas, else a plain "one run each". `best_name` / `next_name` are
// already HTML.
std::string Margin(const ReportMetric& m, const nlohmann::json& best, const nlohmann::json& next,
                   const std::string& next_name, const DisplayUnit& unit) {
  const double vb = Number(best, m.key), vn = Number(next, m.key);
  std::string h;
  if (vn != 0) {
    h = fmt::format("{} against {} ({})", Percent(vb / vn - 1), next_name,
                    FormatInUnit(vn, HalfWidth(next, m.key), unit));
  } else {
    h = fmt::format("{} against {}", FormatInUnit(vn, HalfWidth(next, m.key), unit), next_name);
  }
  const PairedChange p = PairedBetween(best, next, m.key);
  if (p.n >= 2 && std::isfinite(p.ratio) && std::isfinite(p.ratio_half)) {
    const std::string interval = fmt::format("{} to {}", Percent(p.ratio - p.ratio_half - 1),
                                             Percent(p.ratio + p.ratio_half - 1));
    h += p.significant ? fmt::format("; 95% interval {} over {} paired replicas", interval, p.n)
                       : fmt::format(
                             "; <span class=\"unsure\">not significant</span>: the 95% interval "
                             "{} over {} paired replicas includes no change",
                             interval, p.n);
  } else if (ReplicaValues(best, m.key).size() < 2 && ReplicaValues(next, m.key).size() < 2) {
    h += "; one run each, no interval";
  } else {
    h += "; no paired interval (not replicas of the same seeds)";
  }
  return h;
}

// A paired ratio with its interval, coloured only when significant.
std::string PairedRatioCell(const PairedChange& p, ReportMetric::Better better, bool comparable) {
  const double ratio = p.ratio, half = p.ratio_half;
  if (!std::isfinite(ratio)) return "";
  const bool significant = p.significant;
  std::string cls = comparable ? "same" : "incomparable";
  if (comparable && significant && better != ReportMetric::Better::kNeither) {
    cls = ((ratio < 1) == (better == ReportMetric::Better::kLower)) ? "better" : "worse";
  }
  return fmt::format(" <span class=\"ratio {}\">×{:.3f}{}{}</span>", cls, ratio,
                     std::isfinite(half) ? fmt::format(" ±{:.3f}", half) : "",
                     significant ? "*" : "");
}

// The rows of the summary table (and the sweep's charts): the known metrics
// of `mode`, then every other numeric key of any of `objects` that neither
// mode knows, in the order first seen.
std::vector<ReportMetric> MetricRows(const std::string& mode,
                                     const std::vector<const nlohmann::json*>& objects) {
  std::vector<ReportMetric> rows = ReportMetrics(mode);
  std::set<std::string> seen;
  for (const auto* list : {&ReportMetrics("online"), &ReportMetrics("fill")}) {
    for (const ReportMetric& m : *list) seen.insert(m.key);
  }
  for (const nlohmann::json* obj : objects) {
    if (!obj->is_object()) continue;
    for (const auto& [key, value] : obj->items()) {
      if (IsDescriptiveKey(key) || !value.is_number() || !seen.insert(key).second) continue;
      rows.push_back(FindReportMetric(key));
    }
  }
  return rows;
}

nlohmann::json TimelineJson(const TimelineSeries& s) {
  return {{"time_s", s.time_s},
          {"frag_rate", s.frag_rate},
          {"utilization", s.utilization},
          {"queue_length", s.queue_length},
          {"window_s", s.window_s}};
}

nlohmann::json SnapshotJson(const ClusterSnapshot& snap) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuSnapshot& g : snap.gpus) {
    nlohmann::json instances = nlohmann::json::array();
    for (const SnapshotInstance& in : g.instances) {
      instances.push_back({{"profile", in.profile},
                           {"start", in.start},
                           {"size", in.size},
                           {"busy", in.job != kNoJob},
                           {"job", in.job != kNoJob ? nlohmann::json(in.job) : nlohmann::json()}});
    }
    gpus.push_back({{"model", g.model},
                    {"placement_units", g.placement_units},
                    {"fragcost", g.fragcost},
                    {"instances", std::move(instances)}});
  }
  return {{"time_s", snap.time_s},
          {"peak_fragmentation", snap.peak_fragmentation},
          {"frag_rate", snap.frag_rate},
          {"utilization", snap.utilization},
          {"gpus", std::move(gpus)}};
}

// The ratio v / ref as a table cell; coloured by `better` only when the runs
// compare (HtmlReport::ComparabilityNotes).
std::string RatioCell(double v, double ref, ReportMetric::Better better, bool comparable) {
  if (!std::isfinite(v) || !std::isfinite(ref) || ref == 0) return "";
  const double ratio = v / ref;
  std::string cls = comparable ? "same" : "incomparable";
  // Coloured only when the shown ratio is not 1.000: a difference too small
  // to print is no difference to a reader.
  const bool shown_one = fmt::format("{:.3f}", ratio) == "1.000";
  if (comparable && !shown_one && better != ReportMetric::Better::kNeither) {
    const bool lower = ratio < 1;
    cls = (lower == (better == ReportMetric::Better::kLower)) ? "better" : "worse";
  }
  return fmt::format(" <span class=\"ratio {}\">×{:.3f}</span>", cls, ratio);
}

// The page's name of a format (report.js fmtValue).
const char* FormatName(MetricFormat f) {
  switch (f) {
    case MetricFormat::kDuration:
      return "duration";
    case MetricFormat::kPercent:
      return "percent";
    case MetricFormat::kRate:
      return "rate";
    case MetricFormat::kCount:
      return "count";
    case MetricFormat::kDecimal:
      break;
  }
  return "decimal";
}

// The metrics of a sweep whose value is the same number at every point.
std::set<std::string> ConstantMetrics(const std::vector<std::pair<double, nlohmann::json>>& sweep,
                                      const std::vector<ReportMetric>& rows) {
  std::set<std::string> out;
  for (const ReportMetric& m : rows) {
    bool constant = sweep.size() > 1;
    for (const auto& p : sweep) {
      const double v = Number(p.second, m.key), first = Number(sweep.front().second, m.key);
      constant = constant && std::isfinite(v) && v == first;
    }
    if (constant) out.insert(m.key);
  }
  return out;
}

// Distinct GPU models of a snapshot, in GPU order.
std::vector<std::string> ModelsOf(const nlohmann::json& snapshot) {
  std::vector<std::string> models;
  for (const auto& g : snapshot["gpus"]) {
    const std::string m = g["model"].get<std::string>();
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  return models;
}

constexpr std::string_view kSourceMapMarker = "\n//# sourceMappingURL=";

}  // namespace

HtmlReport::HtmlReport(std::string title, HtmlReportOptions options)
    : title_(std::move(title)), options_(options) {}

void HtmlReport::AddRun(const std::string& label, const SimResult& result,
                        const std::string& workload) {
  Run run;
  run.label = label;
  run.workload = workload;
  run.metrics = MetricsToJson(result.metrics);
  if (!result.timeline.empty()) {
    run.timeline = TimelineJson(DownsampleTimeline(result.timeline, options_.max_points));
  }
  const JctCdf cdf = ComputeJctCdf(result.jobs, options_.max_points);
  if (cdf.jobs > 0) {
    run.jct_cdf = {{"jct_s", cdf.jct_s}, {"fraction", cdf.fraction}, {"jobs", cdf.jobs}};
  }
  run.snapshots = nlohmann::json::array();
  for (const ClusterSnapshot& s : result.snapshots) run.snapshots.push_back(SnapshotJson(s));
  if (!result.fill_curve.empty()) {
    run.fill_curve = nlohmann::json::array();
    for (const FillPoint& p : result.fill_curve) {
      run.fill_curve.push_back({{"requested_share", p.requested_share},
                                {"allocation", p.allocation},
                                {"acceptance", p.acceptance},
                                {"frag_rate", p.frag_rate}});
    }
  }
  runs_.push_back(std::move(run));
}

namespace {

// What a saved output's metrics must hold to be shown: a mode the simulator has, every metric
// it names a number (or null: not measured), a per-profile table an object. A trial's hand-made
// "jct_mean_s": "abc" was drawn as a run (regression: trial_report_from_malformed_metrics).
Status CheckSavedMetrics(const std::string& label, const nlohmann::json& metrics) {
  if (!metrics.is_object() || !metrics.contains("mode") || !metrics["mode"].is_string()) {
    return InvalidArgumentError(
        fmt::format("run '{}': metrics must be a JSON object with a \"mode\" string", label));
  }
  const std::string mode = metrics["mode"].get<std::string>();
  if (mode != "online" && mode != "fill") {
    return InvalidArgumentError(
        fmt::format("run '{}': \"mode\" must be \"online\" or \"fill\", got \"{}\"", label, mode));
  }
  for (const auto& [key, value] : metrics.items()) {
    if (FindMetricInfo(key) != nullptr && !value.is_number() && !value.is_null()) {
      return InvalidArgumentError(fmt::format("run '{}': \"{}\" must be a number, got {}", label,
                                              key, value.dump().substr(0, 40)));
    }
  }
  if (metrics.contains("per_profile") && !metrics["per_profile"].is_object()) {
    return InvalidArgumentError(
        fmt::format("run '{}': \"per_profile\" must be an object of profiles", label));
  }
  return Status();
}

}  // namespace

Status HtmlReport::AddRunMetrics(const std::string& label, const nlohmann::json& metrics,
                                 const std::string& workload) {
  RETURN_IF_ERROR(CheckSavedMetrics(label, metrics));
  Run run;
  run.label = label;
  run.workload = workload;
  run.metrics = metrics;
  run.snapshots = nlohmann::json::array();
  runs_.push_back(std::move(run));
  return Status();
}

Status HtmlReport::ReplaceRunMetrics(size_t i, const nlohmann::json& metrics) {
  if (i >= runs_.size()) return InvalidArgumentError(fmt::format("no run {}", i));
  RETURN_IF_ERROR(CheckSavedMetrics(runs_[i].label, metrics));
  runs_[i].metrics = metrics;
  return Status();
}

std::string HtmlReport::Incomparable(size_t i) const {
  if (i == 0 || i >= runs_.size()) return "";
  const Run& ref = runs_.front();
  const Run& r = runs_[i];
  if (!r.workload.empty() && !ref.workload.empty() && r.workload != ref.workload) {
    return fmt::format("{} ran another workload ({}) than {} ({})", r.label, r.workload, ref.label,
                       ref.workload);
  }
  // The one rule (sim/replicas.h ComparableToReference), replica by replica.
  const JobCountsMismatch m =
      CompareJobCounts(JobCountsOfJson(r.metrics), JobCountsOfJson(ref.metrics));
  if (m.comparable()) return "";
  // The counts said: the means when they differ (a mean over replicas has a
  // fraction: 59.7 against 60, not "60, 60"), else the replica that differs.
  const double mean = Number(r.metrics, m.key), ref_mean = Number(ref.metrics, m.key);
  const bool means_differ = std::isfinite(mean) && std::isfinite(ref_mean) && mean != ref_mean;
  const double value = means_differ ? mean : m.value;
  const double ref_value = means_differ ? ref_mean : m.reference;
  const std::string where = means_differ || m.replica == JobCountsMismatch::kMeans
                                ? ""
                                : fmt::format(" in replica {}", m.replica);
  if (m.key == "jobs_total") {
    return fmt::format("{} had {} jobs in its workload{}, {} {}", r.label,
                       FormatMetric(value, MetricFormat::kCount), where, ref.label,
                       FormatMetric(ref_value, MetricFormat::kCount));
  }
  return fmt::format("{} {} {} jobs{}, {} {}: its times, rates and energy are over other jobs",
                     r.label, m.key == "jobs_completed" ? "completed" : "rejected",
                     FormatMetric(value, MetricFormat::kCount), where, ref.label,
                     FormatMetric(ref_value, MetricFormat::kCount));
}

std::vector<std::string> HtmlReport::ComparabilityNotes() const {
  std::vector<std::string> notes;
  for (size_t i = 1; i < runs_.size(); ++i) {
    if (std::string why = Incomparable(i); !why.empty()) notes.push_back(std::move(why));
  }
  return notes;
}

Status HtmlReport::SetSweep(const std::string& param, const std::string& label,
                            const std::vector<std::pair<double, Metrics>>& points) {
  std::vector<std::pair<double, nlohmann::json>> json;
  for (const auto& [v, m] : points) json.emplace_back(v, MetricsToJson(m));
  return SetSweepJson(param, label, json);
}

Status HtmlReport::SetSweepJson(const std::string& param, const std::string& label,
                                const std::vector<std::pair<double, nlohmann::json>>& points) {
  if (points.empty()) return InvalidArgumentError(fmt::format("sweep of {}: no points", param));
  for (const auto& [v, m] : points) {
    if (!std::isfinite(v)) {
      return InvalidArgumentError(fmt::format("sweep of {}: value {} is not finite", param, v));
    }
    if (!m.is_object()) {
      return InvalidArgumentError(
          fmt::format("sweep of {}: the metrics at {} are not a JSON object", param, v));
    }
  }
  sweep_param_ = param;
  sweep_label_ = label;
  sweep_ = points;
  return Status();
}

std::vector<ReportMetric> HtmlReport::KeyRows(const std::vector<const nlohmann::json*>& objs,
                                              const std::string& mode) {
  std::vector<ReportMetric> rows;
  for (const std::string& key : KeyMetrics(mode)) {
    bool any = false, nonzero = false;
    for (const nlohmann::json* o : objs) {
      const double v = Number(*o, key);
      any = any || std::isfinite(v);
      nonzero = nonzero || (std::isfinite(v) && v != 0);
    }
    // Jobs rejected only when some were: else it says nothing.
    if (!any || (key == "rejected" && !nonzero)) continue;
    rows.push_back(FindReportMetric(key));
  }
  return rows;
}

nlohmann::json HtmlReport::Charts() const {
  nlohmann::json key = nlohmann::json::array(), charts = nlohmann::json::array();
  bool timeline = false, cdf = false, fill = false;
  for (const Run& r : runs_) {
    timeline = timeline || !r.timeline.is_null();
    cdf = cdf || !r.jct_cdf.is_null();
    fill = fill || !r.fill_curve.is_null();
  }
  const auto unit_json = [](const DisplayUnit& u) {
    return nlohmann::json{
        {"divisor", u.divisor}, {"decimals", u.decimals}, {"suffix", u.suffix}, {"name", u.name}};
  };
  if (runs_.size() > 1) {
    // The key metrics as bars, one per run, with each mean's 95% interval.
    std::vector<const nlohmann::json*> objs;
    for (const Run& r : runs_) objs.push_back(&r.metrics);
    for (const ReportMetric& m : KeyRows(objs, ModeOf(runs_.front().metrics))) {
      nlohmann::json labels = nlohmann::json::array(), values = nlohmann::json::array(),
                     halves = nlohmann::json::array();
      std::vector<double> raw;
      for (size_t i = 0; i < runs_.size(); ++i) {
        const double v = Number(runs_[i].metrics, m.key), half = HalfWidth(runs_[i].metrics, m.key);
        labels.push_back(runs_[i].label + (Incomparable(i).empty() ? "" : " *"));
        values.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json());
        halves.push_back(std::isfinite(half) ? nlohmann::json(half) : nlohmann::json());
        raw.push_back(v);
      }
      key.push_back({{"kind", "bars"},
                     {"section", "key"},
                     {"metric", m.key},
                     {"title", m.label},
                     {"better", m.better == ReportMetric::Better::kLower ? "lower" : "higher"},
                     {"labels", labels},
                     {"values", values},
                     {"halves", halves},
                     {"replicas", ReplicasOf(runs_.front().metrics)},
                     {"unit", unit_json(ChooseUnit(m.format, raw))}});
    }
  }
  if (timeline) {
    charts.push_back({{"kind", "timeline"},
                      {"section", "time"},
                      {"field", "frag_rate"},
                      {"title", "Fragmentation rate (mean FragCost over GPUs)"}});
    charts.push_back({{"kind", "timeline"},
                      {"section", "time"},
                      {"field", "utilization"},
                      {"title", "Utilisation (busy / all compute slices)"}});
    charts.push_back({{"kind", "timeline"},
                      {"section", "time"},
                      {"field", "queue_length"},
                      {"title", "Queue length (jobs waiting)"}});
  }
  if (cdf) {
    charts.push_back({{"kind", "cdf"},
                      {"section", "jct"},
                      {"title", "JCT distribution (share of completed jobs with JCT ≤ x)"}});
  }
  if (fill) {
    charts.push_back({{"kind", "fill"},
                      {"section", "fill"},
                      {"field", "allocation"},
                      {"title", "Allocation (busy / all compute slices) against requested load"}});
    charts.push_back({{"kind", "fill"},
                      {"section", "fill"},
                      {"field", "frag_rate"},
                      {"title", "Fragmentation rate against requested load"}});
  }
  for (size_t r = 0; r < runs_.size(); ++r) {
    for (size_t k = 0; k < runs_[r].snapshots.size(); ++k) {
      // One chart per GPU model: each model has its own placement grid.
      for (const std::string& model : ModelsOf(runs_[r].snapshots[k])) {
        charts.push_back({{"kind", "slotmap"},
                          {"section", "slots"},
                          {"group", r},
                          {"group_title", runs_[r].label},
                          {"run", r},
                          {"snapshot", k},
                          {"model", model},
                          {"row", fmt::format("{}-{}", r, k)},
                          {"title", runs_[r].label}});
      }
    }
  }
  if (!sweep_.empty()) {
    std::vector<const nlohmann::json*> objs;
    for (const auto& p : sweep_) objs.push_back(&p.second);
    const std::string mode = ModeOf(sweep_.front().second);
    const std::vector<ReportMetric> rows = MetricRows(mode, objs);
    const std::set<std::string> constant = ConstantMetrics(sweep_, rows);
    const std::vector<std::string>& key_metrics = KeyMetrics(mode);
    std::map<std::string, nlohmann::json> key_sweep;
    for (const ReportMetric& m : rows) {
      if (m.known && m.better == ReportMetric::Better::kNeither) continue;
      if (constant.count(m.key)) continue;  // a flat line says nothing: listed in a line instead
      std::vector<double> values;
      bool any = false;
      for (const auto& p : sweep_) {
        any = any || p.second.contains(m.key);
        values.push_back(Number(p.second, m.key));
      }
      if (!any) continue;
      // The key metrics open the page; the others are in the sweep's section.
      const bool is_key =
          std::find(key_metrics.begin(), key_metrics.end(), m.key) != key_metrics.end();
      nlohmann::json spec = {{"kind", "sweep"},
                             {"section", is_key ? "key" : "sweep"},
                             {"metric", m.key},
                             {"format", FormatName(m.format)},
                             {"unit", unit_json(ChooseUnit(m.format, values))},
                             {"title", m.label}};
      if (is_key) {
        key_sweep[m.key] = std::move(spec);
      } else {
        charts.push_back(std::move(spec));
      }
    }
    // The key charts in the order of KeyMetrics, as the summary's lines.
    for (const std::string& k : key_metrics) {
      if (auto it = key_sweep.find(k); it != key_sweep.end()) key.push_back(std::move(it->second));
    }
  }
  for (auto& c : charts) key.push_back(std::move(c));
  return key;
}

nlohmann::json HtmlReport::Data() const {
  nlohmann::json runs = nlohmann::json::array();
  for (const Run& r : runs_) {
    runs.push_back({{"label", r.label},
                    {"mode", ModeOf(r.metrics)},
                    {"timeline", r.timeline},
                    {"jct_cdf", r.jct_cdf},
                    {"snapshots", r.snapshots},
                    {"fill_curve", r.fill_curve}});
  }
  nlohmann::json sweep;
  if (!sweep_.empty()) {
    nlohmann::json values = nlohmann::json::array(), metrics = nlohmann::json::array();
    for (const auto& [v, m] : sweep_) {
      values.push_back(v);
      metrics.push_back(m);
    }
    sweep = {
        {"param", sweep_param_}, {"label", sweep_label_}, {"values", values}, {"metrics", metrics}};
  }
  return {{"title", title_}, {"runs", runs}, {"sweep", sweep}, {"charts", Charts()}};
}

std::string HtmlReport::KeyFindingsHtml() const {
  std::string items;
  bool any_single = false;   // a verdict from one run each (no interval)
  bool any_verdict = false;  // a line ranking runs or values (else one run's figures)
  // The best and the next best of `names`/`objs` on each key metric.
  const auto verdicts = [&](const std::vector<std::string>& names,
                            const std::vector<const nlohmann::json*>& objs,
                            const std::string& what) {
    for (const ReportMetric& m : KeyRows(objs, ModeOf(*objs.front()))) {
      std::vector<size_t> order;
      for (size_t i = 0; i < objs.size(); ++i) {
        if (std::isfinite(Number(*objs[i], m.key))) order.push_back(i);
      }
      if (order.size() < 2) continue;
      const bool lower = m.better == ReportMetric::Better::kLower;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const double va = Number(*objs[a], m.key), vb = Number(*objs[b], m.key);
        return lower ? va < vb : va > vb;
      });
      const nlohmann::json &best = *objs[order[0]], &next = *objs[order[1]];
      const double vb = Number(best, m.key), vn = Number(next, m.key);
      const DisplayUnit unit = ChooseUnit(m.format, {vb, vn});
      std::string line = fmt::format("<li><b>{}</b> ({} is better): ", EscapeHtml(m.label),
                                     lower ? "lower" : "higher");
      // A change that prints as 0.0% is no win either.
      const bool close = vn != 0 && std::fabs(vb / vn - 1) < 0.0005;
      if (vb == vn || close) {
        line += fmt::format("{} and {} tie at {}{}", names[order[0]], names[order[1]],
                            FormatInUnit(vb, NAN, unit), vb == vn ? "" : " (under 0.05% apart)");
      } else {
        line += fmt::format("{}<b>{}</b> {}, {}", what, names[order[0]],
                            FormatInUnit(vb, HalfWidth(best, m.key), unit),
                            Margin(m, best, next, names[order[1]], unit));
        any_single = any_single || PairedBetween(best, next, m.key).n < 2;
      }
      items += line + ".</li>\n";
      any_verdict = true;
    }
  };
  if (runs_.size() > 1) {
    // The runs that compare with the first; the others are named in a note.
    std::vector<std::string> names;
    std::vector<const nlohmann::json*> objs;
    for (size_t i = 0; i < runs_.size(); ++i) {
      if (!Incomparable(i).empty()) continue;
      names.push_back(EscapeHtml(runs_[i].label));
      objs.push_back(&runs_[i].metrics);
    }
    if (objs.size() > 1) verdicts(names, objs, "");
  } else if (runs_.size() == 1) {
    // One run: its key figures in a line.
    const nlohmann::json& m = runs_.front().metrics;
    std::string figures;
    for (const ReportMetric& row : KeyRows({&m}, ModeOf(m))) {
      figures +=
          fmt::format("{}{} {}", figures.empty() ? "" : ", ", EscapeHtml(row.label),
                      FormatMetricWithHalf(Number(m, row.key), HalfWidth(m, row.key), row.format));
    }
    if (!figures.empty()) {
      items += fmt::format("<li><b>{}</b>: {}.</li>\n", EscapeHtml(runs_.front().label), figures);
    }
  }
  if (!sweep_.empty() && sweep_.size() > 1) {
    std::vector<std::string> names;
    std::vector<const nlohmann::json*> objs;
    for (const auto& [v, metrics] : sweep_) {
      names.push_back(fmt::format("{} = {:g}", EscapeHtml(sweep_param_), v));
      objs.push_back(&metrics);
    }
    verdicts(names, objs, "best at ");
  }
  if (items.empty()) return "";
  std::string h = "<ul class=\"findings\" id=\"key-findings\">\n" + items + "</ul>\n";
  if (!any_verdict) {
    // One run: nothing to rank; say what would give intervals when it has none.
    const bool replicated = !runs_.empty() && ReplicasOf(runs_.front().metrics) > 1;
    return h + (replicated ? "<p class=\"hint\">Means over the replicas ± the half-width of "
                             "their 95% interval.</p>\n"
                           : "<p class=\"hint\">One run, so no interval: "
                             "<code>--replicas N</code> (N &ge; 2) gives 95% intervals.</p>\n");
  }
  h += any_single
           ? "<p class=\"hint\">Best first, in % against the next best. One run each: nothing "
             "says whether such a difference exceeds the noise of one workload draw; "
             "<code>--replicas N</code> (N &ge; 2) gives 95% intervals.</p>\n"
           : "<p class=\"hint\">Best first, in % against the next best, with the 95% interval "
             "of that change over replicas of the same seeds (paired).</p>\n";
  return h;
}

std::string HtmlReport::RejectionsHtml() const {
  std::string items;
  for (const Run& r : runs_) {
    const double rejected = Number(r.metrics, "rejected");
    if (ModeOf(r.metrics) == "fill" || !(rejected > 0)) continue;
    std::vector<std::pair<std::string, int64_t>> reasons;
    if (auto it = r.metrics.find("rejected_reasons"); it != r.metrics.end() && it->is_object()) {
      for (const auto& [reason, jobs] : it->items()) {
        if (jobs.is_number_integer()) reasons.emplace_back(reason, jobs.get<int64_t>());
      }
    }
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string why;
    for (const auto& [reason, jobs] : reasons) {
      why += fmt::format("{}{} × {}", why.empty() ? "" : "; ", jobs, EscapeHtml(reason));
    }
    items +=
        fmt::format("<li><b>{}</b>: {:.0f} of {} jobs{}{}</li>\n", EscapeHtml(r.label), rejected,
                    FormatMetric(Number(r.metrics, "jobs_total"), MetricFormat::kCount),
                    why.empty() ? "" : ": ", why);
  }
  if (items.empty()) return "";
  return "<div class=\"rejections\" id=\"rejections\"><p>Rejected jobs (they never ran):</p>\n"
         "<ul>\n" +
         items + "</ul></div>\n";
}

std::string HtmlReport::SummaryTableHtml() const {
  if (runs_.empty()) return "";
  std::vector<const nlohmann::json*> objs;
  for (const Run& r : runs_) objs.push_back(&r.metrics);
  std::vector<bool> comparable;
  for (size_t i = 0; i < runs_.size(); ++i) comparable.push_back(Incomparable(i).empty());
  std::string h = "<table class=\"summary\" id=\"summary-table\">\n<thead><tr><th>metric</th>";
  for (size_t i = 0; i < runs_.size(); ++i) {
    h += comparable[i] ? fmt::format("<th>{}</th>", EscapeHtml(runs_[i].label))
                       : fmt::format("<th class=\"incomparable\" title=\"{}\">{} *</th>",
                                     EscapeHtml(Incomparable(i)), EscapeHtml(runs_[i].label));
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const ReportMetric& m : MetricRows(ModeOf(runs_.front().metrics), objs)) {
    h += fmt::format("<tr data-metric=\"{}\"><th>{}</th>", EscapeHtml(m.key), EscapeHtml(m.label));
    const double ref = Number(runs_.front().metrics, m.key);
    // One unit for the row (the runs' values are compared across it).
    std::vector<double> row_values;
    for (const Run& r : runs_) row_values.push_back(Number(r.metrics, m.key));
    const DisplayUnit unit = ChooseUnit(m.format, row_values);
    for (size_t i = 0; i < runs_.size(); ++i) {
      const double v = Number(runs_[i].metrics, m.key);
      // Paired with the first column replica by replica where both have replicas of the same
      // seeds, else a plain ratio. Never a file's own "paired": that is against the first run
      // of its own file, which is not the first column when several files are merged.
      std::string ratio;
      if (i > 0) {
        const PairedChange p = PairedBetween(runs_[i].metrics, runs_.front().metrics, m.key);
        ratio = p.n >= 2 ? PairedRatioCell(p, m.better, comparable[i])
                         : RatioCell(v, ref, m.better, comparable[i]);
      }
      h += fmt::format("<td>{}{}</td>", FormatInUnit(v, HalfWidth(runs_[i].metrics, m.key), unit),
                       ratio);
    }
    h += "</tr>\n";
  }
  // The share of the reference's gap to the zero-wait floor closed (cli/report.h GapClosed).
  const double ref_jct = Number(runs_.front().metrics, "jct_mean_s");
  const double floor = Number(runs_.front().metrics, "duration_mean_s");
  if (runs_.size() > 1 && std::isfinite(ref_jct) && std::isfinite(floor) && ref_jct > floor) {
    h += "<tr data-metric=\"gap_closed\"><th>share of the first run's gap between its JCT mean "
         "and the zero-wait floor closed</th>";
    for (size_t i = 0; i < runs_.size(); ++i) {
      const double jct = Number(runs_[i].metrics, "jct_mean_s");
      const double g = runs_[i].metrics.contains("gap_closed")
                           ? Number(runs_[i].metrics, "gap_closed")
                           : (ref_jct - jct) / (ref_jct - floor);
      h += fmt::format("<td>{}</td>",
                       comparable[i] && std::isfinite(g)
                           ? FormatMetricWithHalf(g, Number(runs_[i].metrics, "gap_closed_ci95"),
                                                  MetricFormat::kPercent)
                           : "-");
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
  return h;
}

std::string HtmlReport::ProfileTableHtml() const {
  std::vector<std::string> profiles;
  for (const Run& r : runs_) {
    auto it = r.metrics.find("per_profile");
    if (it == r.metrics.end() || !it->is_object()) continue;
    for (const auto& [k, v] : it->items()) {
      if (std::find(profiles.begin(), profiles.end(), k) == profiles.end()) profiles.push_back(k);
    }
  }
  if (profiles.empty()) return "";
  std::sort(profiles.begin(), profiles.end(),
            [](const std::string& a, const std::string& b) { return ProfileKeyLess(a, b); });
  // One column per run (as the summary table), a block of rows per quantity:
  // narrow enough for many runs.
  std::string h = "<table class=\"summary\" id=\"profile-table\">\n<thead><tr><th>profile</th>";
  for (const Run& r : runs_) h += fmt::format("<th>{}</th>", EscapeHtml(r.label));
  h += "</tr></thead>\n";
  const auto per_profile = [](const Run& r, const std::string& p) -> const nlohmann::json* {
    auto it = r.metrics.find("per_profile");
    if (it == r.metrics.end() || !it->is_object() || !it->contains(p)) return nullptr;
    return &(*it)[p];
  };
  struct Block {
    const char* title;
    const char* key;  // a per-profile field, with its interval when the run has replicas;
                      // nullptr: completed / rejected
    MetricFormat format;
  };
  const Block blocks[] = {
      {"JCT mean", "jct_mean_s", MetricFormat::kDuration},
      {"JCT p95", "jct_p95_s", MetricFormat::kDuration},
      {"wait mean", "wait_mean_s", MetricFormat::kDuration},
      {"wait p95", "wait_p95_s", MetricFormat::kDuration},
      {"slowdown mean (JCT / duration)", "slowdown_mean", MetricFormat::kRate},
      {"bounded slowdown mean (10 s)", "bounded_slowdown_mean", MetricFormat::kRate},
      {"completed / rejected", nullptr, MetricFormat::kCount},
  };
  for (const Block& b : blocks) {
    h += fmt::format("<tbody><tr class=\"block\"><th colspan=\"{}\">{}</th></tr>\n",
                     runs_.size() + 1, b.title);
    for (const std::string& p : profiles) {
      h += fmt::format("<tr><th>{}</th>", EscapeHtml(p));
      // One unit for the row: this profile's figure in every run.
      std::vector<double> row_values;
      for (const Run& r : runs_) {
        const nlohmann::json* pp = per_profile(r, p);
        if (pp != nullptr && b.key != nullptr) row_values.push_back(Number(*pp, b.key));
      }
      const DisplayUnit unit = ChooseUnit(b.format, row_values);
      for (const Run& r : runs_) {
        const nlohmann::json* pp = per_profile(r, p);
        std::string cell = "-";
        if (pp != nullptr && b.key != nullptr) {
          cell = FormatInUnit(Number(*pp, b.key), HalfWidth(r.metrics, b.key, p), unit);
        } else if (pp != nullptr) {
          cell =
              fmt::format("{} / {}", FormatMetric(Number(*pp, "completed"), MetricFormat::kCount),
                          FormatMetric(Number(*pp, "rejected"), MetricFormat::kCount));
        }
        h += fmt::format("<td>{}</td>", cell);
      }
      h += "</tr>\n";
    }
    h += "</tbody>\n";
  }
  h += "</table>\n";
  return h;
}

std::string HtmlReport::SweepTableHtml() const {
  if (sweep_.empty()) return "";
  std::vector<const nlohmann::json*> objs;
  for (const auto& p : sweep_) objs.push_back(&p.second);
  std::string h =
      fmt::format("<table class=\"summary\" id=\"sweep-table\">\n<thead><tr><th>{}</th>",
                  EscapeHtml(sweep_param_));
  for (const auto& p : sweep_) h += fmt::format("<th>{:g}</th>", p.first);
  h += "</tr></thead>\n<tbody>\n";
  for (const ReportMetric& m : MetricRows(ModeOf(sweep_.front().second), objs)) {
    h += fmt::format("<tr data-metric=\"{}\"><th>{}</th>", EscapeHtml(m.key), EscapeHtml(m.label));
    std::vector<double> row_values;
    for (const auto& p : sweep_) row_values.push_back(Number(p.second, m.key));
    const DisplayUnit unit = ChooseUnit(m.format, row_values);
    for (const auto& p : sweep_) {
      h += fmt::format("<td>{}</td>",
                       FormatInUnit(Number(p.second, m.key), HalfWidth(p.second, m.key), unit));
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
  std::string same;
  const std::vector<ReportMetric> rows = MetricRows(ModeOf(sweep_.front().second), objs);
  const std::set<std::string> constant = ConstantMetrics(sweep_, rows);
  for (const ReportMetric& m : rows) {
    if (!constant.count(m.key) || (m.known && m.better == ReportMetric::Better::kNeither)) continue;
    same += fmt::format("{}{} {}", same.empty() ? "" : ", ", EscapeHtml(m.label),
                        FormatMetric(Number(sweep_.front().second, m.key), m.format));
  }
  if (!same.empty()) {
    h += fmt::format(
        "<p class=\"hint\" id=\"sweep-unchanged\">The same at every value, so not charted: "
        "{}.</p>\n",
        same);
  }
  return h;
}

std::string HtmlReport::SettingsHtml() const {
  if (!settings_.is_object() || settings_.empty()) return "";
  std::string h = "<table class=\"settings\">\n";
  for (const auto& [k, v] : settings_.items()) {
    h += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", EscapeHtml(k),
                     EscapeHtml(v.is_string() ? v.get<std::string>() : v.dump()));
  }
  h += "</table>\n";
  return h;
}

std::string HtmlReport::Render() const {
  const nlohmann::json charts = Charts();
  std::set<std::string> sections;
  for (const auto& c : charts) sections.insert(c["section"].get<std::string>());

  std::string_view chart_js = report_assets::ChartJs();
  if (auto pos = chart_js.rfind(kSourceMapMarker); pos != std::string_view::npos) {
    chart_js = chart_js.substr(0, pos + 1);  // the map is not bundled: drop its URL
  }

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\" data-render-status=\"pending\">\n<head>\n";
  h += "<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += fmt::format("<meta name=\"generator\" content=\"migsched 0.1.0\">\n<title>{}</title>\n",
                   EscapeHtml(title_));
  h += "<style>\n";
  h += report_assets::ReportCss();
  h += "</style>\n";
  // Installed before anything else runs, so that an error in the charting
  // library itself is reported too.
  h += "<script>\nwindow.__reportErrors = [];\n"
       "window.addEventListener('error', function (e) {\n"
       "  window.__reportErrors.push(String(e.message) + (e.lineno ? ' (line ' + e.lineno + ')' "
       ": ''));\n"
       "  document.documentElement.setAttribute('data-render-status', 'error');\n"
       "});\n</script>\n";
  h += "<script>\n";
  h += chart_js;
  h += "</script>\n</head>\n<body>\n<header>\n";
  h += fmt::format("<h1>{}</h1>\n", EscapeHtml(title_));
  if (!subtitle_.empty()) h += fmt::format("<p class=\"subtitle\">{}</p>\n", EscapeHtml(subtitle_));
  h += fmt::format(
      "<p id=\"render-status\" class=\"status\" data-charts-expected=\"{}\">Drawing {} charts… "
      "(this needs JavaScript)</p>\n<pre id=\"render-errors\" hidden></pre>\n</header>\n<main>\n",
      charts.size(), charts.size());

  if (runs_.empty() && sweep_.empty()) {
    h += "<p>No results were given to this report.</p>\n";
  }
  struct SectionText {
    const char* id;
    const char* heading;
    const char* hint;
  };
  static const SectionText kSections[] = {
      {"time", "Over time",
       "The cluster after every event: fragmentation rate (mean FragCost over GPUs, §2), share of "
       "compute slices busy, and jobs waiting in the queue; one line per run."},
      {"jct", "Job completion time",
       "Empirical distribution of JCT (completion − arrival) over completed jobs: a curve further "
       "left and higher is better."},
      {"fill", "Fill mode",
       "FGD's fill method (§9): the cluster as jobs are placed without departing, against the "
       "requested load (requested / all compute slices)."},
      {"slots", "Slot maps",
       "Every GPU at chosen instants: one row per GPU, x = placement units; each box is a MIG "
       "instance at its placement (start, size), coloured by profile; hatched boxes are idle "
       "instances (created, no job). Hover a box for its job."},
      {"sweep", "Sweep",
       "The other metrics against the swept parameter; axes start at zero, whiskers are 95% "
       "intervals (with replicas)."},
  };
  const auto chart_section = [&](std::string_view id) {
    for (const SectionText& s : kSections) {
      if (id != s.id) continue;
      if (!sections.count(s.id) && !(id == "sweep" && !sweep_.empty())) return std::string();
      std::string out =
          fmt::format("<section id=\"sec-{}\">\n<h2>{}</h2>\n<p class=\"hint\">{}</p>\n", s.id,
                      s.heading, s.hint);
      if (id == "sweep") {
        out += fmt::format("<p class=\"hint\">Swept: <b>{}</b> ({}).</p>\n",
                           EscapeHtml(sweep_param_), EscapeHtml(sweep_label_));
        out += SweepTableHtml();
      }
      return out +
             fmt::format("<div class=\"charts charts-{}\" data-section=\"{}\"></div>\n</section>\n",
                         s.id, s.id);
    }
    return std::string();
  };

  // First what a reader wants to know: who did best, by how much, how sure
  // that is, and the key charts; the full tables and the slot maps after.
  const std::string findings = KeyFindingsHtml();
  if (!runs_.empty() || !sweep_.empty()) {
    h += "<section id=\"sec-key\">\n<h2>Summary</h2>\n";
    h += findings;
    h += RejectionsHtml();
    const std::vector<std::string> incomparable = ComparabilityNotes();
    if (!incomparable.empty()) {
      std::string why;
      for (const std::string& n : incomparable) why += (why.empty() ? "" : "; ") + EscapeHtml(n);
      h += fmt::format(
          "<p class=\"hint warning\" id=\"incomparable\">* Not compared with {} (ratios left "
          "uncoloured, not in the lines above): {}.</p>\n",
          EscapeHtml(runs_.front().label), why);
    }
    if (sections.count("key")) {
      const int replicas = runs_.empty() ? 1 : ReplicasOf(runs_.front().metrics);
      h += fmt::format("<p class=\"hint\">{}Axes start at zero{}.</p>\n",
                       runs_.size() > 1 ? "The key metrics per run. "
                                        : "The key metrics against the swept "
                                          "parameter. ",
                       replicas > 1 || (!sweep_.empty() && ReplicasOf(sweep_.front().second) > 1)
                           ? "; whiskers: the 95% interval of each mean over the replicas"
                           : "; one run each, so no interval is drawn");
      h += "<div class=\"charts charts-key\" data-section=\"key\"></div>\n";
    }
    h += "</section>\n";
  }
  for (std::string_view id : {"time", "jct", "fill"}) h += chart_section(id);
  if (!runs_.empty()) {
    h += "<section id=\"sec-summary\">\n<h2>All metrics</h2>\n";
    if (runs_.size() > 1) {
      h += fmt::format(
          "<p class=\"hint\">×r: ratio to <b>{}</b> (the first column); green is better, red is "
          "worse. One unit per row.</p>\n",
          EscapeHtml(runs_.front().label));
    }
    h += SummaryTableHtml();
    h += "</section>\n";
    const std::string profiles = ProfileTableHtml();
    if (!profiles.empty()) {
      h += "<section id=\"sec-profiles\">\n<h2>Per requested profile</h2>\n";
      h += "<p class=\"hint\">Per profile the jobs asked for (by size): mean and 95th "
           "percentile of the job completion time and of the wait, and the mean slowdowns, over "
           "the completed jobs ('-': none completed), and jobs completed / rejected.</p>\n";
      h += profiles;
      h += "</section>\n";
    }
  }
  for (std::string_view id : {"slots", "sweep"}) h += chart_section(id);
  const std::string settings = SettingsHtml();
  if (!settings.empty()) {
    h += "<section id=\"sec-settings\">\n<h2>Settings</h2>\n" + settings + "</section>\n";
  }
  if (!notes_.empty()) {
    h += "<section id=\"sec-notes\">\n<h2>Notes</h2>\n<ul>\n";
    for (const std::string& n : notes_) h += fmt::format("<li>{}</li>\n", EscapeHtml(n));
    h += "</ul>\n</section>\n";
  }
  h += "</main>\n<footer>Generated by migsched 0.1.0. Charts drawn by "
       "<a href=\"https://www.chartjs.org\">Chart.js</a> <span id=\"chartjs-version\"></span> "
       "(MIT license), embedded in this file.</footer>\n";
  h += "<script type=\"application/json\" id=\"report-data\">\n";
  h += JsonForScript(Data().dump());
  h += "\n</script>\n<script>\n";
  h += report_assets::ReportJs();
  h += "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace migsched
