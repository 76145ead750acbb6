// `migsched simulate`: one policy on one cluster and workload; a readable
// summary on stdout, and optionally every metric as JSON, per-job and
// timeline CSVs, and the workload itself as a trace CSV.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "cli/replica_output.h"
#include "cli/report.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "io/trace_reader.h"
#include "sched/full_policy.h"
#include "sched/policy.h"
#include "sim/frag_free.h"
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
  std::string fill_curve_csv;
  std::string export_workload;
  int threads = 0;
  ReportFlags report;
};

// "first-fit | lb | ... | static; aliases: frag-aware (= lb+frag) ...", from the policy registry.
std::string PolicyHelp() {
  std::string names;
  for (const std::string& n : PolicyNames()) names += (names.empty() ? "" : " | ") + n;
  names +=
      fmt::format(" | {} (the fragmentation-free indicator, not a policy)", kFragFreeReference);
  std::string aliases;
  for (const auto& [alias, policy] : PolicyAliases()) {
    aliases += fmt::format("{}{} (= {})", aliases.empty() ? "" : ", ", alias, policy);
  }
  return fmt::format(
      "{}; aliases: {} (docs/policies.md; `full` defaults to --migration {} --metric {} "
      "--reuse-first {} --anchored-together {} --queue-order {} --evacuation {} "
      "--evacuation-keeps-room {} "
      "--max-skip-seconds {:g} --reservation-slack {:g} --reservation-horizon {:g} "
      "--reservation-keep {} --reservation-oldest {} --reservation-unknown-ends {})",
      names, aliases, kFullDefaultMigration ? "on" : "off", kFullDefaultMetric,
      kFullDefaultReuseFirst ? "on" : "off", kFullDefaultAnchoredTogether ? "on" : "off",
      QueueOrderName(kFullDefaultQueueOrder), EvacuationScopeName(kFullDefaultEvacuation),
      kFullDefaultEvacuationKeepsRoom ? "on" : "off", kFullDefaultMaxSkipSeconds,
      kFullDefaultReservationSlack, kFullDefaultReservationHorizonS,
      kFullDefaultReservationKeep ? "on" : "off", kFullDefaultReservationOldest ? "on" : "off",
      kFullDefaultReservationNeedsEnds ? "skip" : "strict");
}

int Run(const SimulateFlags& f, Context& ctx) {
  auto fail = [&](const std::string& msg) {
    *ctx.err << "migsched simulate: " << msg << "\n";
    return 1;
  };
  if (!f.report.snapshot_at.empty() && f.report.path.empty()) {
    return fail("--snapshot-at sets the slot maps of --report; give --report FILE.html too");
  }
  // Each mode has its curve: a flag for the other one's would write an empty file.
  if (f.sim.mode == "fill" && !f.timeline_csv.empty()) {
    return fail(
        "--timeline-csv is the timeline of --mode online; the curve of fill mode is "
        "--fill-curve-csv FILE");
  }
  if (f.sim.mode != "fill" && !f.fill_curve_csv.empty()) {
    return fail(
        "--fill-curve-csv is the load curve of --mode fill; an online run has --timeline-csv");
  }
  // Before any work: every output can be written.
  Status outputs = CheckOutputFiles({{"--json", f.json},
                                     {"--jobs-csv", f.jobs_csv},
                                     {"--timeline-csv", f.timeline_csv},
                                     {"--fill-curve-csv", f.fill_curve_csv},
                                     {"--export-workload", f.export_workload},
                                     {"--report", f.report.path}},
                                    SimInputFiles(f.sim, ctx));
  if (!outputs.ok()) return fail(outputs.message());
  const size_t n_replicas = static_cast<size_t>(std::max(1, f.sim.replicas));
  RunShape shape;
  shape.record_jobs = !f.jobs_csv.empty() || !f.report.path.empty();
  shape.record_timeline = !f.timeline_csv.empty() || !f.report.path.empty();
  shape.parallel_runs = ParallelRuns(n_replicas, f.threads);
  shape.total_runs = static_cast<int>(n_replicas);
  auto setups = BuildReplicaSetups(f.sim, ctx, shape);
  if (!setups.ok()) return fail(setups.status().message());
  for (SimSetup& s : *setups) {
    s.scheduler = s.SchedulerFor(f.policy);  // `full`'s own defaults (docs/policies.md)
  }
  SimSetup& setup = setups->front();
  for (std::string& n : InertOptionNotes(setup, {f.policy})) setup.notes.push_back(std::move(n));
  if (!f.export_workload.empty()) {
    Status st = WriteOutputFile(f.export_workload,
                                [&](std::ostream& o) { return WriteTraceCsv(setup.jobs, o); });
    if (!st.ok()) return fail("--export-workload: " + st.message());
  }
  ProgressPrinter progress(ctx);
  const bool fill = setup.sim.mode == SimMode::kFill;
  // The per-job and timeline outputs and the report's charts describe replica 0.
  setup.sim.record_jobs = shape.record_jobs;
  setup.sim.record_timeline = shape.record_timeline;
  if (!f.report.path.empty()) PrepareForReport(f.report, setup.jobs, &setup.sim);
  for (size_t r = 1; r < n_replicas; ++r) {
    (*setups)[r].sim.record_jobs = (*setups)[r].sim.record_timeline = false;
  }
  std::vector<StatusOr<SimResult>> results(n_replicas, Status(StatusCode::kInternal, "not run"));
  RunInParallel(n_replicas, f.threads, [&](size_t r) {
    const SimSetup& s = (*setups)[r];
    SimOptions o = s.sim;
    const std::string label = n_replicas > 1 ? fmt::format("{} #{}", f.policy, r) : f.policy;
    o.progress = [&, label](const SimProgress& p) { progress.Report(label, p, fill); };
    results[r] = RunSimulation(s.gpus, s.jobs, f.policy, s.scheduler, o);
  });
  std::vector<Metrics> reps;
  std::vector<uint64_t> seeds;
  for (size_t r = 0; r < n_replicas; ++r) {
    if (!results[r].ok()) {
      const Status& st = results[r].status();
      if (st.code() != StatusCode::kInternal) return fail(st.message());
      // A bug: say where to reproduce it (the run's seed; --export-workload writes its jobs).
      return fail(
          fmt::format("internal error (a bug in migsched), policy {}, replica {}, seed {}: {}",
                      f.policy, r, ReplicaSeed(f.sim.seed, static_cast<int>(r)), st.message()));
    }
    reps.push_back(results[r]->metrics);
    seeds.push_back(ReplicaSeed(f.sim.seed, static_cast<int>(r)));
  }
  const SimResult& result = *results.front();
  std::ostream& out = *ctx.out;
  out << fmt::format("migsched simulate: {}\n", setup.workload_label);
  for (const std::string& n : setup.notes) out << "  note: " << n << "\n";
  if (n_replicas == 1) {
    PrintSummary(result.metrics, out);
  } else {
    if (result.metrics.rejected > 0 && !fill) {
      out << fmt::format("  REJECTED in replica 0: {} of {} jobs never ran; why:\n",
                         result.metrics.rejected, result.metrics.jobs_total);
      PrintRejections(result.metrics, "                  ", out);
    }
    PrintReplicaSummary(reps, out);
    if (!f.jobs_csv.empty() || !f.timeline_csv.empty() || !f.fill_curve_csv.empty() ||
        !f.export_workload.empty()) {
      out << fmt::format(
          "  note: --jobs-csv, --timeline-csv, --fill-curve-csv and --export-workload describe "
          "replica 0 (seed {})\n",
          seeds.front());
    }
  }

  Status st;
  if (!f.json.empty()) {
    st = WriteOutputFile(f.json, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["policy"] = f.policy;
      j["settings"] = setup.ToJson(f.sim);
      j["settings"]["seeds"] = seeds;
      const nlohmann::ordered_json metrics = ReplicaRunJson(reps, seeds);
      for (const auto& [k, v] : metrics.items()) j[k] = v;
      if (fill) {
        j["fill_curve"] = nlohmann::ordered_json::array();
        for (const FillPoint& p : result.fill_curve) {
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
    st = WriteOutputFile(f.jobs_csv, [&](std::ostream& o) { return WriteJobsCsv(result, o); });
    if (!st.ok()) *ctx.err << "migsched simulate: --jobs-csv: " << st.message() << "\n";
  }
  if (st.ok() && !f.timeline_csv.empty()) {
    st = WriteOutputFile(f.timeline_csv,
                         [&](std::ostream& o) { return WriteTimelineCsv(result, o); });
    if (!st.ok()) *ctx.err << "migsched simulate: --timeline-csv: " << st.message() << "\n";
  }
  if (st.ok() && !f.fill_curve_csv.empty()) {
    st = WriteOutputFile(f.fill_curve_csv,
                         [&](std::ostream& o) { return WriteFillCurveCsv(result, o); });
    if (!st.ok()) *ctx.err << "migsched simulate: --fill-curve-csv: " << st.message() << "\n";
  }
  if (st.ok() && !f.report.path.empty()) {
    HtmlReport report = MakeSimReport(fmt::format("migsched simulate: {}", f.policy), setup, f.sim,
                                      {f.policy}, {&result});
    if (n_replicas > 1) AddReplicaStats({f.policy}, {reps}, seeds, &report);
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
  CLI::App* cmd = app.add_subcommand("simulate",
                                     "Simulate one placement policy on a cluster and workload and "
                                     "print its metrics (docs/algorithms.md §9)");
  AddSimFlags(cmd, &f->sim);
  cmd->add_option("--policy", f->policy, PolicyHelp())->capture_default_str();
  cmd->add_option("--json", f->json, "Write every metric (and the settings) as JSON to FILE")
      ->check(OutputPath());
  cmd->add_option("--jobs-csv", f->jobs_csv,
                  "Write one row per job to FILE (docs/formats/outputs.md)")
      ->check(OutputPath());
  cmd->add_option("--timeline-csv", f->timeline_csv,
                  "--mode online: write the cluster state after every event time to FILE")
      ->check(OutputPath());
  cmd->add_option("--fill-curve-csv", f->fill_curve_csv,
                  "--mode fill: write the load curve (one row per 5% of requested compute) to "
                  "FILE (docs/formats/outputs.md)")
      ->check(OutputPath());
  cmd->add_option("--export-workload", f->export_workload,
                  "Write the workload as simulated (arrivals regenerated) as a trace CSV to FILE")
      ->check(OutputPath());
  AddReportFlags(cmd, &f->report);
  AddReplicaFlags(cmd, &f->sim);
  cmd->add_option("--threads", f->threads,
                  "Replicas simulated at once (default: the cores); the results do not depend on "
                  "it")
      ->check(WholeNumber(1, 4096));
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
