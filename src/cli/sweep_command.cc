// `migsched sweep`: one policy over a range of one parameter (same cluster,
// workload and seed for every value), one row per value with every metric
// `compare` shows, and optionally all of it as JSON. Used to redo the
// threshold study of the mission (`--param threshold=0.2:0.6:0.05`).
//
// Parameters (SweepParams() below): scheduler options are set on the options
// built from the flags; `load` and `pcie-share` change the workload, which is
// rebuilt for each value (same seed).
#include "cli/sweep_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "cli/replica_output.h"
#include "cli/report.h"
#include "cli/report_output.h"
#include "cli/sim_flags.h"
#include "sched/policy.h"
#include "sim/simulator.h"

namespace migsched::cli {
namespace {

struct SweepFlags {
  SimFlags sim;
  std::string policy = "lb+frag";
  std::string param;  // NAME=SPEC
  std::string json;
  int threads = 0;
  std::string report;  // --report FILE.html
};

// One sweepable parameter: how a value is applied to the flags (workload
// parameters, the setup is rebuilt) or to the built setup (scheduler options).
struct SweepParam {
  const char* name;
  const char* help;
  bool integer;
  // null: not a workload parameter. An error for a value the flag itself would refuse (a value
  // that SimFlags reads as "not given", such as --load 0, must not quietly run the default).
  std::function<Status(SimFlags*, double)> on_flags;
  std::function<void(SimSetup*, double)> on_setup;  // null: applied through the flags
};

const std::vector<SweepParam>& SweepParams() {
  static const std::vector<SweepParam> k = {
      {"threshold", "lazy/busy threshold t (§3)", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.threshold = v; }},
      {"load", "offered load of regenerated arrivals (rebuilds the workload)", false,
       [](SimFlags* f, double v) {
         // SimFlags::load 0 means "not given" (the workload's default load): refused, as
         // `--load 0` is.
         if (!(v > 0)) return InvalidArgumentError("--load must be a finite number > 0");
         f->load = v;
         return Status();
       },
       nullptr},
      {"pcie-share", "paper-mix share of PCIe-bound jobs (rebuilds the workload)", false,
       [](SimFlags* f, double v) {
         f->pcie_share = v;
         f->pcie_share_given = true;  // refused off paper-mix, as the flag is
         return Status();             // the range is checked where the workload is built
       },
       nullptr},
      {"reserve-full", "full-size reserve N GPUs (§4 step 7)", true, nullptr,
       [](SimSetup* s, double v) { s->scheduler.reserve_full = static_cast<int>(v); }},
      {"demand-window", "demand-weighted window, jobs (§2)", true, nullptr,
       [](SimSetup* s, double v) { s->scheduler.demand_window = static_cast<int>(v); }},
      {"max-skip-seconds", "starvation guard, s (§5)", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.max_skip_seconds = v; }},
      {"reservation-slack", "reservation slack, x the reserved job's duration (§13)", false,
       nullptr, [](SimSetup* s, double v) { s->scheduler.reservation_slack = v; }},
      {"reservation-horizon", "reservation horizon, s; < 0 = any start (§13)", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.reservation_horizon_s = v; }},
      {"evacuation-min-wait", "evacuate only for jobs that waited this long, s (§13)", false,
       nullptr, [](SimSetup* s, double v) { s->scheduler.evacuation_min_wait_s = v; }},
      {"max-wait", "reject after this wait, s (§5)", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.max_wait_s = v; }},
      {"idle-ttl", "idle-instance retention, s", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.idle_ttl_s = v; }},
      {"defrag-interval", "periodic defragmentation pass, s (§6)", false, nullptr,
       [](SimSetup* s, double v) { s->scheduler.migration.defrag_interval_s = v; }},
  };
  return k;
}

std::string ParamList() {
  std::string out;
  for (const SweepParam& p : SweepParams()) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

StatusOr<double> ParseNumber(std::string_view text, std::string_view what) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    return InvalidArgumentError(fmt::format("{}: '{}' is not a number", what, text));
  }
  return v;
}

constexpr size_t kMaxValues = 1000;

struct Column {
  std::string key;  // MetricsToJson key
  std::string header;
};

std::vector<Column> Columns(bool fill) {
  if (fill) {
    return {{"fill_allocation", "ALLOCATION"},
            {"fill_acceptance", "ACCEPTANCE"},
            {"fill_frag", "FRAG"},
            {"reconfigurations", "RECONFIGS"}};
  }
  std::vector<Column> out;
  for (const ComparedMetric& c : ComparedMetrics()) out.push_back({c.key, c.header});
  return out;
}

// First column left-aligned, the others right-aligned, two spaces apart.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << (i == 0 ? fmt::format("{:<{}}", r[i], width[i])
                     : fmt::format("  {:>{}}", r[i], width[i]));
    }
    out << "\n";
  }
}

}  // namespace

// Parses "a:b:step" (a, a+step, ... up to b, b included within 1e-9 of a
// step) or "v1,v2,..." (any order, as given). Errors name the problem.
StatusOr<std::vector<double>> ParseSweepValues(std::string_view spec) {
  std::vector<double> values;
  if (spec.find(':') != std::string_view::npos) {
    std::vector<std::string_view> parts;
    size_t from = 0;
    while (true) {
      const size_t colon = spec.find(':', from);
      parts.push_back(
          spec.substr(from, colon == std::string_view::npos ? spec.npos : colon - from));
      if (colon == std::string_view::npos) break;
      from = colon + 1;
    }
    if (parts.size() != 3) {
      return InvalidArgumentError(fmt::format("range '{}' must be FROM:TO:STEP", spec));
    }
    ASSIGN_OR_RETURN(double a, ParseNumber(parts[0], "range start"));
    ASSIGN_OR_RETURN(double b, ParseNumber(parts[1], "range end"));
    ASSIGN_OR_RETURN(double step, ParseNumber(parts[2], "range step"));
    if (!(step > 0))
      return InvalidArgumentError(fmt::format("range step must be > 0, got {}", step));
    if (b < a) {
      return InvalidArgumentError(fmt::format("range end {} is below its start {}", b, a));
    }
    const double n = std::floor((b - a) / step + 1e-9);
    if (n + 1 > kMaxValues) {
      return InvalidArgumentError(
          fmt::format("range '{}' has {} values; at most {}", spec, n + 1, kMaxValues));
    }
    for (int i = 0; i <= static_cast<int>(n); ++i) {
      // a + i * step, rounded to 12 significant digits so that 0.2 + 3 * 0.05
      // prints and compares as 0.35.
      const double v = a + i * step;
      values.push_back(std::stod(fmt::format("{:.12g}", v)));
    }
    return values;
  }
  size_t from = 0;
  while (true) {
    const size_t comma = spec.find(',', from);
    const std::string_view item =
        spec.substr(from, comma == std::string_view::npos ? spec.npos : comma - from);
    ASSIGN_OR_RETURN(double v, ParseNumber(item, "value"));
    values.push_back(v);
    if (values.size() > kMaxValues) {
      return InvalidArgumentError(fmt::format("more than {} values", kMaxValues));
    }
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  return values;
}

namespace {

int Run(const SweepFlags& f, Context& ctx) {
  auto fail = [&](const std::string& msg) {
    *ctx.err << "migsched sweep: " << msg << "\n";
    return 1;
  };
  const size_t eq = f.param.find('=');
  if (eq == std::string::npos) {
    return fail(fmt::format("--param '{}' must be NAME=FROM:TO:STEP or NAME=V1,V2,... (NAME: {})",
                            f.param, ParamList()));
  }
  const std::string name = f.param.substr(0, eq);
  const SweepParam* param = nullptr;
  for (const SweepParam& p : SweepParams()) {
    if (name == p.name) param = &p;
  }
  if (param == nullptr) {
    return fail(fmt::format("--param: unknown parameter '{}' (known: {})", name, ParamList()));
  }
  auto values = ParseSweepValues(std::string_view(f.param).substr(eq + 1));
  if (!values.ok()) return fail(fmt::format("--param {}: {}", name, values.status().message()));
  for (double v : *values) {
    if (param->integer && v != std::floor(v)) {
      return fail(fmt::format("--param {}: {} is not a whole number", name, v));
    }
  }

  // A parameter fill mode ignores, swept there, is refused as its flag is.
  if (f.sim.mode == "fill" && !FillModeIgnores(name).empty()) {
    return fail(fmt::format("--param {}: {}", name, FlagIgnoredInFillMode(name).message()));
  }

  Status outputs =
      CheckOutputFiles({{"--json", f.json}, {"--report", f.report}}, SimInputFiles(f.sim, ctx));
  if (!outputs.ok()) return fail(outputs.message());

  // One setup per value and replica: built from the flags (workload
  // parameters) or the shared base setups with the scheduler option changed.
  const size_t n_replicas = static_cast<size_t>(std::max(1, f.sim.replicas));
  RunShape shape;
  shape.parallel_runs = ParallelRuns(values->size() * n_replicas, f.threads);
  shape.total_runs = static_cast<int>(values->size() * n_replicas);
  shape.workloads = static_cast<int>(values->size()) + 1;  // each setup holds its jobs
  auto bases = BuildReplicaSetups(f.sim, ctx, shape);
  if (!bases.ok()) return fail(bases.status().message());
  for (SimSetup& b : *bases) {
    b.scheduler = b.SchedulerFor(f.policy);  // `full`'s own defaults, then the parameter
  }
  const SimSetup& base = bases->front();
  std::vector<SimSetup> setups;  // value i, replica r at i * n_replicas + r
  for (double v : *values) {
    std::vector<SimSetup> reps;
    if (param->on_flags) {
      SimFlags flags = f.sim;
      if (Status st = param->on_flags(&flags, v); !st.ok()) {
        return fail(fmt::format("{}={}: {}", name, v, st.message()));
      }
      flags.no_memory_check = true;  // checked for all of them above
      auto built = BuildReplicaSetups(flags, ctx);
      if (!built.ok()) return fail(fmt::format("{}={}: {}", name, v, built.status().message()));
      reps = std::move(*built);
      for (SimSetup& s : reps) s.scheduler = s.SchedulerFor(f.policy);
    } else {
      reps = *bases;
      for (SimSetup& s : reps) {
        param->on_setup(&s, v);
        Status st = s.scheduler.Validate();
        if (!st.ok()) return fail(fmt::format("{}={}: {}", name, v, st.message()));
      }
    }
    for (SimSetup& s : reps) {
      s.sim.record_jobs = false;
      s.sim.record_timeline = false;
      setups.push_back(std::move(s));
    }
  }
  auto made = MakePolicy(f.policy, setups.front().scheduler);
  if (!made.ok()) return fail(fmt::format("--policy: {}", made.status().message()));

  const bool fill = base.sim.mode == SimMode::kFill;
  ProgressPrinter progress(ctx);
  std::vector<std::string> labels;
  for (double v : *values) {
    for (size_t r = 0; r < n_replicas; ++r) {
      labels.push_back(n_replicas > 1 ? fmt::format("{}={:g} #{}", name, v, r)
                                      : fmt::format("{}={:g}", name, v));
    }
  }
  std::vector<StatusOr<SimResult>> results(setups.size(), Status(StatusCode::kInternal, "not run"));
  // Values and replicas are independent runs: up to `threads` of them at once.
  RunInParallel(setups.size(), f.threads, [&](size_t i) {
    SimOptions o = setups[i].sim;
    o.progress = [&, i](const SimProgress& p) { progress.Report(labels[i], p, fill); };
    results[i] = RunSimulation(setups[i].gpus, setups[i].jobs, f.policy, setups[i].scheduler, o);
  });
  ReplicaRuns by_value(values->size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok())
      return fail(fmt::format("{}: {}", labels[i], results[i].status().message()));
    by_value[i / n_replicas].push_back(results[i]->metrics);
  }
  std::vector<uint64_t> seeds;
  for (size_t r = 0; r < n_replicas; ++r)
    seeds.push_back(ReplicaSeed(f.sim.seed, static_cast<int>(r)));

  // The table: the parameter, then every compared metric (means ± 95% half-widths with replicas).
  std::ostream& out = *ctx.out;
  // A parameter of the workload (load, pcie-share, ...) changes its description per value: the
  // header names the workload and each value's description follows, not the base flags' one.
  const std::string workload = param->on_flags
                                   ? fmt::format("{} ({} per value, below)", f.sim.workload, name)
                                   : base.workload_label;
  out << fmt::format("migsched sweep: {} over {} ({} values) on {}, {}\n", f.policy, name,
                     values->size(), by_value.front().front().cluster, workload);
  if (param->on_flags) {
    for (size_t i = 0; i < values->size(); ++i) {
      out << fmt::format("  {}={:g}: {}\n", name, (*values)[i],
                         setups[i * n_replicas].workload_label);
    }
  }
  if (n_replicas > 1) {
    out << fmt::format(
        "  replicas: {} per value (seeds {}..{}): means ± the half-width of their "
        "95% confidence interval\n",
        n_replicas, seeds.front(), seeds.back());
  }
  std::vector<std::string> notes = base.notes;
  for (std::string& n : InertOptionNotes(base, {f.policy})) notes.push_back(std::move(n));
  // A swept scheduler option the policy does not read: every row is the same run.
  if (!param->on_flags) {
    if (std::string n = InertSweptOptionNote(base, f.policy, name); !n.empty()) {
      notes.push_back(std::move(n));
    }
  }
  for (const std::string& n : notes) out << "  note: " << n << "\n";
  out << "\n";
  std::string title = name;
  for (char& ch : title) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  std::vector<std::vector<std::string>> rows = {{title}};
  for (const Column& c : Columns(fill)) rows.front().push_back(c.header);
  for (size_t i = 0; i < by_value.size(); ++i) {
    std::vector<std::string> row = {fmt::format("{:g}", (*values)[i])};
    for (const Column& c : Columns(fill)) {
      row.push_back(n_replicas == 1 ? MetricCell(c.key, MetricValue(by_value[i].front(), c.key))
                                    : MeanCell(c.key, MeanInterval(ValuesOf(by_value[i], c.key))));
    }
    rows.push_back(std::move(row));
  }
  PrintTable(rows, out);

  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["settings"] = base.ToJson(f.sim);
    j["settings"]["seeds"] = seeds;
    j["policy"] = f.policy;
    j["param"] = name;
    j["values"] = *values;
    j["results"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < by_value.size(); ++i) {
      nlohmann::ordered_json r;
      r["value"] = (*values)[i];
      if (param->on_flags) r["workload_description"] = setups[i * n_replicas].workload_label;
      const nlohmann::ordered_json metrics = ReplicaRunJson(by_value[i], seeds);
      for (const auto& [k, v] : metrics.items()) r[k] = v;
      j["results"].push_back(r);
    }
    Status st = WriteOutputFile(f.json, [&](std::ostream& o) {
      o << j.dump(2) << "\n";
      return Status();
    });
    if (!st.ok()) return fail("--json: " + st.message());
  }
  if (!f.report.empty()) {
    auto report = MakeSweepReport(base, f.sim, f.policy, name, *values, by_value, seeds);
    Status st = report.ok() ? WriteOutputFile(f.report,
                                              [&](std::ostream& o) {
                                                o << report->Render();
                                                return Status();
                                              })
                            : report.status();
    if (!st.ok()) return fail(fmt::format("--report: {}", st.message()));
  }
  return 0;
}

}  // namespace

void RegisterSweepCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run one policy over a range of one parameter (same cluster, workload and seed) and print "
      "a row of every metric per value");
  AddSimFlags(cmd, &f->sim);
  cmd->add_option("--policy", f->policy, "The policy to run (migsched compare lists them)")
      ->capture_default_str();
  cmd->add_option("--param", f->param,
                  "NAME=FROM:TO:STEP (TO included) or NAME=V1,V2,...; NAME: " + ParamList())
      ->required();
  cmd->add_option("--json", f->json, "Write every value's metrics as JSON to FILE")
      ->check(OutputPath());
  cmd->add_option("--threads", f->threads,
                  "Simulations run at once, values and replicas (default: the cores); the results "
                  "do not depend on it")
      ->check(WholeNumber(1, 4096));
  AddReplicaFlags(cmd, &f->sim);
  cmd->add_option("--report", f->report,
                  "Write an HTML report (every metric against the parameter; opens offline) to "
                  "FILE (docs/report.md)")
      ->check(OutputPath());
  cmd->callback([f, cmd, &ctx, exit_code] {
    // The swept parameter's own flag would be ignored (each value replaces it): refused, as every
    // flag that would be ignored is.
    const std::string name = f->param.substr(0, f->param.find('='));
    const CLI::Option* flag = name.empty() ? nullptr : cmd->get_option_no_throw("--" + name);
    if (flag != nullptr && flag->count() > 0) {
      *ctx.err << fmt::format(
          "migsched sweep: --{0} would be ignored: --param {0}=... sets it for each value (give "
          "one or the other)\n",
          name);
      *exit_code = 1;
      return;
    }
    *exit_code = Run(*f, ctx);
  });
}

}  // namespace migsched::cli
