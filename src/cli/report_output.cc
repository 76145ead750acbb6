#include "cli/report_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cli/replica_output.h"
#include "cli/report.h"
#include "cli/sim_flags.h"
#include "sim/replicas.h"

namespace migsched::cli {

void AddReportFlags(CLI::App* cmd, ReportFlags* f, bool with_path) {
  if (with_path) {
    cmd->add_option("--report", f->path,
                    "Write an HTML report (tables and charts, opens offline) to FILE "
                    "(docs/report.md)")
        ->check(OutputPath());
  }
  cmd->add_option("--snapshot-at", f->snapshot_at,
                  "Report: virtual times (s) of the GPU slot maps, comma-separated (default: "
                  "25/50/75% of the arrival span, plus the fragmentation peak)")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
              return "times are seconds >= 0, got '" + text + "'";
            }
            return "";
          },
          "SECONDS>=0"));
}

std::vector<double> DefaultSnapshotTimes(const std::vector<WorkloadJob>& jobs) {
  if (jobs.empty()) return {};
  double first = jobs.front().arrival_s, last = first;
  for (const WorkloadJob& j : jobs) {
    first = std::min(first, j.arrival_s);
    last = std::max(last, j.arrival_s);
  }
  return {first + 0.25 * (last - first), first + 0.5 * (last - first),
          first + 0.75 * (last - first)};
}

void PrepareForReport(const ReportFlags& flags, const std::vector<WorkloadJob>& jobs,
                      SimOptions* sim) {
  sim->record_jobs = true;
  sim->record_timeline = true;
  if (sim->mode != SimMode::kOnline) return;
  sim->snapshot_times = flags.snapshot_at.empty() ? DefaultSnapshotTimes(jobs) : flags.snapshot_at;
  sim->snapshot_peak_frag = true;
}

HtmlReport MakeSimReport(const std::string& title, const SimSetup& setup, const SimFlags& flags,
                         const std::vector<std::string>& labels,
                         const std::vector<const SimResult*>& results) {
  HtmlReport report(title);
  std::string cluster = results.empty() ? "" : results.front()->metrics.cluster;
  report.SetSubtitle(fmt::format("{} on {}", setup.workload_label, cluster));
  report.SetSettings(setup.ToJson(flags));
  for (const std::string& n : setup.notes) report.AddNote(n);
  for (size_t i = 0; i < results.size() && i < labels.size(); ++i) {
    report.AddRun(labels[i], *results[i]);
  }
  return report;
}

void AddReplicaStats(const std::vector<std::string>& labels,
                     const std::vector<std::vector<Metrics>>& runs,
                     const std::vector<uint64_t>& seeds, HtmlReport* report) {
  for (size_t i = 0; i < runs.size() && i < labels.size(); ++i) {
    nlohmann::json m = ReplicaRunJson(runs[i], seeds);
    if (i > 0) m["paired"] = PairedToJson(runs[i], runs.front());
    std::vector<double> closed;
    for (size_t r = 0; r < runs[i].size() && r < runs.front().size(); ++r) {
      closed.push_back(GapClosed(runs[i][r], runs.front()[r]));
    }
    const Interval g = MeanInterval(closed);
    if (std::isfinite(g.mean)) m["gap_closed"] = g.mean;
    if (std::isfinite(g.half)) m["gap_closed_ci95"] = g.half;
    (void)report->ReplaceRunMetrics(i, m);  // i < runs added: cannot fail
  }
  if (!runs.empty()) {
    report->AddNote(fmt::format(
        "Summary, key charts and tables: means over {} replicas ± the half-width of their 95% "
        "confidence interval; the tables' ratios are paired against {} (replica by replica), * "
        "and colour only where significant. Charts over time, the JCT distribution and the slot "
        "maps: replica 0 (seed {}).",
        runs.front().size(), labels.front(), seeds.empty() ? 0 : seeds.front()));
  }
}

StatusOr<HtmlReport> MakeSweepReport(const SimSetup& setup, const SimFlags& flags,
                                     const std::string& policy, const std::string& param,
                                     const std::vector<double>& values,
                                     const std::vector<std::vector<Metrics>>& metrics,
                                     const std::vector<uint64_t>& seeds) {
  HtmlReport report(fmt::format("migsched sweep: {} over {}", policy, param));
  const std::string cluster =
      metrics.empty() || metrics.front().empty() ? "" : metrics.front().front().cluster;
  report.SetSubtitle(fmt::format("{} on {}", setup.workload_label, cluster));
  report.SetSettings(setup.ToJson(flags));
  for (const std::string& n : setup.notes) report.AddNote(n);
  std::vector<std::pair<double, nlohmann::json>> points;
  for (size_t i = 0; i < values.size() && i < metrics.size(); ++i) {
    points.emplace_back(values[i], nlohmann::json(ReplicaRunJson(metrics[i], seeds)));
  }
  RETURN_IF_ERROR(report.SetSweepJson(param, policy, points));
  if (!metrics.empty() && metrics.front().size() > 1) {
    report.AddNote(
        fmt::format("Each value: means over {} replicas ± the half-width of their 95% "
                    "confidence interval; the charts show the means with whiskers at that "
                    "interval.",
                    metrics.front().size()));
  }
  return report;
}

}  // namespace migsched::cli
