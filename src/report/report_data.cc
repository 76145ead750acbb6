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

const std::vector<ReportMetric>& OnlineMetrics() {
  static const std::vector<ReportMetric> k = {
      {"jobs_total", "jobs in the workload", F::kCount, B::kNeither},
      {"jobs_completed", "jobs completed", F::kCount, B::kHigher},
      {"rejected", "jobs rejected", F::kCount, B::kLower},
      {"makespan_s", "makespan", F::kDuration, B::kLower},
      {"jct_mean_s", "JCT mean", F::kDuration, B::kLower},
      {"jct_p50_s", "JCT p50", F::kDuration, B::kLower},
      {"jct_p95_s", "JCT p95", F::kDuration, B::kLower},
      {"jct_p99_s", "JCT p99", F::kDuration, B::kLower},
      {"wait_mean_s", "wait mean", F::kDuration, B::kLower},
      {"wait_p95_s", "wait p95", F::kDuration, B::kLower},
      {"utilization", "utilisation", F::kPercent, B::kHigher},
      {"frag_mean", "fragmentation mean", F::kRate, B::kLower},
      {"frag_peak", "fragmentation peak", F::kRate, B::kLower},
      {"stranded_mean", "stranded share (time mean)", F::kPercent, B::kLower},
      {"stranded_capacity_mean", "stranded capacity", F::kPercent, B::kLower},
      {"jobs_per_day", "jobs per day", F::kDecimal, B::kHigher},
      {"reconfigurations", "reconfigurations", F::kCount, B::kLower},
      {"creates", "creates", F::kCount, B::kLower},
      {"destroys", "destroys", F::kCount, B::kLower},
      {"reuses", "reuses", F::kCount, B::kHigher},
      {"setup_reconfigurations", "setup reconfigurations", F::kCount, B::kNeither},
      {"reconfigurations_saved_by_retention", "reconfigurations saved by idle retention", F::kCount,
       B::kHigher},
      {"idle_expirations", "idle instances expired (--idle-ttl)", F::kCount, B::kNeither},
      {"migrations", "migrations", F::kCount, B::kLower},
      {"migrations_intra", "migrations within a GPU", F::kCount, B::kLower},
      {"migrations_inter", "migrations between GPUs", F::kCount, B::kLower},
      {"migration_bytes_gb", "migration state copied (GB)", F::kDecimal, B::kLower},
      {"migration_pause_s", "migration pause (total)", F::kDuration, B::kLower},
      {"migration_work_lost_s", "work lost by restarts", F::kDuration, B::kLower},
      {"energy_kwh", "energy (kWh)", F::kDecimal, B::kLower},
      {"jobs_per_kwh", "jobs per kWh", F::kDecimal, B::kHigher},
      {"decisions", "placement attempts", F::kCount, B::kNeither},
      {"decision_us_mean", "decision time mean (µs)", F::kDecimal, B::kLower},
      {"decision_us_p99", "decision time p99 (µs)", F::kDecimal, B::kLower},
  };
  return k;
}

const std::vector<ReportMetric>& FillMetrics() {
  static const std::vector<ReportMetric> k = {
      {"jobs_total", "arrivals", F::kCount, B::kNeither},
      {"fill_placed", "placed", F::kCount, B::kHigher},
      {"rejected", "found no room", F::kCount, B::kLower},
      {"fill_allocation", "allocation at the end", F::kPercent, B::kHigher},
      {"fill_acceptance", "acceptance", F::kPercent, B::kHigher},
      {"fill_frag", "fragmentation at the end", F::kRate, B::kLower},
      {"reconfigurations", "reconfigurations", F::kCount, B::kLower},
      {"creates", "creates", F::kCount, B::kLower},
      {"destroys", "destroys", F::kCount, B::kLower},
      {"reuses", "reuses", F::kCount, B::kHigher},
      {"setup_reconfigurations", "setup reconfigurations", F::kCount, B::kNeither},
      {"decisions", "placement attempts", F::kCount, B::kNeither},
      {"decision_us_mean", "decision time mean (µs)", F::kDecimal, B::kLower},
      {"decision_us_p99", "decision time p99 (µs)", F::kDecimal, B::kLower},
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

std::string FormatSeconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (std::fabs(s) < 120) return fmt::format("{:.1f} s", s);
  if (std::fabs(s) < 7200) return fmt::format("{:.1f} min", s / 60);
  if (std::fabs(s) < 3 * 86400) return fmt::format("{:.2f} h", s / 3600);
  return fmt::format("{:.2f} d", s / 86400);
}

std::string FormatMetric(double v, MetricFormat format) {
  if (!std::isfinite(v)) return "-";
  switch (format) {
    case F::kDuration:
      return FormatSeconds(v);
    case F::kPercent:
      return fmt::format("{:.1f}%", 100 * v);
    case F::kRate:
      return fmt::format("{:.3f}", v);
    case F::kCount:
      return fmt::format("{:.0f}", v);
    case F::kDecimal:
      break;
  }
  return fmt::format("{:.1f}", v);
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
