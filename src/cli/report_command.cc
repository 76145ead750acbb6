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
#include <vector>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "io/input_file.h"
#include "report/html_report.h"
#include "sched/policy.h"
#include "sim/replicas.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

// "migsched report: wrote r.html (1 run, 7 charts)": a count of one is singular.
std::string WroteLine(const std::string& output, size_t runs, size_t charts) {
  return fmt::format("migsched report: wrote {} ({} run{}, {} chart{})\n", output, runs,
                     runs == 1 ? "" : "s", charts, charts == 1 ? "" : "s");
}

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
  ASSIGN_OR_RETURN(std::ifstream in, OpenInputFile(path, "saved output"));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(fmt::format("{}: not valid JSON", path));
  return j;
}

// What workload a saved output ran: its settings' workload description (the
// workload, its job count and load) and seed; "" when it has no settings.
std::string WorkloadOf(const nlohmann::json& j) {
  if (!j.contains("settings") || !j["settings"].is_object()) return "";
  const nlohmann::json& s = j["settings"];
  std::string w =
      s.contains("workload_description") && s["workload_description"].is_string()
          ? s["workload_description"].get<std::string>()
          : (s.contains("workload") && s["workload"].is_string() ? s["workload"].get<std::string>()
                                                                 : "");
  if (s.contains("seed") && s["seed"].is_number()) w += fmt::format(", seed {}", s["seed"].dump());
  return w;
}

// Adds the runs of one saved output to `report`. `suffix` tells runs of
// several files apart.
Status AddSavedOutput(const std::string& path, const nlohmann::json& j, const std::string& suffix,
                      HtmlReport* report, bool* settings_set) {
  if (!j.is_object()) return InvalidArgumentError(fmt::format("{}: not a JSON object", path));
  const std::string workload = WorkloadOf(j);
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
      Status st = report->AddRunMetrics(label_of(r), r, workload);
      if (!st.ok()) return st.WithPrefix(fmt::format("{}: results[{}]", path, i));
    }
    settings();
    return Status();
  }
  if (j.contains("mode") && j["mode"].is_string()) {  // simulate --json
    RETURN_IF_ERROR(report->AddRunMetrics(label_of(j), j, workload).WithPrefix(path));
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
  // Runs of different workloads or job counts: said here and on the page,
  // whose ratios between them are left uncoloured.
  for (const std::string& w : report.ComparabilityNotes()) {
    *ctx.err << "migsched report: warning: " << w << "\n";
  }
  Status st = WriteOutputFile(f.output, [&](std::ostream& o) {
    o << report.Render();
    return Status();
  });
  if (!st.ok()) {
    *ctx.err << "migsched report: -o: " << st.message() << "\n";
    return 1;
  }
  *ctx.out << WroteLine(f.output, report.runs(), report.Charts().size());
  return 0;
}

int RunSimulations(const ReportCommandFlags& f, Context& ctx) {
  std::vector<std::string> policies = f.policies.empty() ? PolicyNames() : f.policies;
  const size_t n_replicas = static_cast<size_t>(std::max(1, f.sim.replicas));
  RunShape shape;
  shape.parallel_runs = ParallelRuns(policies.size() * n_replicas, f.threads);
  shape.total_runs = static_cast<int>(policies.size() * n_replicas);
  shape.record_jobs = shape.record_timeline = true;
  auto setups = BuildReplicaSetups(f.sim, ctx, shape);
  if (!setups.ok()) {
    *ctx.err << "migsched report: " << setups.status().message() << "\n";
    return 1;
  }
  // (shape: sized for every registered policy; the default list may leave one out.)
  if (f.policies.empty()) policies = DefaultPoliciesFor(&setups->front());
  const size_t n_policies = policies.size();
  const SimSetup& setup = setups->front();
  for (const std::string& p : policies) {
    auto made = MakePolicy(p, setup.SchedulerFor(p));
    if (!made.ok()) {
      *ctx.err << "migsched report: --policies: " << made.status().message() << "\n";
      return 1;
    }
  }
  // Charts, the JCT distribution and slot maps from replica 0; the others record metrics only.
  PrepareForReport(f.report, setup.jobs, &setups->front().sim);
  for (size_t r = 1; r < n_replicas; ++r) {
    (*setups)[r].sim.record_jobs = (*setups)[r].sim.record_timeline = false;
  }
  // Task k: policy k % P in replica k / P; every run independent, stored by index.
  std::vector<StatusOr<SimResult>> results =
      RunPoliciesOnReplicas(*setups, policies, f.threads, ctx);
  std::vector<const SimResult*> ok;
  std::vector<std::vector<Metrics>> runs(n_policies);
  for (size_t k = 0; k < results.size(); ++k) {
    const size_t i = k % n_policies;
    if (!results[k].ok()) {
      *ctx.err << "migsched report: " << policies[i] << ": " << results[k].status().message()
               << "\n";
      return 1;
    }
    if (k < n_policies) ok.push_back(&*results[k]);
    runs[i].push_back(results[k]->metrics);
  }
  const std::string title =
      f.title.empty() ? fmt::format("migsched report: {}", setup.workload_label) : f.title;
  HtmlReport report = MakeSimReport(title, setup, f.sim, policies, ok);
  if (n_replicas > 1) {
    std::vector<uint64_t> seeds;
    for (size_t r = 0; r < n_replicas; ++r)
      seeds.push_back(ReplicaSeed(f.sim.seed, static_cast<int>(r)));
    AddReplicaStats(policies, runs, seeds, &report);
  }
  Status st = WriteOutputFile(f.output, [&](std::ostream& o) {
    o << report.Render();
    return Status();
  });
  if (!st.ok()) {
    *ctx.err << "migsched report: -o: " << st.message() << "\n";
    return 1;
  }
  *ctx.out << WroteLine(f.output, report.runs(), report.Charts().size());
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
  if (!f.report.snapshot_at.empty() && !f.from.empty()) {
    *ctx.err << "migsched report: --snapshot-at needs a simulation; saved --from outputs have no "
                "slot maps\n";
    return 2;
  }
  // Before any work: the page can be written.
  std::vector<InputFile> inputs;
  if (f.from.empty()) {
    inputs = SimInputFiles(f.sim, ctx);
  } else {
    for (const std::string& path : f.from) inputs.push_back({"--from", path});
  }
  Status out = CheckOutputFiles({{"-o", f.output}}, inputs);
  if (!out.ok()) {
    *ctx.err << "migsched report: " << out.message() << "\n";
    return 1;
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
  AddPoliciesFlag(cmd, &f->policies,
                  "Comma-separated policies, the first is the reference (default: all)");
  cmd->add_option("--from", f->from,
                  "Re-render a saved output of simulate/compare/sweep --json (repeatable; "
                  "metrics only, no simulation)");
  cmd->add_option("--title", f->title, "Title of the page");
  cmd->add_option("--threads", f->threads,
                  "Simulations run at once, policies and replicas (default: the cores); the "
                  "results do not depend on it")
      ->check(WholeNumber(1, 4096));
  AddReplicaFlags(cmd, &f->sim);
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
