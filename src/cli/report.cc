#include "cli/report.h"

#include <fmt/format.h>

#include <cmath>

namespace migsched::cli {

std::string FormatDuration(double s) {
  if (!std::isfinite(s)) return "-";
  if (std::fabs(s) < 120) return fmt::format("{:.1f} s", s);
  if (std::fabs(s) < 7200) return fmt::format("{:.1f} min", s / 60);
  if (std::fabs(s) < 3 * 86400) return fmt::format("{:.2f} h", s / 3600);
  return fmt::format("{:.2f} d", s / 86400);
}

const std::vector<ComparedMetric>& ComparedMetrics() {
  static const std::vector<ComparedMetric> k = {
      {"makespan_s", "MAKESPAN", true},        {"jct_mean_s", "JCT MEAN", true},
      {"jct_p95_s", "JCT P95", true},          {"wait_mean_s", "WAIT MEAN", true},
      {"utilization", "UTIL", false},          {"frag_mean", "FRAG MEAN", true},
      {"frag_peak", "FRAG PEAK", true},        {"rejected", "REJECTED", true},
      {"reconfigurations", "RECONFIGS", true}, {"reuses", "REUSES", false},
      {"jobs_per_day", "JOBS/DAY", false},     {"decision_us_mean", "DECIDE US", true},
      {"decision_us_p99", "DECIDE P99", true}, {"energy_kwh", "KWH", true},
      {"jobs_per_kwh", "JOBS/KWH", false},
  };
  return k;
}

double MetricValue(const Metrics& m, const std::string& key) {
  const nlohmann::json j = MetricsToJson(m);
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

namespace {

std::string Cell(const std::string& key, double v) {
  if (!std::isfinite(v)) return "-";
  if (key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0) return FormatDuration(v);
  if (key == "utilization" || key == "fill_allocation" || key == "fill_acceptance") {
    return fmt::format("{:.1f}%", 100 * v);
  }
  if (key == "frag_mean" || key == "frag_peak" || key == "fill_frag") {
    return fmt::format("{:.3f}", v);
  }
  if (key == "energy_kwh") return fmt::format("{:.2f}", v);
  if (key == "jobs_per_kwh") return fmt::format("{:.1f}", v);
  if (key == "jobs_per_day" || key.rfind("decision_us", 0) == 0) return fmt::format("{:.1f}", v);
  return fmt::format("{:.0f}", v);
}

}  // namespace

std::string MetricCell(const std::string& key, double v) { return Cell(key, v); }

void PrintSummary(const Metrics& m, std::ostream& out) {
  out << fmt::format("  policy            {}\n", m.policy);
  out << fmt::format("  cluster           {}\n", m.cluster);
  if (m.mode == "fill") {
    out << fmt::format("  arrivals          {} ({} placed, {} found no room)\n", m.jobs_total,
                       m.fill_placed, m.rejected);
    out << fmt::format("  allocation        {:.1f}% of compute slices busy at the end\n",
                       100 * m.fill_allocation);
    out << fmt::format("  acceptance        {:.1f}% of arrivals placed\n", 100 * m.fill_acceptance);
    out << fmt::format("  fragmentation     {:.3f} (mean FragCost at the end)\n", m.fill_frag);
    out << fmt::format("  reconfigurations  {} (creates {}, destroys {}), reuses {}\n",
                       m.reconfigurations, m.creates, m.destroys, m.reuses);
    out << fmt::format(
        "  decision time     mean {:.1f} us, p99 {:.1f} us ({} decisions, wall-clock)\n",
        m.decision_us_mean, m.decision_us_p99, m.decisions);
    return;
  }
  out << fmt::format("  jobs              {} completed, {} rejected (of {})\n", m.jobs_completed,
                     m.rejected, m.jobs_total);
  out << fmt::format("  makespan          {}\n", FormatDuration(m.makespan_s));
  out << fmt::format("  JCT               mean {}, p50 {}, p95 {}, p99 {}\n",
                     FormatDuration(m.jct_mean_s), FormatDuration(m.jct_p50_s),
                     FormatDuration(m.jct_p95_s), FormatDuration(m.jct_p99_s));
  out << fmt::format("  wait              mean {}, p95 {}\n", FormatDuration(m.wait_mean_s),
                     FormatDuration(m.wait_p95_s));
  out << fmt::format("  utilization       {:.1f}%\n", 100 * m.utilization);
  out << fmt::format("  fragmentation     mean {:.3f}, peak {:.3f}; stranded capacity {:.1f}%\n",
                     m.frag_mean, m.frag_peak, 100 * m.stranded_mean);
  out << fmt::format("  reconfigurations  {} (creates {}, destroys {}), reuses {}, setup {}\n",
                     m.reconfigurations, m.creates, m.destroys, m.reuses, m.setup_reconfigurations);
  out << fmt::format("  migrations        {}\n", m.migrations);
  out << fmt::format("  jobs per day      {:.1f}\n", m.jobs_per_day);
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
    out << fmt::format("\n  {:<20} {:>7} {:>9} {:>8} {:>11} {:>11}\n", "REQUEST", "JOBS",
                       "COMPLETED", "REJECTED", "JCT MEAN", "WAIT P95");
    for (const auto& [key, p] : m.per_profile) {
      out << fmt::format("  {:<20} {:>7} {:>9} {:>8} {:>11} {:>11}\n", key, p.jobs, p.completed,
                         p.rejected, FormatDuration(p.jct_mean_s), FormatDuration(p.wait_p95_s));
    }
  }
}

void PrintComparison(const std::vector<Metrics>& runs, std::ostream& out) {
  if (runs.empty()) return;
  const auto& cols = ComparedMetrics();
  std::vector<std::string> header = {"POLICY"};
  for (const auto& c : cols) header.push_back(c.header);
  std::vector<std::vector<std::string>> rows, ratios;
  for (const Metrics& m : runs) {
    std::vector<std::string> row = {m.policy}, ratio = {m.policy};
    for (const auto& c : cols) {
      const double v = MetricValue(m, c.key);
      const double ref = MetricValue(runs.front(), c.key);
      row.push_back(Cell(c.key, v));
      ratio.push_back(ref != 0 && std::isfinite(ref) && std::isfinite(v)
                          ? fmt::format("{:.2f}", v / ref)
                          : (v == ref ? "1.00" : "-"));
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
  out << fmt::format(
      "\nRatio to {} (below 1 is lower; lower is better except UTIL, REUSES, JOBS/DAY):\n",
      runs.front().policy);
  print(header);
  for (const auto& r : ratios) print(r);
}

}  // namespace migsched::cli
