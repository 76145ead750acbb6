#include "report/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace migsched {

TimelineSeries DownsampleTimeline(const std::vector<TimelineSample>& timeline, int max_points) {
  TimelineSeries out;
  const size_t n = timeline.size();
  if (n == 0) return out;
  auto push = [&out](double t, double frag, double util, double queue) {
    out.time_s.push_back(t);
    out.frag_rate.push_back(frag);
    out.utilization.push_back(util);
    out.queue_length.push_back(queue);
  };
  max_points = std::max(max_points, 2);
  const double first = timeline.front().time_s, last = timeline.back().time_s;
  if (n <= static_cast<size_t>(max_points) || !(last > first)) {
    for (const TimelineSample& s : timeline) {
      push(s.time_s, s.frag_rate, s.utilization, static_cast<double>(s.queue_length));
    }
    return out;
  }
  const int windows = max_points - 1;
  out.window_s = (last - first) / windows;
  size_t j = 0;  // the sample holding at the start of the current window
  for (int k = 0; k < windows; ++k) {
    const double a = first + k * out.window_s;
    const double b = k == windows - 1 ? last : first + (k + 1) * out.window_s;
    while (j + 1 < n && timeline[j + 1].time_s <= a) ++j;
    double frag = 0, util = 0, queue = 0;
    for (size_t m = j; m + 1 < n && timeline[m].time_s < b; ++m) {
      const double lo = std::max(timeline[m].time_s, a);
      const double hi = std::min(timeline[m + 1].time_s, b);
      if (hi <= lo) continue;
      frag += timeline[m].frag_rate * (hi - lo);
      util += timeline[m].utilization * (hi - lo);
      queue += static_cast<double>(timeline[m].queue_length) * (hi - lo);
    }
    const double width = b - a;
    push(a, frag / width, util / width, queue / width);
  }
  const TimelineSample& s = timeline.back();
  push(s.time_s, s.frag_rate, s.utilization, static_cast<double>(s.queue_length));
  return out;
}

JctCdf ComputeJctCdf(const std::vector<JobRecord>& jobs, int max_points) {
  JctCdf out;
  std::vector<double> jct;
  for (const JobRecord& r : jobs) {
    if (r.outcome == JobOutcome::kCompleted && std::isfinite(r.jct_s)) jct.push_back(r.jct_s);
  }
  std::sort(jct.begin(), jct.end());
  const size_t n = jct.size();
  out.jobs = static_cast<int64_t>(n);
  max_points = std::max(max_points, 2);
  const size_t m = static_cast<size_t>(max_points);
  if (n <= m) {
    for (size_t i = 0; i < n; ++i) {
      out.jct_s.push_back(jct[i]);
      out.fraction.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
    }
    return out;
  }
  for (size_t k = 1; k <= m; ++k) {
    const size_t idx = (k * n + m - 1) / m - 1;  // ceil(k n / m) - 1
    out.jct_s.push_back(jct[idx]);
    out.fraction.push_back(static_cast<double>(k) / static_cast<double>(m));
  }
  return out;
}

namespace {

using B = ReportMetric::Better;
using F = MetricFormat;

// A row of the summary table: the label and direction of sim/metrics.h
// MetricInfos(), so that the report calls a figure what the terminal calls it.
ReportMetric Row(const char* key, MetricFormat format) {
  const MetricInfo* info = FindMetricInfo(key);
  if (info == nullptr) return ReportMetric{key, key, format, B::kNeither, false};
  const B better = info->better == MetricBetter::kLower    ? B::kLower
                   : info->better == MetricBetter::kHigher ? B::kHigher
                                                           : B::kNeither;
  return ReportMetric{key, std::string(info->label), format, better};
}

const std::vector<ReportMetric>& OnlineMetrics() {
  static const std::vector<ReportMetric> k = {
      Row("jobs_total", F::kCount),
      Row("jobs_completed", F::kCount),
      Row("rejected", F::kCount),
      Row("accepted", F::kCount),
      Row("jobs_timeout", F::kCount),
      Row("rejected_slice_hours", F::kDecimal),
      Row("makespan_s", F::kDuration),
      Row("arrival_window_s", F::kDuration),
      Row("jct_mean_s", F::kDuration),
      Row("jct_p50_s", F::kDuration),
      Row("jct_p95_s", F::kDuration),
      Row("jct_p99_s", F::kDuration),
      Row("wait_mean_s", F::kDuration),
      Row("wait_p95_s", F::kDuration),
      Row("duration_mean_s", F::kDuration),
      Row("slowdown_mean", F::kRate),
      Row("slowdown_p95", F::kRate),
      Row("bounded_slowdown_mean", F::kRate),
      Row("bounded_slowdown_p95", F::kRate),
      Row("utilization", F::kPercent),
      Row("utilization_arrival_window", F::kPercent),
      Row("frag_mean", F::kRate),
      Row("frag_peak", F::kRate),
      Row("stranded_capacity_mean", F::kPercent),
      Row("stranded_share_mean", F::kPercent),
      Row("jobs_per_day", F::kDecimal),
      Row("jobs_per_day_arrival_window", F::kDecimal),
      Row("reconfigurations", F::kCount),
      Row("creates", F::kCount),
      Row("destroys", F::kCount),
      Row("reuses", F::kCount),
      Row("setup_reconfigurations", F::kCount),
      Row("reconfigurations_saved_by_retention", F::kCount),
      Row("idle_expirations", F::kCount),
      Row("joint_starts", F::kCount),
      Row("evacuations", F::kCount),
      Row("limit_power", F::kDecimal),
      Row("migrations", F::kCount),
      Row("migrations_intra", F::kCount),
      Row("migrations_inter", F::kCount),
      Row("migrations_per_accepted_job", F::kRate),
      Row("migration_bytes_gb", F::kDecimal),
      Row("migration_pause_s", F::kDuration),
      Row("migration_work_lost_s", F::kDuration),
      Row("energy_kwh", F::kDecimal),
      Row("energy_kwh_arrival_window", F::kDecimal),
      Row("jobs_per_kwh", F::kDecimal),
      Row("decisions", F::kCount),
      Row("decision_us_mean", F::kDecimal),
      Row("decision_us_p99", F::kDecimal),
  };
  return k;
}

const std::vector<ReportMetric>& FillMetrics() {
  static const std::vector<ReportMetric> k = {
      Row("jobs_total", F::kCount),
      Row("fill_placed", F::kCount),
      Row("rejected", F::kCount),
      Row("fill_allocation", F::kPercent),
      Row("fill_acceptance", F::kPercent),
      Row("fill_frag", F::kRate),
      Row("reconfigurations", F::kCount),
      Row("creates", F::kCount),
      Row("destroys", F::kCount),
      Row("reuses", F::kCount),
      Row("setup_reconfigurations", F::kCount),
      Row("decisions", F::kCount),
      Row("decision_us_mean", F::kDecimal),
      Row("decision_us_p99", F::kDecimal),
  };
  return k;
}

}  // namespace

const std::vector<ReportMetric>& ReportMetrics(std::string_view mode) {
  return mode == "fill" ? FillMetrics() : OnlineMetrics();
}

ReportMetric FindReportMetric(const std::string& key) {
  for (const auto* list : {&OnlineMetrics(), &FillMetrics()}) {
    for (const ReportMetric& m : *list) {
      if (m.key == key) return m;
    }
  }
  return ReportMetric{key, key, F::kDecimal, B::kNeither, false};
}

const std::vector<std::string>& KeyMetrics(std::string_view mode) {
  static const std::vector<std::string> online = {"jct_mean_s", "makespan_s", "utilization",
                                                  "frag_mean", "rejected"};
  static const std::vector<std::string> fill = {"fill_allocation", "fill_acceptance", "fill_frag"};
  return mode == "fill" ? fill : online;
}

DisplayUnit ChooseUnit(MetricFormat format, const std::vector<double>& values) {
  double largest = 0, smallest = INFINITY;
  bool fraction = false;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const double a = std::fabs(v);
    largest = std::max(largest, a);
    if (a > 0) smallest = std::min(smallest, a);
    fraction = fraction || v != std::floor(v);
  }
  DisplayUnit u;
  switch (format) {
    case F::kDuration:
      if (largest < 120) {
        u = {1, 1, " s", "s"};
      } else if (largest < 7200) {
        u = {60, 1, " min", "min"};
      } else if (largest < 3 * 86400) {
        u = {3600, 2, " h", "h"};
      } else {
        u = {86400, 2, " d", "d"};
      }
      break;
    case F::kPercent:
      return {0.01, 1, "%", "%"};
    case F::kRate:
      return {1, 3, "", ""};
    case F::kCount:
      return {1, fraction ? 1 : 0, "", ""};
    case F::kDecimal:
      u = {1, 1, "", ""};
      break;
  }
  // At least 3 significant digits for the smallest non-zero value, at most 3 decimals.
  if (std::isfinite(smallest)) {
    const int wanted = 2 - static_cast<int>(std::floor(std::log10(smallest / u.divisor)));
    u.decimals = std::clamp(wanted, u.decimals, std::max(u.decimals, 3));
  }
  return u;
}

std::string FormatInUnit(double v, double half, const DisplayUnit& u) {
  if (!std::isfinite(v)) return "-";
  const std::string value = fmt::format("{:.{}f}", v / u.divisor, u.decimals);
  if (!std::isfinite(half)) return value + u.suffix;
  const std::string h = fmt::format("{:.{}f}", half / u.divisor, u.decimals);
  // "83.4% ±0.5": the percent sign stays on the value; other units follow the interval.
  if (u.suffix == "%") return value + "% ±" + h;
  return value + " ±" + h + u.suffix;
}

std::string FormatSeconds(double s) { return FormatMetric(s, F::kDuration); }

std::string FormatMetric(double v, MetricFormat format) {
  return FormatInUnit(v, NAN, ChooseUnit(format, {v}));
}

std::string FormatMetricWithHalf(double v, double half, MetricFormat format) {
  return FormatInUnit(v, half, ChooseUnit(format, {v}));
}

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonForScript(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (char c : json_text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace migsched
