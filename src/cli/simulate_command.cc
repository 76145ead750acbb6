// `migsched simulate`: one policy on one cluster and workload; a readable
// summary on stdout, and optionally every metric as JSON, per-job and
// timeline CSVs, and the workload itself as a trace CSV.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "cli/report.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "io/trace_reader.h"
#include "sched/full_policy.h"
#include "sched/policy.h"
#include "sim/sim_writers.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

struct SimulateFlags {
  SimFlags sim;
  std::string policy = "frag-aware";
  std::string json;
  std::string jobs_csv;
  std::string timeline_csv;
  std::string export_workload;
  ReportFlags report;
};

// "first-fit | lb | ... | static; aliases: frag-aware (= lb+frag) ...", from the policy registry.
std::string PolicyHelp() {
  std::string names;
  for (const std::string& n : PolicyNames()) names += (names.empty() ? "" : " | ") + n;
  std::string aliases;
  for (const auto& [alias, policy] : PolicyAliases()) {
    aliases += fmt::format("{}{} (= {})", aliases.empty() ? "" : ", ", alias, policy);
  }
  return fmt::format("{}; aliases: {} (docs/policies.md; `full` defaults to --metric {})", names,
                     aliases, kFullDefaultMetric);
}

int Run(const SimulateFlags& f, Context& ctx) {
  auto fail = [&](const std::string& msg) {
    *ctx.err << "migsched simulate: " << msg << "\n";
    return 1;
  };
  if (!f.report.snapshot_at.empty() && f.report.path.empty()) {
    return fail("--snapshot-at sets the slot maps of --report; give --report FILE.html too");
  }
  // Before any work: every output can be written.
  Status outputs = CheckOutputFiles({{"--json", f.json},
                                     {"--jobs-csv", f.jobs_csv},
                                     {"--timeline-csv", f.timeline_csv},
                                     {"--export-workload", f.export_workload},
                                     {"--report", f.report.path}});
  if (!outputs.ok()) return fail(outputs.message());
  RunShape shape;
  shape.record_jobs = !f.jobs_csv.empty() || !f.report.path.empty();
  shape.record_timeline = !f.timeline_csv.empty() || !f.report.path.empty();
  auto setup = BuildSimSetup(f.sim, ctx, shape);
  if (!setup.ok()) return fail(setup.status().message());
  setup->scheduler = setup->SchedulerFor(f.policy);  // `full`'s own defaults (docs/policies.md)
  if (!f.export_workload.empty()) {
    Status st = WriteOutputFile(f.export_workload,
                                [&](std::ostream& o) { return WriteTraceCsv(setup->jobs, o); });
    if (!st.ok()) {
      *ctx.err << "migsched simulate: --export-workload: " << st.message() << "\n";
      return 1;
    }
  }
  ProgressPrinter progress(ctx);
  const bool fill = setup->sim.mode == SimMode::kFill;
  setup->sim.progress = [&](const SimProgress& p) { progress.Report(f.policy, p, fill); };
  setup->sim.record_jobs = shape.record_jobs;
  setup->sim.record_timeline = shape.record_timeline;
  if (!f.report.path.empty()) PrepareForReport(f.report, setup->jobs, &setup->sim);
  auto result = RunSimulation(setup->gpus, setup->jobs, f.policy, setup->scheduler, setup->sim);
  if (!result.ok()) {
    *ctx.err << "migsched simulate: " << result.status().message() << "\n";
    return 1;
  }
  std::ostream& out = *ctx.out;
  out << fmt::format("migsched simulate: {}\n", setup->workload_label);
  for (const std::string& n : setup->notes) out << "  note: " << n << "\n";
  PrintSummary(result->metrics, out);

  Status st;
  if (!f.json.empty()) {
    st = WriteOutputFile(f.json, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["policy"] = f.policy;
      j["settings"] = setup->ToJson(f.sim);
      const nlohmann::json metrics = MetricsToJson(result->metrics);  // named: items() refers to it
      for (const auto& [k, v] : metrics.items()) j[k] = v;
      if (fill) {
        j["fill_curve"] = nlohmann::ordered_json::array();
        for (const FillPoint& p : result->fill_curve) {
          j["fill_curve"].push_back({{"target_share", p.target_share},
                                     {"requested_share", p.requested_share},
                                     {"allocation", p.allocation},
                                     {"acceptance", p.acceptance},
                                     {"frag_rate", p.frag_rate},
                                     {"arrived", p.arrived},
                                     {"placed", p.placed}});
        }
      }
      o << j.dump(2) << "\n";
      return Status();
    });
    if (!st.ok()) *ctx.err << "migsched simulate: --json: " << st.message() << "\n";
  }
  if (st.ok() && !f.jobs_csv.empty()) {
    st = WriteOutputFile(f.jobs_csv, [&](std::ostream& o) { return WriteJobsCsv(*result, o); });
    if (!st.ok()) *ctx.err << "migsched simulate: --jobs-csv: " << st.message() << "\n";
  }
  if (st.ok() && !f.timeline_csv.empty()) {
    st = WriteOutputFile(f.timeline_csv,
                         [&](std::ostream& o) { return WriteTimelineCsv(*result, o); });
    if (!st.ok()) *ctx.err << "migsched simulate: --timeline-csv: " << st.message() << "\n";
  }
  if (st.ok() && !f.report.path.empty()) {
    const HtmlReport report = MakeSimReport(fmt::format("migsched simulate: {}", f.policy), *setup,
                                            f.sim, {f.policy}, {&*result});
    st = WriteOutputFile(f.report.path, [&](std::ostream& o) {
      o << report.Render();
      return Status();
    });
    if (!st.ok()) *ctx.err << "migsched simulate: --report: " << st.message() << "\n";
  }
  return st.ok() ? 0 : 1;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Simulate one placement policy on a cluster and workload and print its metrics (spec §9)");
  AddSimFlags(cmd, &f->sim);
  cmd->add_option("--policy", f->policy, PolicyHelp())->capture_default_str();
  cmd->add_option("--json", f->json, "Write every metric (and the settings) as JSON to FILE");
  cmd->add_option("--jobs-csv", f->jobs_csv,
                  "Write one row per job to FILE (docs/formats/outputs.md)");
  cmd->add_option("--timeline-csv", f->timeline_csv,
                  "Write the cluster state after every event time to FILE");
  cmd->add_option("--export-workload", f->export_workload,
                  "Write the workload as simulated (arrivals regenerated) as a trace CSV to FILE");
  AddReportFlags(cmd, &f->report);
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
