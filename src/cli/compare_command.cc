// `migsched compare`: several policies on the same cluster and workload (same
// seed, so the same jobs and arrivals), one row per policy, with each
// metric's ratio to the first policy.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "cli/report.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "sched/policy.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

struct CompareFlags {
  SimFlags sim;
  std::vector<std::string> policies;
  std::string json;
  int threads = 0;
  ReportFlags report;
};

int Run(const CompareFlags& f, Context& ctx) {
  auto fail = [&](const std::string& msg) {
    *ctx.err << "migsched compare: " << msg << "\n";
    return 1;
  };
  if (!f.report.snapshot_at.empty() && f.report.path.empty()) {
    return fail("--snapshot-at sets the slot maps of --report; give --report FILE.html too");
  }
  Status outputs = CheckOutputFiles({{"--json", f.json}, {"--report", f.report.path}});
  if (!outputs.ok()) return fail(outputs.message());
  const std::vector<std::string> policies = f.policies.empty() ? PolicyNames() : f.policies;
  RunShape shape;
  shape.parallel_runs = ParallelRuns(policies.size(), f.threads);
  shape.total_runs = static_cast<int>(policies.size());
  shape.record_jobs = shape.record_timeline = !f.report.path.empty();
  auto setup = BuildSimSetup(f.sim, ctx, shape);
  if (!setup.ok()) return fail(setup.status().message());
  for (const std::string& p : policies) {
    auto made = MakePolicy(p, setup->SchedulerFor(p));
    if (!made.ok()) return fail("--policies: " + made.status().message());
  }
  const bool fill = setup->sim.mode == SimMode::kFill;
  setup->sim.record_jobs = false;
  setup->sim.record_timeline = false;
  if (!f.report.path.empty()) PrepareForReport(f.report, setup->jobs, &setup->sim);
  ProgressPrinter progress(ctx);
  std::vector<StatusOr<SimResult>> results(policies.size(),
                                           Status(StatusCode::kInternal, "not run"));
  // Policies are independent runs: up to `threads` of them at once.
  RunInParallel(policies.size(), f.threads, [&](size_t i) {
    SimOptions o = setup->sim;
    o.progress = [&, i](const SimProgress& p) { progress.Report(policies[i], p, fill); };
    results[i] =
        RunSimulation(setup->gpus, setup->jobs, policies[i], setup->SchedulerFor(policies[i]), o);
  });
  std::vector<Metrics> runs;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (!results[i].ok()) return fail(policies[i] + ": " + results[i].status().message());
    runs.push_back(results[i]->metrics);
  }
  std::ostream& out = *ctx.out;
  out << fmt::format("migsched compare: {} on {}\n", setup->workload_label, runs.front().cluster);
  for (const std::string& n : setup->notes) out << "  note: " << n << "\n";
  for (const Metrics& m : runs) {
    if (fill || m.rejected == 0) continue;
    out << fmt::format("  REJECTED by {}: {} of {} jobs never ran; why:\n", m.policy, m.rejected,
                       m.jobs_total);
    PrintRejections(m, "  ", out);
  }
  out << "\n";
  if (fill) {
    out << fmt::format("{:<16} {:>10} {:>10} {:>10} {:>9}\n", "POLICY", "ALLOCATION", "ACCEPTANCE",
                       "FRAG", "RECONFIGS");
    for (const Metrics& m : runs) {
      out << fmt::format("{:<16} {:>9.1f}% {:>9.1f}% {:>10.3f} {:>9}\n", m.policy,
                         100 * m.fill_allocation, 100 * m.fill_acceptance, m.fill_frag,
                         m.reconfigurations);
    }
  } else {
    PrintComparison(runs, out);
  }
  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["settings"] = setup->ToJson(f.sim);
    j["reference"] = policies.front();
    j["results"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
      nlohmann::ordered_json r;
      r["policy"] = policies[i];
      const nlohmann::json metrics = MetricsToJson(runs[i]);  // named: items() refers to it
      for (const auto& [k, v] : metrics.items()) r[k] = v;
      // Ratios between runs over different numbers of completed jobs mean
      // nothing (RatioComparable): null, as in the terminal's '-'.
      nlohmann::ordered_json ratio;
      for (const auto& c : ComparedMetrics()) {
        const double v = MetricValue(runs[i], c.key), ref = MetricValue(runs.front(), c.key);
        const bool comparable = RatioComparable(runs[i], runs.front(), c.key);
        ratio[c.key] = comparable && ref != 0 && std::isfinite(v) && std::isfinite(ref)
                           ? nlohmann::ordered_json(v / ref)
                           : nlohmann::ordered_json();
      }
      r["comparable_to_reference"] = RatioComparable(runs[i], runs.front(), "jobs_completed");
      r["ratio_to_reference"] = ratio;
      j["results"].push_back(r);
    }
    Status st = WriteOutputFile(f.json, [&](std::ostream& o) {
      o << j.dump(2) << "\n";
      return Status();
    });
    if (!st.ok()) return fail("--json: " + st.message());
  }
  if (!f.report.path.empty()) {
    std::vector<const SimResult*> done;
    for (const auto& r : results) done.push_back(&*r);
    const HtmlReport report = MakeSimReport(
        fmt::format("migsched compare: {}", setup->workload_label), *setup, f.sim, policies, done);
    Status st = WriteOutputFile(f.report.path, [&](std::ostream& o) {
      o << report.Render();
      return Status();
    });
    if (!st.ok()) return fail("--report: " + st.message());
  }
  return 0;
}

std::string PolicyList() {
  std::string out;
  for (const std::string& p : PolicyNames()) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

void RegisterCompareCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Run several policies on the same cluster and workload (same seed) and print one table, a "
      "row per policy, with each metric's ratio to the first policy");
  AddSimFlags(cmd, &f->sim);
  const std::string policies_help =
      "Comma-separated policies, the first is the reference (default: all, the ablation ladder "
      "first: " +
      PolicyList() + ")";
  cmd->add_option("--policies", f->policies, policies_help)->delimiter(',');
  cmd->add_option("--json", f->json, "Write every policy's metrics and ratios as JSON to FILE");
  cmd->add_option("--threads", f->threads, "Policies simulated at once (default: the cores)")
      ->check(WholeNumber(1, 4096));
  AddReportFlags(cmd, &f->report);
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
