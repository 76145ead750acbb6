#include "cli/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/text.h"
#include "sim/replicas.h"

namespace migsched::cli {

std::string FormatDuration(double s) {
  if (!std::isfinite(s)) return "-";
  if (std::fabs(s) < 120) return fmt::format("{:.1f} s", s);
  if (std::fabs(s) < 7200) return fmt::format("{:.1f} min", s / 60);
  if (std::fabs(s) < 3 * 86400) return fmt::format("{:.2f} h", s / 3600);
  return fmt::format("{:.2f} d", s / 86400);
}

const std::vector<ComparedMetric>& ComparedMetrics() {
  static const std::vector<ComparedMetric> k = [] {
    const std::vector<std::pair<const char*, const char*>> columns = {
        {"makespan_s", "MAKESPAN"},
        {"jct_mean_s", "JCT MEAN"},
        {"jct_p95_s", "JCT P95"},
        {"wait_mean_s", "WAIT MEAN"},
        {"slowdown_mean", "SLOWDOWN"},
        {"bounded_slowdown_mean", "BSLD"},
        {"utilization", "UTIL"},
        {"frag_mean", "FRAG MEAN"},
        {"frag_peak", "FRAG PEAK"},
        {"rejected", "REJECTED"},
        {"rejected_slice_hours", "REJ SLICE-H"},
        {"jobs_timeout", "TIMEOUT"},
        {"migrations_per_accepted_job", "MIG/ACCEPTED"},
        {"reconfigurations", "RECONFIGS"},
        {"reuses", "REUSES"},
        {"jobs_per_day", "JOBS/DAY"},
        {"decision_us_mean", "DECIDE US"},
        {"decision_us_p99", "DECIDE P99"},
        {"energy_kwh", "KWH"},
        {"jobs_per_kwh", "JOBS/KWH"},
        {"utilization_arrival_window", "UTIL ARRIVING"},
        {"jobs_per_day_arrival_window", "JOBS/DAY ARRIVING"},
        {"energy_kwh_arrival_window", "KWH ARRIVING"},
    };
    std::vector<ComparedMetric> out;
    for (const auto& [key, header] : columns) {
      const MetricInfo* info = FindMetricInfo(key);
      out.push_back({key, header, info != nullptr ? info->better : MetricBetter::kNeither});
    }
    return out;
  }();
  return k;
}

double MetricValue(const Metrics& m, const std::string& key) {
  const nlohmann::json j = MetricsToJson(m);
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

bool RatioComparable(const std::string& key, bool runs_compare) {
  return runs_compare || key == "rejected" || key == "rejected_slice_hours";
}

namespace {

std::string Cell(const std::string& key, double v) {
  if (!std::isfinite(v)) return "-";
  if (key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0) return FormatDuration(v);
  if (key.rfind("utilization", 0) == 0 || key == "fill_allocation" || key == "fill_acceptance") {
    return fmt::format("{:.1f}%", 100 * v);
  }
  if (key == "frag_mean" || key == "frag_peak" || key == "fill_frag") {
    return fmt::format("{:.3f}", v);
  }
  if (key.rfind("energy_kwh", 0) == 0 || key == "migrations_per_accepted_job") {
    return fmt::format("{:.2f}", v);
  }
  if (key == "rejected_slice_hours") return fmt::format("{:.1f}", v);
  if (key == "jobs_per_kwh") return fmt::format("{:.1f}", v);
  if (key.rfind("jobs_per_day", 0) == 0 || key.rfind("decision_us", 0) == 0) {
    return fmt::format("{:.1f}", v);
  }
  if (key.find("slowdown") != std::string::npos) return fmt::format("{:.2f}", v);
  return fmt::format("{:.0f}", v);
}

}  // namespace

std::string MetricCell(const std::string& key, double v) { return Cell(key, v); }

double GapClosed(const Metrics& m, const Metrics& reference) {
  const double gap = reference.jct_mean_s - reference.duration_mean_s;
  return gap > 0 ? (reference.jct_mean_s - m.jct_mean_s) / gap : NAN;
}

std::string GapClosedCell(double share) {
  return std::isfinite(share) ? fmt::format("{:+.0f}%", 100 * share) : "-";
}

void PrintRejections(const Metrics& m, const std::string& indent, std::ostream& out) {
  std::vector<std::pair<std::string, int64_t>> reasons(m.rejected_reasons.begin(),
                                                       m.rejected_reasons.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kMaxLines = 5;
  int64_t more_jobs = 0;
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (i < kMaxLines || reasons.size() == kMaxLines + 1) {
      out << fmt::format("{}{:>7} {}\n", indent, reasons[i].second, reasons[i].first);
    } else {
      more_jobs += reasons[i].second;
    }
  }
  if (more_jobs > 0) {
    out << fmt::format("{}{:>7} for {} other reasons (each job's reason: --jobs-csv)\n", indent,
                       more_jobs, reasons.size() - kMaxLines);
  }
}

void PrintSummary(const Metrics& m, std::ostream& out) {
  if (m.mode != "fill" && m.rejected > 0) {
    out << fmt::format("  REJECTED          {} of {} jobs never ran; why:\n", m.rejected,
                       m.jobs_total);
    PrintRejections(m, "                  ", out);
  }
  out << fmt::format("  policy            {}\n", m.policy);
  out << fmt::format("  cluster           {}\n", m.cluster);
  if (m.mode == "fill") {
    out << fmt::format("  arrivals          {} ({} placed, {} found no room)\n", m.jobs_total,
                       m.fill_placed, m.rejected);
    out << fmt::format("  allocation        {:.1f}% of compute slices busy at the end\n",
                       100 * m.fill_allocation);
    out << fmt::format("  acceptance        {:.1f}% of arrivals placed\n", 100 * m.fill_acceptance);
    out << fmt::format("  fragmentation     {:.3f} (fragmentation rate at the end)\n", m.fill_frag);
    out << fmt::format("  reconfigurations  {} (creates {}, destroys {}), reuses {}\n",
                       m.reconfigurations, m.creates, m.destroys, m.reuses);
    out << fmt::format(
        "  decision time     mean {:.1f} us, p99 {:.1f} us ({} decisions, wall-clock)\n",
        m.decision_us_mean, m.decision_us_p99, m.decisions);
    return;
  }
  out << fmt::format("  jobs              {} completed, {} rejected (of {})\n", m.jobs_completed,
                     m.rejected, m.jobs_total);
  if (m.jobs_timeout > 0) {
    out << fmt::format(
        "  timeouts          {} jobs ended at their time limit (not in the completed jobs nor "
        "the times below)\n",
        m.jobs_timeout);
  }
  out << fmt::format(
      "  admission         {} accepted, {:.1f} slice-hours rejected (compute slices x "
      "duration), {:.2f} migrations per accepted job\n",
      m.accepted, m.rejected_slice_hours, m.migrations_per_accepted_job);
  out << fmt::format("  makespan          {}\n", FormatDuration(m.makespan_s));
  // The times are over completed jobs: with none, there are none (not zeros).
  const bool timed = m.jobs_completed > 0;
  auto t = [&](double s) { return timed ? FormatDuration(s) : std::string("-"); };
  auto x = [&](double v) { return timed ? fmt::format("{:.2f}", v) : std::string("-"); };
  out << fmt::format("  JCT               mean {}, p50 {}, p95 {}, p99 {}\n", t(m.jct_mean_s),
                     t(m.jct_p50_s), t(m.jct_p95_s), t(m.jct_p99_s));
  out << fmt::format("  wait              mean {}, p95 {}\n", t(m.wait_mean_s), t(m.wait_p95_s));
  out << fmt::format(
      "  slowdown          mean {}, p95 {} (JCT / duration); bounded (10 s) "
      "mean {}, p95 {}\n",
      x(m.slowdown_mean), x(m.slowdown_p95), x(m.bounded_slowdown_mean), x(m.bounded_slowdown_p95));
  out << fmt::format("  JCT floor         {} (mean duration: the mean JCT if no job waited)\n",
                     t(m.duration_mean_s));
  out << fmt::format("  utilization       {:.1f}% (busy compute slices, time mean)\n",
                     100 * m.utilization);
  out << fmt::format(
      "  fragmentation     rate mean {:.3f}, peak {:.3f} (mean FragCost over GPUs)\n", m.frag_mean,
      m.frag_peak);
  out << fmt::format("  stranded capacity {:.1f}% of all compute slices (time mean)\n",
                     100 * m.stranded_capacity_mean);
  out << fmt::format("  stranded share    {:.1f}% of the free compute slices (time mean)\n",
                     100 * m.stranded_share_mean);
  out << fmt::format("  reconfigurations  {} (creates {}, destroys {}), reuses {}, setup {}\n",
                     m.reconfigurations, m.creates, m.destroys, m.reuses, m.setup_reconfigurations);
  out << fmt::format("  migrations        {}\n", m.migrations);
  if (m.limit_power != 1) {
    out << fmt::format(
        "  limit power       {:.2f} at the end (§5: the jobs of one request ordered by wait / "
        "limit^{:.2f})\n",
        m.limit_power, m.limit_power);
  }
  out << fmt::format("  jobs per day      {:.1f}\n", m.jobs_per_day);
  if (m.arrival_window_s > 0) {
    const std::string kwh = m.energy_kwh_arrival_window
                                ? fmt::format(", {:.2f} kWh", *m.energy_kwh_arrival_window)
                                : std::string();
    out << fmt::format(
        "  while arriving    {:.1f}% utilisation, {:.1f} jobs per day{} over the arrival window "
        "({}, first to last arrival)\n",
        100 * m.utilization_arrival_window, m.jobs_per_day_arrival_window, kwh,
        FormatDuration(m.arrival_window_s));
  }
  if (m.energy_kwh) {
    const std::string per_kwh = m.jobs_per_kwh ? fmt::format("{:.1f}", *m.jobs_per_kwh) : "-";
    out << fmt::format(
        "  energy            {:.2f} kWh, {} jobs per kWh (estimate: catalog power)\n",
        *m.energy_kwh, per_kwh);
  }
  out << fmt::format(
      "  decision time     mean {:.1f} us, p99 {:.1f} us ({} decisions, wall-clock)\n",
      m.decision_us_mean, m.decision_us_p99, m.decisions);
  if (!m.per_profile.empty()) {
    out << fmt::format(
        "\n  {:<20} {:>7} {:>9} {:>8} {:>8} {:>11} {:>7} {:>11} {:>11} {:>11} {:>11} {:>8} "
        "{:>6}\n",
        "REQUEST", "JOBS", "COMPLETED", "REJECTED", "REJ RATE", "REJ SLICE-H", "TIMEOUT",
        "JCT MEAN", "JCT P95", "WAIT MEAN", "WAIT P95", "SLOWDOWN", "BSLD");
    for (const std::string& key : ProfileKeysBySize(m.per_profile)) {
      const ProfileMetrics& p = m.per_profile.at(key);
      // Times are over completed jobs: "-" when none completed.
      const bool none = p.completed == 0;
      auto time = [none](double v) { return FormatDuration(none ? NAN : v); };
      auto ratio = [none](double v) { return none ? std::string("-") : fmt::format("{:.2f}", v); };
      out << fmt::format(
          "  {:<20} {:>7} {:>9} {:>8} {:>8} {:>11} {:>7} {:>11} {:>11} {:>11} {:>11} {:>8} "
          "{:>6}\n",
          key, p.jobs, p.completed, p.rejected, fmt::format("{:.1f}%", 100 * p.rejection_rate),
          fmt::format("{:.1f}", p.rejected_slice_hours), p.timeout, time(p.jct_mean_s),
          time(p.jct_p95_s), time(p.wait_mean_s), time(p.wait_p95_s), ratio(p.slowdown_mean),
          ratio(p.bounded_slowdown_mean));
    }
  }
}

void PrintComparison(const std::vector<Metrics>& runs, std::ostream& out) {
  if (runs.empty()) return;
  const auto& cols = ComparedMetrics();
  int64_t most_completed = 0;
  for (const Metrics& m : runs) most_completed = std::max(most_completed, m.jobs_completed);
  auto fewer = [&](const Metrics& m) { return m.jobs_completed < most_completed; };
  std::vector<std::string> header = {"POLICY"};
  for (const auto& c : cols) header.push_back(c.header);
  std::vector<std::vector<std::string>> rows, ratios;
  bool any_hidden = false;
  for (const Metrics& m : runs) {
    const std::string name = m.policy + (fewer(m) ? "*" : "");
    std::vector<std::string> row = {name}, ratio = {name};
    const bool compares = ComparableToReference({m}, {runs.front()});
    ratio.push_back(
        RatioComparable("jct_mean_s", compares) ? GapClosedCell(GapClosed(m, runs.front())) : "-");
    for (const auto& c : cols) {
      const double v = MetricValue(m, c.key);
      const double ref = MetricValue(runs.front(), c.key);
      // The times and slowdowns are over completed jobs: with none, there are none (not zeros),
      // as in simulate's summary.
      const std::string_view key = c.key;
      const bool over_completed = key == "jct_mean_s" || key == "jct_p95_s" ||
                                  key == "wait_mean_s" || key == "slowdown_mean" ||
                                  key == "bounded_slowdown_mean";
      row.push_back(over_completed && m.jobs_completed == 0 ? std::string("-") : Cell(c.key, v));
      if (!RatioComparable(c.key, compares)) {
        ratio.push_back("-");
        any_hidden = true;
      } else {
        ratio.push_back(ref != 0 && std::isfinite(ref) && std::isfinite(v)
                            ? fmt::format("{:.2f}", v / ref)
                            : (v == ref ? "1.00" : "-"));
      }
    }
    rows.push_back(row);
    ratios.push_back(ratio);
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& r : rows) width[i] = std::max(width[i], r[i].size());
  }
  auto print = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << (i == 0 ? fmt::format("{:<{}}", r[i], width[i])
                     : fmt::format("  {:>{}}", r[i], width[i]));
    }
    out << "\n";
  };
  print(header);
  for (const auto& r : rows) print(r);
  out << fmt::format("Zero-wait JCT floor (mean duration, the mean JCT if no job waited): {}\n",
                     FormatDuration(runs.front().duration_mean_s));
  for (const Metrics& m : runs) {
    if (!fewer(m)) continue;
    out << fmt::format(
        "* {} completed {} of {} jobs ({} rejected{}; the most any policy completed: {}): its "
        "times, utilisation, rates and energy are over fewer jobs, not comparable\n",
        m.policy, m.jobs_completed, m.jobs_total, m.rejected,
        m.jobs_timeout > 0 ? fmt::format(", {} ended at their time limit", m.jobs_timeout) : "",
        most_completed);
  }
  std::vector<std::string> lower, higher;
  for (const auto& c : cols) {
    if (c.better == MetricBetter::kLower) lower.push_back(c.header);
    if (c.better == MetricBetter::kHigher) higher.push_back(c.header);
  }
  out << fmt::format(
      "\nRatio to {} (below 1 is lower).\n  Lower is better: {}.\n  Higher is better: {}.\n",
      runs.front().policy, JoinAnd(lower), JoinAnd(higher));
  out << fmt::format(
      "  GAP CLOSED: the share of {}'s gap between its JCT MEAN and the floor that a policy "
      "closes (negative: widens).\n",
      runs.front().policy);
  if (any_hidden) {
    out << fmt::format(
        "Runs that completed or rejected another number of jobs than {} show no ratio ('-') "
        "except REJECTED and REJ SLICE-H.\n",
        runs.front().policy);
  }
  std::vector<std::string> ratio_header = header;
  ratio_header.insert(ratio_header.begin() + 1, "GAP CLOSED");
  std::vector<size_t> ratio_width = width;
  ratio_width.insert(ratio_width.begin() + 1, std::string("GAP CLOSED").size());
  for (const auto& r : ratios) ratio_width[1] = std::max(ratio_width[1], r[1].size());
  auto print_ratio = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << (i == 0 ? fmt::format("{:<{}}", r[i], ratio_width[i])
                     : fmt::format("  {:>{}}", r[i], ratio_width[i]));
    }
    out << "\n";
  };
  print_ratio(ratio_header);
  for (const auto& r : ratios) print_ratio(r);
}

}  // namespace migsched::cli
