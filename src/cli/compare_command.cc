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
#include "cli/replica_output.h"
#include "cli/report.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "io/scheduler_options_json.h"
#include "sched/policy.h"
#include "sim/frag_free.h"
#include "sim/replicas.h"
#include "sim/sim_writers.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

// Every registered policy, then (online mode) the fragmentation-free reference.
std::vector<std::string> DefaultPolicies(bool fill) {
  std::vector<std::string> out = PolicyNames();
  if (!fill) out.emplace_back(kFragFreeReference);
  return out;
}

struct CompareFlags {
  SimFlags sim;
  std::vector<std::string> policies;
  std::string json;
  std::string jobs_csv;
  int threads = 0;
  bool by_profile = false;
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
  Status outputs = CheckOutputFiles(
      {{"--json", f.json}, {"--jobs-csv", f.jobs_csv}, {"--report", f.report.path}},
      SimInputFiles(f.sim, ctx));
  if (!outputs.ok()) return fail(outputs.message());
  // Each named once (AddPoliciesFlag refused a name given twice or an empty entry).
  std::vector<std::string> policies =
      f.policies.empty() ? DefaultPolicies(f.sim.mode == "fill") : f.policies;
  const size_t n_replicas = static_cast<size_t>(std::max(1, f.sim.replicas));
  RunShape shape;
  shape.parallel_runs = ParallelRuns(policies.size() * n_replicas, f.threads);
  shape.total_runs = static_cast<int>(policies.size() * n_replicas);
  shape.record_jobs = !f.report.path.empty() || !f.jobs_csv.empty();
  shape.record_timeline = !f.report.path.empty();
  // (shape: sized for every registered policy; the default list below may leave one out.)
  auto setups = BuildReplicaSetups(f.sim, ctx, shape);
  if (!setups.ok()) return fail(setups.status().message());
  if (f.policies.empty()) {
    policies = DefaultPoliciesFor(&setups->front());
    if (f.sim.mode != "fill") policies.emplace_back(kFragFreeReference);
  }
  const size_t n_policies = policies.size();
  const SimSetup& setup = setups->front();
  for (const std::string& p : policies) {
    if (p == kFragFreeReference) {
      if (setup.sim.mode == SimMode::kFill) {
        return fail(fmt::format("--policies: {} runs in online mode only", kFragFreeReference));
      }
      continue;  // the simulator's reference, not a placement policy (sim/frag_free.h)
    }
    auto made = MakePolicy(p, setup.SchedulerFor(p));
    if (!made.ok()) return fail("--policies: " + WithTheReferenceNamed(made.status()).message());
  }
  // The reference that compare adds by itself is not the user's choice: no note on it.
  for (std::string& n : InertOptionNotes(setup, f.policies.empty() ? PolicyNames() : policies)) {
    setups->front().notes.push_back(std::move(n));
  }
  const bool fill = setup.sim.mode == SimMode::kFill;
  for (SimSetup& s : *setups) {
    s.sim.record_jobs = false;
    s.sim.record_timeline = false;
  }
  // The report's charts and slot maps come from replica 0.
  if (!f.report.path.empty()) PrepareForReport(f.report, setup.jobs, &setups->front().sim);
  // So do the rows of --jobs-csv.
  if (!f.jobs_csv.empty()) setups->front().sim.record_jobs = true;
  // Task k: policy k % P in replica k / P; every run independent, stored by index.
  std::vector<StatusOr<SimResult>> results =
      RunPoliciesOnReplicas(*setups, policies, f.threads, ctx);
  ReplicaRuns runs(n_policies);
  for (size_t k = 0; k < results.size(); ++k) {
    const size_t i = k % n_policies;
    if (!results[k].ok()) return fail(policies[i] + ": " + results[k].status().message());
    runs[i].push_back(results[k]->metrics);
  }
  std::vector<uint64_t> seeds;
  for (size_t r = 0; r < n_replicas; ++r)
    seeds.push_back(ReplicaSeed(f.sim.seed, static_cast<int>(r)));
  std::ostream& out = *ctx.out;
  out << fmt::format("migsched compare: {} on {}\n", setup.workload_label,
                     runs.front().front().cluster);
  if (n_replicas > 1) {
    out << fmt::format("  replicas: {} (seeds {}..{}; {})\n", n_replicas, seeds.front(),
                       seeds.back(),
                       setup.perturbation == "jitter"
                           ? fmt::format("arrival gaps and durations jittered by {:g}%",
                                         100 * setup.jitter_applied)
                           : std::string("each replica's workload drawn from its seed"));
  }
  for (const std::string& n : setup.notes) out << "  note: " << n << "\n";
  if (n_replicas > 1 && !f.jobs_csv.empty()) {
    out << fmt::format("  note: --jobs-csv describes replica 0 (seed {})\n", seeds.front());
  }
  for (size_t i = 0; i < n_policies; ++i) {
    const Metrics& m = runs[i].front();
    if (fill || m.rejected == 0) continue;
    out << fmt::format("  REJECTED by {}: {} of {} jobs never ran{}; why:\n", m.policy, m.rejected,
                       m.jobs_total, n_replicas > 1 ? " in replica 0" : "");
    PrintRejections(m, "  ", out);
  }
  out << "\n";
  if (fill) {
    out << fmt::format("{:<20} {:>10} {:>10} {:>10} {:>9}\n", "POLICY", "ALLOCATION", "ACCEPTANCE",
                       "FRAG", "RECONFIGS");
    for (size_t i = 0; i < n_policies; ++i) {
      auto cell = [&](const char* key) {
        return MeanCell(key, MeanInterval(ValuesOf(runs[i], key)));
      };
      out << fmt::format("{:<20} {:>10} {:>10} {:>10} {:>9}\n", policies[i],
                         cell("fill_allocation"), cell("fill_acceptance"), cell("fill_frag"),
                         cell("reconfigurations"));
    }
  } else if (n_replicas == 1) {
    std::vector<Metrics> one;
    for (const auto& reps : runs) one.push_back(reps.front());
    PrintComparison(one, out);
  } else {
    PrintReplicaComparison(policies, runs, out);
  }
  if (f.by_profile && !fill) PrintByProfile(policies, runs, out);
  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["settings"] = setup.ToJson(f.sim);
    j["settings"]["seeds"] = seeds;
    j["reference"] = policies.front();
    j["results"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < n_policies; ++i) {
      nlohmann::ordered_json r;
      r["policy"] = policies[i];
      // The options this policy ran with: the flags given, the rest its registry defaults.
      r["scheduler_options"] = SchedulerOptionsToJson(setup.SchedulerFor(policies[i]));
      const nlohmann::ordered_json metrics = ReplicaRunJson(runs[i], seeds);
      for (const auto& [k, v] : metrics.items()) r[k] = v;
      // A run that does not compare with the reference (ComparableToReference:
      // in some replica another number of jobs completed or rejected) has no
      // ratios but for the rejections (RatioComparable): null, as in the
      // terminal's '-'.
      const bool comparable = ComparableToReference(runs[i], runs.front());
      nlohmann::ordered_json ratio;
      for (const auto& c : ComparedMetrics()) {
        const PairedChange ch =
            ComparePaired(ValuesOf(runs[i], c.key), ValuesOf(runs.front(), c.key));
        ratio[c.key] = RatioComparable(c.key, comparable) && std::isfinite(ch.ratio)
                           ? nlohmann::ordered_json(ch.ratio)
                           : nlohmann::ordered_json();
      }
      r["comparable_to_reference"] = comparable;
      r["ratio_to_reference"] = ratio;
      std::vector<double> closed;
      for (size_t k = 0; k < n_replicas; ++k) closed.push_back(GapClosed(runs[i][k], runs[0][k]));
      const Interval g = MeanInterval(closed);
      r["gap_closed"] =
          std::isfinite(g.mean) ? nlohmann::ordered_json(g.mean) : nlohmann::ordered_json();
      if (n_replicas > 1) {
        r["gap_closed_ci95"] =
            std::isfinite(g.half) ? nlohmann::ordered_json(g.half) : nlohmann::ordered_json();
        r["paired"] = PairedToJson(runs[i], runs.front());
      }
      j["results"].push_back(r);
    }
    Status st = WriteOutputFile(f.json, [&](std::ostream& o) {
      o << j.dump(2) << "\n";
      return Status();
    });
    if (!st.ok()) return fail("--json: " + st.message());
  }
  if (!f.jobs_csv.empty()) {
    std::vector<std::pair<std::string, const SimResult*>> done;
    for (size_t i = 0; i < n_policies; ++i) done.emplace_back(policies[i], &*results[i]);
    Status st = WriteOutputFile(f.jobs_csv, [&](std::ostream& o) { return WriteJobsCsv(done, o); });
    if (!st.ok()) return fail("--jobs-csv: " + st.message());
  }
  if (!f.report.path.empty()) {
    std::vector<const SimResult*> done;
    for (size_t i = 0; i < n_policies; ++i) done.push_back(&*results[i]);  // replica 0
    HtmlReport report = MakeSimReport(fmt::format("migsched compare: {}", setup.workload_label),
                                      setup, f.sim, policies, done);
    if (n_replicas > 1) AddReplicaStats(policies, runs, seeds, &report);
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
  for (const std::string& p : DefaultPolicies(false)) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

void RegisterCompareCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Run several policies on the same cluster and workload (same seed) and print one table, a "
      "row per policy, with each metric's ratio to the first policy (with --replicas: means, 95% "
      "confidence intervals and paired changes)");
  AddSimFlags(cmd, &f->sim);
  const std::string policies_help =
      "Comma-separated policies, the first is the reference (default: all, the ablation ladder "
      "first, then in online mode frag-free-reference, the fragmentation-free indicator: " +
      PolicyList() + ")";
  AddPoliciesFlag(cmd, &f->policies, policies_help);
  cmd->add_option("--json", f->json, "Write every policy's metrics and ratios as JSON to FILE")
      ->check(OutputPath());
  cmd->add_option("--jobs-csv", f->jobs_csv,
                  "Write one row per job and policy (replica 0) as CSV to FILE: the columns of "
                  "simulate's --jobs-csv after a policy column; a job's id is the same under "
                  "every policy")
      ->check(OutputPath());
  cmd->add_option("--threads", f->threads,
                  "Simulations run at once, policies and replicas (default: the cores); the "
                  "results do not depend on it")
      ->check(WholeNumber(1, 4096));
  cmd->add_flag("--by-profile", f->by_profile,
                "Also print, per requested profile, the mean and p95 wait and JCT and the "
                "slowdowns of every policy, with the paired ratio against the first");
  AddReplicaFlags(cmd, &f->sim);
  AddReportFlags(cmd, &f->report);
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
