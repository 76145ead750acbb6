// `migsched report`: writes the HTML report (docs/report.md) to -o FILE.html,
// either
//  * by simulating, like `compare`: the shared simulation flags, --policies
//    (default: every policy), --snapshot-at; every chart is drawn; or
//  * by re-rendering saved JSON outputs (--from FILE.json, repeatable): what
//    `simulate --json`, `compare --json` and `sweep --json` wrote. Those files
//    hold metrics, not timelines or job records, so such a report has the
//    tables (and a sweep's charts), not the charts over time, the JCT
//    distribution or slot maps.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "report/html_report.h"
#include "sched/policy.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

struct ReportCommandFlags {
  SimFlags sim;
  ReportFlags report;
  std::vector<std::string> policies;
  std::vector<std::string> from;
  std::string output;
  std::string title;
  int threads = 0;
};

StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("cannot read {}", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(fmt::format("{}: not valid JSON", path));
  return j;
}

// Adds the runs of one saved output to `report`. `suffix` tells runs of
// several files apart.
Status AddSavedOutput(const std::string& path, const nlohmann::json& j, const std::string& suffix,
                      HtmlReport* report, bool* settings_set) {
  if (!j.is_object()) return InvalidArgumentError(fmt::format("{}: not a JSON object", path));
  auto settings = [&]() {
    if (!*settings_set && j.contains("settings") && j["settings"].is_object()) {
      report->SetSettings(nlohmann::ordered_json(j["settings"]));
      *settings_set = true;
    }
  };
  auto label_of = [&](const nlohmann::json& run) {
    std::string label = run.contains("policy") && run["policy"].is_string()
                            ? run["policy"].get<std::string>()
                            : "run";
    return label + suffix;
  };
  if (j.contains("param") && j.contains("results") && j["results"].is_array()) {  // sweep
    std::vector<std::pair<double, nlohmann::json>> points;
    for (size_t i = 0; i < j["results"].size(); ++i) {
      const nlohmann::json& p = j["results"][i];
      if (!p.is_object() || !p.contains("value") || !p["value"].is_number()) {
        return InvalidArgumentError(
            fmt::format("{}: results[{}] has no numeric \"value\"", path, i));
      }
      points.emplace_back(p["value"].get<double>(), p);
    }
    const std::string param = j["param"].is_string() ? j["param"].get<std::string>() : "param";
    RETURN_IF_ERROR(report->SetSweepJson(param, label_of(j), points).WithPrefix(path));
    settings();
    return Status();
  }
  if (j.contains("results") && j["results"].is_array()) {  // compare --json
    if (j["results"].empty()) return InvalidArgumentError(fmt::format("{}: no results", path));
    for (size_t i = 0; i < j["results"].size(); ++i) {
      const nlohmann::json& r = j["results"][i];
      Status st = report->AddRunMetrics(label_of(r), r);
      if (!st.ok()) return st.WithPrefix(fmt::format("{}: results[{}]", path, i));
    }
    settings();
    return Status();
  }
  if (j.contains("mode") && j["mode"].is_string()) {  // simulate --json
    RETURN_IF_ERROR(report->AddRunMetrics(label_of(j), j).WithPrefix(path));
    settings();
    return Status();
  }
  return InvalidArgumentError(fmt::format(
      "{}: not an output of simulate --json, compare --json or sweep --json (no \"mode\" or "
      "\"results\")",
      path));
}

int RunFromFiles(const ReportCommandFlags& f, Context& ctx) {
  HtmlReport report(f.title.empty() ? "migsched report" : f.title);
  report.SetSubtitle(fmt::format("re-rendered from {} saved output(s)", f.from.size()));
  report.AddNote(
      "Re-rendered from saved JSON outputs, which hold metrics only: the charts over time, the "
      "JCT distribution and the slot maps need a simulation (migsched report --cluster ... "
      "--workload ..., or --report on simulate/compare).");
  bool settings_set = false;
  for (const std::string& path : f.from) {
    auto j = ReadJsonFile(path);
    if (!j.ok()) {
      *ctx.err << "migsched report: --from " << j.status().message() << "\n";
      return 1;
    }
    const std::string suffix =
        f.from.size() > 1 ? " (" + std::filesystem::path(path).filename().string() + ")" : "";
    Status st = AddSavedOutput(path, *j, suffix, &report, &settings_set);
    if (!st.ok()) {
      *ctx.err << "migsched report: --from " << st.message() << "\n";
      return 1;
    }
    report.AddNote("from " + path);
  }
  Status st = report.Write(f.output);
  if (!st.ok()) {
    *ctx.err << "migsched report: -o: " << st.message() << "\n";
    return 1;
  }
  *ctx.out << fmt::format("migsched report: wrote {} ({} runs, {} charts)\n", f.output,
                          report.runs(), report.Charts().size());
  return 0;
}

int RunSimulations(const ReportCommandFlags& f, Context& ctx) {
  auto setup = BuildSimSetup(f.sim, ctx);
  if (!setup.ok()) {
    *ctx.err << "migsched report: " << setup.status().message() << "\n";
    return 1;
  }
  const std::vector<std::string> policies = f.policies.empty() ? PolicyNames() : f.policies;
  for (const std::string& p : policies) {
    auto made = MakePolicy(p, setup->SchedulerFor(p));
    if (!made.ok()) {
      *ctx.err << "migsched report: --policies: " << made.status().message() << "\n";
      return 1;
    }
  }
  PrepareForReport(f.report, setup->jobs, &setup->sim);
  const bool fill = setup->sim.mode == SimMode::kFill;
  ProgressPrinter progress(ctx);
  std::vector<StatusOr<SimResult>> results(policies.size(),
                                           Status(StatusCode::kInternal, "not run"));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t parallel = f.threads > 0 ? static_cast<size_t>(f.threads) : hw;
  for (size_t first = 0; first < policies.size(); first += parallel) {
    std::vector<std::thread> workers;
    for (size_t i = first; i < std::min(policies.size(), first + parallel); ++i) {
      workers.emplace_back([&, i] {
        SimOptions o = setup->sim;
        o.progress = [&, i](const SimProgress& p) { progress.Report(policies[i], p, fill); };
        results[i] = RunSimulation(setup->gpus, setup->jobs, policies[i],
                                   setup->SchedulerFor(policies[i]), o);
      });
    }
    for (auto& w : workers) w.join();
  }
  std::vector<const SimResult*> ok;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (!results[i].ok()) {
      *ctx.err << "migsched report: " << policies[i] << ": " << results[i].status().message()
               << "\n";
      return 1;
    }
    ok.push_back(&*results[i]);
  }
  const std::string title =
      f.title.empty() ? fmt::format("migsched report: {}", setup->workload_label) : f.title;
  HtmlReport report = MakeSimReport(title, *setup, f.sim, policies, ok);
  Status st = report.Write(f.output);
  if (!st.ok()) {
    *ctx.err << "migsched report: -o: " << st.message() << "\n";
    return 1;
  }
  *ctx.out << fmt::format("migsched report: wrote {} ({} runs, {} charts)\n", f.output,
                          report.runs(), report.Charts().size());
  return 0;
}

int Run(const ReportCommandFlags& f, Context& ctx) {
  const bool simulate = !f.sim.cluster.empty() || !f.sim.workload.empty();
  if (!f.from.empty() && simulate) {
    *ctx.err << "migsched report: --from re-renders saved outputs; it cannot be combined with "
                "--cluster/--workload (which simulate)\n";
    return 2;
  }
  if (f.from.empty() && (f.sim.cluster.empty() || f.sim.workload.empty())) {
    *ctx.err << "migsched report: give --cluster and --workload to simulate, or --from FILE.json "
                "to re-render saved outputs\n";
    return 2;
  }
  return f.from.empty() ? RunSimulations(f, ctx) : RunFromFiles(f, ctx);
}

}  // namespace

void RegisterReportCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<ReportCommandFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write an HTML report (summary, charts over time, JCT distribution, GPU slot maps; opens "
      "offline): simulate policies like compare, or re-render saved --json outputs with --from");
  AddSimFlags(cmd, &f->sim);
  // Not required here: --from needs neither.
  cmd->get_option("--cluster")->required(false);
  cmd->get_option("--workload")->required(false);
  AddReportFlags(cmd, &f->report, /*with_path=*/false);
  cmd->add_option("-o,--output", f->output, "The HTML file to write")->required();
  cmd->add_option("--policies", f->policies,
                  "Comma-separated policies, the first is the reference (default: all)")
      ->delimiter(',');
  cmd->add_option("--from", f->from,
                  "Re-render a saved output of simulate/compare/sweep --json (repeatable; "
                  "metrics only, no simulation)");
  cmd->add_option("--title", f->title, "Title of the page");
  cmd->add_option("--threads", f->threads, "Policies simulated at once (default: the cores)");
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
