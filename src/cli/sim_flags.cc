#include "cli/sim_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "core/cluster.h"
#include "core/text.h"
#include "io/alibaba_loader.h"
#include "io/trace_reader.h"
#include "sched/metrics.h"
#include "sched/option_table.h"
#include "sched/policies/policies.h"
#include "sched/policy.h"
#include "sim/arrivals.h"
#include "sim/churn.h"
#include "sim/frag_free.h"
#include "sim/knowledge.h"
#include "sim/load_profile.h"
#include "sim/paper_mix.h"
#include "sim/reconfig_latency.h"
#include "sim/replicas.h"
#include "sim/workload_families.h"

namespace migsched::cli {

CLI::Validator FiniteNumber(std::string_view requirement, std::function<bool(double)> ok) {
  const std::string req(requirement);
  return CLI::Validator(
      [req, ok](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || !ok(v)) {
          return fmt::format("must be {}, got '{}'", req, text);
        }
        return "";
      },
      "NUMBER");
}

CLI::Validator OutputPath() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "must name a file, got ''" : "";
      },
      "FILE");
}

CLI::Validator WholeNumber(int64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const std::string range = fmt::format("an integer in {}..{}", min, max);
        const bool negative = !text.empty() && text[0] == '-';
        const std::string digits = negative ? text.substr(1) : text;
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
            digits.size() > 20) {
          return fmt::format("must be {}, got '{}'", range, text);
        }
        errno = 0;
        const uint64_t magnitude = std::strtoull(digits.c_str(), nullptr, 10);
        const bool in_range =
            errno != ERANGE &&
            (negative ? min < 0 && magnitude <= static_cast<uint64_t>(-(min + 1)) + 1
                      : magnitude <= max && (min <= 0 || magnitude >= static_cast<uint64_t>(min)));
        if (!in_range) return fmt::format("must be {}, got '{}'", range, text);
        return "";
      },
      "INTEGER");
}

void AddSchedulerFlags(CLI::App* cmd, SchedulerOptions* options, ExplicitOptions* given) {
  const SchedulerOptions defaults = *options;
  for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
    const SchedulerOptionSpec* s = &spec;  // the table lives as long as the program
    CLI::Option* opt = cmd->add_option_function<std::string>(
        "--" + s->name,
        [s, options, given](const std::string& v) {
          // The check below has accepted `v`; Apply cannot fail on it.
          (void)s->Apply(v, options, given);
        },
        // The placeholder says on|off, as the default is written; the help says what else counts.
        s->kind == OptionKind::kBool ? fmt::format("{} ({})", s->help, s->rule) : s->help);
    opt->check(CLI::Validator(
        [s](std::string& text) -> std::string {
          SchedulerOptions scratch;
          Status st = s->set(text, &scratch);
          return st.ok() ? "" : st.message();
        },
        s->kind == OptionKind::kChoice ? fmt::format("{{{}}}", fmt::join(s->choices, ","))
                                       : std::string(s->kind == OptionKind::kInteger  ? "INTEGER"
                                                     : s->kind == OptionKind::kBool   ? "on|off"
                                                     : s->kind == OptionKind::kString ? "NAME"
                                                                                      : "NUMBER")));
    opt->default_str(s->get(defaults));
  }
  // An option's old name is refused saying its new one (hidden from --help).
  for (const std::string& old : RenamedSchedulerOptionNames()) {
    cmd->add_option_function<std::string>("--" + old,
                                          [old](const std::string&) {
                                            throw CLI::ValidationError(
                                                "--" + old, *RenamedSchedulerOption(old));
                                          })
        ->group("");
  }
}

void AddSimFlags(CLI::App* cmd, SimFlags* f) {
  const auto positive = [](double v) { return v > 0; };
  cmd->add_option("--cluster", f->cluster,
                  "GPUs: COUNTxMODEL[,COUNTxMODEL...], e.g. 4xA100-40GB,8xH100-80GB "
                  "(models: migsched profiles)")
      ->required();
  cmd->add_option("--workload", f->workload,
                  "FILE (trace .csv or .jsonl, docs/formats/trace.md) | paper-mix | churn "
                  "(bursty paper-mix-like arrivals and departures, §10) | serving (inference "
                  "serving: heavy-tailed lifetimes, diurnal arrivals, multi-instance services, "
                  "mostly latency-sensitive) | training (large gangs, long checkpointable jobs) | "
                  "alibaba:FILE (cluster-trace-gpu-v2023 pod list)")
      ->required();
  cmd->add_option("--load", f->load,
                  "Offered load for regenerated arrivals (share of cluster GPU capacity, > 0); "
                  "default 0.9 for paper-mix, churn, serving, training and alibaba:, arrivals kept "
                  "for a FILE unless "
                  "given")
      ->check(FiniteNumber("a number from 0.000001 to 1000000",
                           [](double v) { return v >= 1e-6 && v <= 1e6; }));
  cmd->add_option("--arrivals", f->arrivals,
                  "poisson: Poisson arrivals at --load; trace-order: the trace's order with gaps "
                  "scaled to --load (alibaba:, and a FILE with --load; paper-mix and training are "
                  "always poisson, churn and serving have their own bursts)")
      ->check(CLI::IsMember({"poisson", "trace-order"}))
      ->each([f](const std::string&) { f->arrivals_given = true; })
      ->capture_default_str();
  cmd->add_option("--seed", f->seed,
                  "Seed of every random draw, 0..18446744073709551615 (same seed, same run)")
      ->check(WholeNumber(0, UINT64_MAX))
      ->capture_default_str();
  cmd->add_option("--jobs", f->jobs,
                  "paper-mix / churn, serving, training: number of jobs (default 200 / 500); "
                  "traces: use only the "
                  "first N jobs (default: all)")
      ->check(WholeNumber(1, INT32_MAX));
  cmd->add_option(
         "--pcie-share", f->pcie_share,
         "generated workloads only: share of PCIe-bound jobs, in [0, 1] (§10; default 0.2, "
         "serving and training 0.1)")
      ->check(FiniteNumber("a number in [0, 1]", [](double v) { return v >= 0 && v <= 1; }))
      ->each([f](const std::string&) { f->pcie_share_given = true; })
      ->capture_default_str();
  cmd->add_option("--fraction-rule", f->fraction_rule,
                  "How a GPU fraction becomes a profile: compute (smallest profile with enough "
                  "compute slices) or memory (enough memory slices)")
      ->check(CLI::IsMember({"compute", "memory"}))
      ->capture_default_str();
  cmd->add_option("--mode", f->mode,
                  "online: arrivals and completions over time; fill: FGD's method, jobs placed "
                  "without departing up to --fill-target (§9)")
      ->check(CLI::IsMember({"online", "fill"}))
      ->capture_default_str();
  cmd->add_option("--fill-target", f->fill_target,
                  "--mode fill only: stop when requested compute reaches this share of the "
                  "cluster")
      ->check(
          FiniteNumber("a number > 0 and at most 100", [](double v) { return v > 0 && v <= 100; }))
      ->each([f](const std::string&) { f->fill_target_given = true; })
      ->capture_default_str();
  cmd->add_option("--reconfig-ms", f->reconfig_ms,
                  "Cost of one MIG create or destroy, ms, serialised per GPU (§4); the same as "
                  "--reconfig-latency fixed:MS")
      ->check(FiniteNumber("a number of milliseconds from 0 to 3600000 (an hour)",
                           [](double v) { return v >= 0 && v <= kMaxLatencyMs; }))
      ->each([f](const std::string&) { f->reconfig_ms_given = true; })
      ->capture_default_str();
  cmd->add_option("--reconfig-latency", f->reconfig_latency,
                  "--mode online: the latency of each MIG create and destroy drawn from a "
                  "distribution, seeded from --seed: fixed:MS | lognormal:MEDIAN_MS,SIGMA | "
                  "empirical:FILE (measured ms: a JSON list or one per line) | field (the preset "
                  "of docs/mig-hardware.md §9: creates lognormal:250,1, destroys "
                  "lognormal:1000,0.7); create=SPEC or destroy=SPEC for one kind; repeatable. "
                  "Instead of --reconfig-ms")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const Status st = ParseReconfigLatency({text}).status();
            return st.ok() ? "" : st.message();
          },
          "SPEC"));
  cmd->add_option("--expected-ends", f->expected_ends,
                  "--mode online only: what the scheduler knows of run times. limits: each job's "
                  "time limit (time_limit_s, or --user-estimates) as its duration and start + "
                  "limit as its expected end, as Slurm and the daemon; known: an ORACLE, the exact "
                  "durations and ends, a reference no real scheduler has; unknown: neither (as "
                  "Kubernetes), so a reservation of --max-skip-seconds has no known start: "
                  "skipped, or strict with --reservation-unknown-ends strict. Jobs always run for "
                  "their durations and end at their limit (outcome timeout)")
      ->check(CLI::IsMember({"limits", "known", "unknown"}))
      ->each([f](const std::string&) { f->expected_ends_given = true; })
      ->capture_default_str();
  cmd->add_option("--user-estimates", f->user_estimates,
                  "--mode online only: model: jobs without a time_limit_s get one drawn from the "
                  "model of user runtime estimates (Tsafrir, Etsion and Feitelson, JSSPP 2005; "
                  "docs/formats/trace.md), seeded from --seed; none: they have no limit")
      ->check(CLI::IsMember({"model", "none"}))
      ->each([f](const std::string&) { f->user_estimates_given = true; })
      ->capture_default_str();
  cmd->add_option("--duration-cap", f->duration_cap,
                  "Cut every job's duration above this many seconds to it (> 0), before arrivals "
                  "are regenerated at --load: e.g. the Alibaba pod list's pods of up to 145 days, "
                  "which outlast its arrivals and set the makespan (a note says how many)")
      ->check(FiniteNumber("a finite number > 0", positive));
  AddSchedulerFlags(cmd, &f->scheduler, &f->explicit_options);
  cmd->add_flag("--no-contention", f->no_contention, "Turn off the PCIe contention model (§8)");
  cmd->add_flag("--self-check", f->self_check,
                "Re-check the invariants after every event time (every GPU's §1 invariants, one "
                "move in flight per job, no instance held twice; slower) and stop with an "
                "internal error at the first violation, or when 1,000,000 event times pass with "
                "no job arriving, starting or ending (a livelock) (replays of `migsched stress` "
                "failures)");
  cmd->add_flag("--no-memory-check", f->no_memory_check,
                "Run even when the estimated memory of the run exceeds what the machine has "
                "(the estimate is checked before generating or simulating; docs/performance.md)");
}

namespace {

// The share of one GPU that one instance of `job` occupies on the first model
// of the cluster that can host it (compute slices of the resolved profile over
// the model's); the job's own fraction (or 1) if none can (it is rejected).
// The share of one GPU an instance of `job` takes on the first of `models` that offers it;
// nullopt when none does.
std::optional<double> ShareOnFirstModel(const std::vector<const GpuModel*>& models,
                                        const Job& job) {
  for (const GpuModel* m : models) {
    const int p = ResolveProfile(*m, job);
    if (p >= 0) return static_cast<double>(m->profile(p).compute_slices) / m->compute_slices();
  }
  return std::nullopt;
}

double Demand(const std::vector<const GpuModel*>& models, const Job& job) {
  return ShareOnFirstModel(models, job)
      .value_or(job.gpu_fraction > 0 && job.gpu_fraction <= 1 ? job.gpu_fraction : 1.0);
}

std::vector<const GpuModel*> Distinct(const std::vector<const GpuModel*>& gpus) {
  std::vector<const GpuModel*> out;
  for (const GpuModel* g : gpus) {
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

}  // namespace

std::string_view FillModeIgnores(std::string_view flag) {
  // Fill mode places each job at once or counts it failed, in workload order, and no job ends
  // (sim/fill_mode.h): arrival times, durations, time, the queue and completions are not in it.
  if (flag == "load" || flag == "arrivals") return "fill mode ignores arrival times";
  if (flag == "duration-cap") return "fill mode ignores durations";
  // The scheduler's options of the queue, of moves and of reservations: fill mode places each
  // job at once or counts it failed (Scheduler::TryPlace), never queues, moves or reserves.
  static constexpr std::string_view kQueue[] = {"max-skip-seconds",   "max-wait",
                                                "queue-order",        "overtake-guard",
                                                "limit-power",        "joint-placement",
                                                "reservation",        "reservation-depth",
                                                "reservation-slack",  "reservation-horizon",
                                                "reservation-ageing", "reservation-keep",
                                                "reservation-oldest", "reservation-unknown-ends"};
  static constexpr std::string_view kMoves[] = {"migration",
                                                "defrag-interval",
                                                "max-moves-per-pass",
                                                "migration-cooldown",
                                                "migration-fixed-s",
                                                "migration-gbps",
                                                "switch-s",
                                                "defrag-passes",
                                                "admission-move-budget",
                                                "checkpoint-interval",
                                                "migration-order",
                                                "evacuation",
                                                "evacuation-min-wait",
                                                "evacuation-min-slices",
                                                "evacuation-when",
                                                "evacuation-keeps-room"};
  for (std::string_view q : kQueue) {
    if (flag == q) return "fill mode has no queue";
  }
  for (std::string_view m : kMoves) {
    if (flag == m) return "fill mode moves no job";
  }
  if (flag == "reconfig-latency" || flag == "reconfig-ms" || flag == "no-contention") {
    return "fill mode has no time";
  }
  if (flag == "idle-ttl" || flag == "expected-ends" || flag == "user-estimates") {
    return "fill mode has no completions";
  }
  return "";
}

Status FlagIgnoredInFillMode(std::string_view flag) {
  return InvalidArgumentError(
      fmt::format("--{} applies to --mode online only ({})", flag, FillModeIgnores(flag)));
}

namespace {

// A flag that applies to some workloads or modes only, given where it would
// be ignored: an error saying where it applies.
// `generator`: the generated workload with arrivals of its own ("" for none).
Status CheckFlagsApply(const SimFlags& f, bool paper_mix, std::string_view generator,
                       bool trace_file) {
  if (f.mode != "online") {
    if (f.load > 0) return FlagIgnoredInFillMode("load");
    if (f.arrivals_given) return FlagIgnoredInFillMode("arrivals");
    if (f.duration_cap > 0) return FlagIgnoredInFillMode("duration-cap");
    if (f.scheduler.idle_ttl_s >= 0) return FlagIgnoredInFillMode("idle-ttl");
    if (f.reconfig_ms_given) return FlagIgnoredInFillMode("reconfig-ms");
    if (f.no_contention) return FlagIgnoredInFillMode("no-contention");
    // A scheduler option fill mode never reads, given: its bit of ExplicitOptions, or (for the
    // options no policy has a default of its own for) a value other than the default.
    const SchedulerOptions defaults;
    for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
      if (FillModeIgnores(spec.name).empty()) continue;
      const bool given = spec.given != nullptr ? f.explicit_options.*(spec.given)
                                               : spec.get(f.scheduler) != spec.get(defaults);
      if (given) return FlagIgnoredInFillMode(spec.name);
    }
  }
  if (f.arrivals_given && paper_mix) {
    return InvalidArgumentError(
        "--arrivals: paper-mix always draws Poisson arrivals at --load; --arrivals applies to "
        "alibaba: and trace files");
  }
  if (f.arrivals_given && !generator.empty()) {
    return InvalidArgumentError(
        fmt::format("--arrivals: {} draws its own arrivals at --load; --arrivals applies to "
                    "alibaba: and trace files",
                    generator));
  }
  if (f.arrivals_given && trace_file && !(f.load > 0)) {
    return InvalidArgumentError(fmt::format(
        "--arrivals {}: a trace file keeps its own arrival times unless --load is given; give "
        "--load to regenerate them",
        f.arrivals));
  }
  if (f.pcie_share_given && !paper_mix && generator.empty()) {
    return InvalidArgumentError(
        "--pcie-share applies to the generated workloads only (paper-mix, churn, serving, "
        "training; a trace gives each job's pcie_gbps)");
  }
  if (f.fill_target_given && f.mode != "fill") {
    return InvalidArgumentError("--fill-target applies to --mode fill only");
  }
  if (f.expected_ends_given && f.mode != "online") return FlagIgnoredInFillMode("expected-ends");
  if (!f.reconfig_latency.empty() && f.mode != "online") {
    return FlagIgnoredInFillMode("reconfig-latency");
  }
  if (f.user_estimates_given && f.mode != "online") return FlagIgnoredInFillMode("user-estimates");
  return Status();
}

// Progress of a long workload generation on stderr, at most twice a second.
class GenerationProgress {
 public:
  GenerationProgress(Context& ctx, std::string what) : ctx_(ctx), what_(std::move(what)) {}
  void Report(int64_t done, int64_t total) {
    if (ctx_.quiet || total < kMinJobs) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    *ctx_.err << fmt::format("migsched: generating {}: {:5.1f}% ({}/{} jobs)\n", what_,
                             100.0 * static_cast<double>(done) / static_cast<double>(total), done,
                             total);
    ctx_.err->flush();
  }

 private:
  static constexpr int64_t kMinJobs = 1000000;  // smaller workloads take well under a second
  Context& ctx_;
  std::string what_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

StatusOr<SimSetup> BuildSimSetup(const SimFlags& f, Context& ctx, RunShape shape) {
  SimSetup s;
  ASSIGN_OR_RETURN(const Catalog* catalog, ctx.catalog());
  auto gpus = ParseClusterSpec(f.cluster, *catalog);
  if (!gpus.ok()) return gpus.status().WithPrefix("--cluster");
  s.gpus = *gpus;
  const std::vector<const GpuModel*> models = Distinct(s.gpus);

  s.scheduler = f.scheduler;
  s.explicit_options = f.explicit_options;
  RETURN_IF_ERROR(s.scheduler.Validate().WithPrefix("scheduler options"));
  // --static-layout names a catalog layout of every model of the cluster (or best-for-mix),
  // whichever policies run: a name the static policies would fail on is refused for all.
  if (f.explicit_options.static_layout && f.scheduler.static_layout != kBestForMix) {
    const std::string& layout = f.scheduler.static_layout;
    for (const GpuModel* m : models) {
      std::vector<std::string> names;
      for (const auto& [name, instances] : m->spec().static_layouts) names.push_back(name);
      if (std::find(names.begin(), names.end(), layout) != names.end()) continue;
      return InvalidArgumentError(fmt::format(
          "--static-layout {}: GPU model '{}' has no static layout '{}' in the catalog (its "
          "layouts: {}; or {}, chosen from the workload's mix)",
          layout, m->name(), layout, names.empty() ? "none" : JoinAnd(names), kBestForMix));
    }
  }
  ASSIGN_OR_RETURN(s.sim.mode, ParseSimMode(f.mode));
  s.sim.fill_target = f.fill_target;
  s.sim.reconfig_ms = f.reconfig_ms;
  if (!f.reconfig_latency.empty()) {
    if (f.reconfig_ms_given) {
      return InvalidArgumentError(
          "--reconfig-ms and --reconfig-latency both given: --reconfig-ms MS is --reconfig-latency "
          "fixed:MS; give one");
    }
    StatusOr<ReconfigLatency> latency = ParseReconfigLatency(f.reconfig_latency);
    if (!latency.ok()) return latency.status().WithPrefix("--reconfig-latency");
    s.sim.reconfig_latency = std::make_shared<const ReconfigLatency>(std::move(*latency));
    s.sim.reconfig_seed = f.seed;
    const ReconfigLatency& rl = *s.sim.reconfig_latency;
    s.notes.push_back(
        rl.IsFixedUniform()
            ? fmt::format("reconfiguration latency: {} per create or destroy", rl.ToString())
            : fmt::format("reconfiguration latency drawn from --seed: creates {} (mean {:.0f} ms), "
                          "destroys {} (mean {:.0f} ms)",
                          rl.create.ToString(), rl.create.MeanMs(), rl.destroy.ToString(),
                          rl.destroy.MeanMs()));
  }
  s.sim.contention = !f.no_contention;
  if (f.self_check) s.sim.TurnOnChecks();
  {
    StatusOr<Knowledge> k = ParseKnowledge(f.expected_ends);
    if (!k.ok()) return k.status().WithPrefix("--expected-ends");
    s.sim.knowledge = *k;
  }
  if (f.user_estimates != "model" && f.user_estimates != "none") {
    return InvalidArgumentError(
        fmt::format("--user-estimates must be model or none, got '{}'", f.user_estimates));
  }
  const bool online = s.sim.mode == SimMode::kOnline;
  s.sim.user_estimates = online && f.user_estimates == "model";
  s.sim.user_estimate_seed = f.seed;
  if (online && s.sim.knowledge == Knowledge::kKnown) {
    s.notes.push_back(
        "--expected-ends known: an ORACLE run (the scheduler is told every job's exact duration, "
        "which no real scheduler has): a reference, not a result");
  }
  RETURN_IF_ERROR(s.sim.Validate().WithPrefix("simulator options"));
  // The flags' own checks (AddSimFlags) refuse these values when parsing; a
  // caller that fills SimFlags itself gets the same refusals here.
  if (f.jobs < 0) return InvalidArgumentError("--jobs must be an integer >= 1");
  if (f.load < 0 || !std::isfinite(f.load)) {
    return InvalidArgumentError("--load must be a finite number > 0");
  }
  ASSIGN_OR_RETURN(FractionRule rule, ParseFractionRule(f.fraction_rule));
  ASSIGN_OR_RETURN(ArrivalMode arrivals, ParseArrivalMode(f.arrivals));
  const bool paper_mix = f.workload == "paper-mix";
  const bool churn = f.workload == "churn";
  const bool serving = f.workload == "serving";
  const bool training = f.workload == "training";
  const bool alibaba = f.workload.rfind("alibaba:", 0) == 0;
  const bool family = churn || serving || training;  // generators with arrivals of their own
  RETURN_IF_ERROR(
      CheckFlagsApply(f, paper_mix, family ? f.workload : "", !paper_mix && !family && !alibaba));
  auto check_memory = [&](int64_t jobs) -> Status {
    if (f.no_memory_check) return Status();
    shape.jobs = jobs;
    return CheckMemory(shape, AvailableMemoryBytes());
  };

  const double load = f.load > 0 ? f.load : 0.9;
  bool regenerate = false;
  if (paper_mix) {
    PaperMixOptions o;
    o.num_jobs = f.jobs > 0 ? f.jobs : 200;
    o.num_gpus = static_cast<int>(s.gpus.size());
    o.load = load;
    o.pcie_share = f.pcie_share;
    o.seed = f.seed;
    RETURN_IF_ERROR(check_memory(o.num_jobs));
    if (models.size() > 1) {
      s.notes.push_back(fmt::format("paper-mix draws its profiles from the first GPU model ({})",
                                    models[0]->name()));
    }
    GenerationProgress progress(ctx, "paper-mix");
    o.progress = [&progress](int64_t done, int64_t total) { progress.Report(done, total); };
    // The mix names the A100 40GB's profiles and draws them on the first model: on a mixed
    // cluster the order of --cluster decides, so a model without them is refused saying so.
    if (const std::string missing = FirstProfileNotOffered(*models[0], o); !missing.empty()) {
      return InvalidArgumentError(fmt::format(
          "paper-mix: profile '{}' is not offered by GPU model '{}' (paper-mix is the seed "
          "paper's A100 40GB mix and draws its profiles on the cluster's first GPU model: list "
          "a model that offers them first, or use --workload churn)",
          missing, models[0]->name()));
    }
    ASSIGN_OR_RETURN(s.jobs, GeneratePaperMix(*models[0], o));  // errors say "paper-mix: ..."
    s.offered_load = load;
    s.workload_label = fmt::format("paper-mix ({} jobs, {:.0f}% PCIe-bound, load {})",
                                   s.jobs.size(), 100 * f.pcie_share, load);
  } else if (churn) {
    ChurnOptions o;
    o.num_jobs = f.jobs > 0 ? f.jobs : 500;
    o.num_gpus = static_cast<int>(s.gpus.size());
    o.load = load;
    o.pcie_share = f.pcie_share;
    o.seed = f.seed;
    RETURN_IF_ERROR(check_memory(o.num_jobs));
    ASSIGN_OR_RETURN(s.jobs, GenerateChurn(*models[0], o));  // errors say "churn: ..."
    s.offered_load = load;
    s.workload_label = fmt::format("churn ({} jobs, {:.0f}% PCIe-bound, load {})", s.jobs.size(),
                                   100 * f.pcie_share, load);
  } else if (serving || training) {
    const int num_jobs = f.jobs > 0 ? f.jobs : 500;
    // --pcie-share when given, else the family's own default.
    RETURN_IF_ERROR(check_memory(num_jobs));
    double pcie = 0;
    if (serving) {
      ServingOptions o;
      o.num_jobs = num_jobs;
      o.num_gpus = static_cast<int>(s.gpus.size());
      o.load = load;
      if (f.pcie_share_given) o.pcie_share = f.pcie_share;
      o.seed = f.seed;
      pcie = o.pcie_share;
      ASSIGN_OR_RETURN(s.jobs, GenerateServing(*models[0], o));  // errors say "serving: ..."
    } else {
      TrainingOptions o;
      o.num_jobs = num_jobs;
      o.num_gpus = static_cast<int>(s.gpus.size());
      o.load = load;
      if (f.pcie_share_given) o.pcie_share = f.pcie_share;
      o.seed = f.seed;
      pcie = o.pcie_share;
      ASSIGN_OR_RETURN(s.jobs, GenerateTraining(*models[0], o));  // errors say "training: ..."
    }
    s.offered_load = load;
    s.workload_label = fmt::format("{} ({} jobs, {:.0f}% PCIe-bound, load {})", f.workload,
                                   s.jobs.size(), 100 * pcie, load);
  } else if (alibaba) {
    const std::string path = f.workload.substr(8);
    if (path.empty()) {
      return InvalidArgumentError(
          "--workload: alibaba:FILE needs the pod list's file name after 'alibaba:' (e.g. "
          "alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv), got 'alibaba:'");
    }
    AlibabaOptions o;
    o.fraction_rule = rule;
    ASSIGN_OR_RETURN(AlibabaWorkload w, LoadAlibabaPodList(path, o));
    for (const SkippedPods& sk : w.skipped) s.notes.push_back("skipped " + sk.ToString());
    if (w.jobs.empty()) {
      // Every pod skipped: the reasons are the error, not notes after it.
      std::vector<std::string> why;
      for (const SkippedPods& sk : w.skipped) why.push_back(sk.ToString());
      return InvalidArgumentError(
          fmt::format("--workload {}: no jobs: {}", f.workload,
                      why.empty() ? std::string("the pod list has no pods")
                                  : fmt::format("every pod skipped: {}", fmt::join(why, "; "))));
    }
    s.jobs = std::move(w.jobs);
    regenerate = true;
    s.workload_label = fmt::format("alibaba:{}", std::filesystem::path(path).filename().string());
  } else {
    ASSIGN_OR_RETURN(s.jobs, ReadTraceFile(f.workload, catalog));
    for (WorkloadJob& j : s.jobs) j.fraction_rule = rule;  // the trace format has no column for it
    regenerate = f.load > 0;
    s.workload_label = std::filesystem::path(f.workload).filename().string();
  }
  const bool generated = paper_mix || family;
  if (f.jobs > 0 && !generated && static_cast<size_t>(f.jobs) < s.jobs.size()) {
    s.notes.push_back(fmt::format("using the first {} of {} jobs (--jobs)", f.jobs, s.jobs.size()));
    s.jobs.resize(f.jobs);
  }
  if (f.duration_cap < 0 || !std::isfinite(f.duration_cap)) {
    return InvalidArgumentError("--duration-cap must be a finite number > 0");
  }
  if (f.duration_cap > 0) {
    const int64_t cut = CapDurations(&s.jobs, f.duration_cap);
    s.notes.push_back(fmt::format("--duration-cap: {} of {} jobs' durations cut to {}", cut,
                                  s.jobs.size(), f.duration_cap));
  }
  if (!generated) RETURN_IF_ERROR(check_memory(static_cast<int64_t>(s.jobs.size())));
  // Trace-order arrivals and a file's own times are not drawn from the seed.
  s.perturbation = (regenerate && arrivals == ArrivalMode::kPoisson) || generated ? "seed" : "none";
  if (regenerate && !s.jobs.empty()) {
    ArrivalOptions a;
    a.mode = arrivals;
    a.load = load;
    a.num_gpus = static_cast<int>(s.gpus.size());
    a.seed = f.seed;
    a.demand = [&models](const Job& j) { return Demand(models, j); };
    RETURN_IF_ERROR(RegenerateArrivals(&s.jobs, a).WithPrefix("--load/--arrivals"));
    s.offered_load = load;
    s.workload_label +=
        fmt::format(" ({} jobs, {} arrivals at offered load {})", s.jobs.size(), f.arrivals, load);
  } else if (!generated) {
    s.workload_label += fmt::format(" ({} jobs, arrival times from the file)", s.jobs.size());
    // The load the file's own times offer, by --load's definition (§10: the mean gap that offers
    // L is mean(count x GPU share x duration) / (L x GPUs)), so a user can check what a trace
    // offers (a user's trial could not; regression: no_offered_load_for_a_file).
    double first = s.jobs.empty() ? 0 : s.jobs.front().arrival_s, last = first, work = 0;
    for (const WorkloadJob& j : s.jobs) {
      first = std::min(first, j.arrival_s);
      last = std::max(last, j.arrival_s);
      // A job no GPU of the cluster offers is turned away: it offers nothing.
      if (const std::optional<double> share = ShareOnFirstModel(models, j)) {
        work += j.count * *share * j.duration_s;
      }
    }
    if (s.jobs.size() >= 2 && last > first && std::isfinite(last - first) && !s.gpus.empty()) {
      const double gap = (last - first) / static_cast<double>(s.jobs.size() - 1);
      const double offered =
          work / static_cast<double>(s.jobs.size()) / (gap * static_cast<double>(s.gpus.size()));
      s.notes.push_back(fmt::format(
          "the file's arrival times offer a load of {:.2f} (as --load counts it, "
          "docs/algorithms.md §10: the mean of count x GPU share x duration over the jobs, over "
          "the mean arrival gap x {} GPU{})",
          offered, s.gpus.size(), s.gpus.size() == 1 ? "" : "s"));
    }
  }
  if (s.jobs.empty())
    return InvalidArgumentError(fmt::format("--workload {}: no jobs", f.workload));
  if (online) {
    const LoadProfile lp = ProfileLoad(s.jobs, s.gpus);
    if (lp.long_jobs > 0 || lp.weeks > 1) s.notes.push_back(DescribeLoad(lp));
    const auto with_limit = std::count_if(s.jobs.begin(), s.jobs.end(),
                                          [](const WorkloadJob& j) { return j.time_limit_s > 0; });
    // Without a model, the missing limits matter only when the scheduler is to know limits.
    if (static_cast<size_t>(with_limit) < s.jobs.size() &&
        (s.sim.user_estimates || s.sim.knowledge == Knowledge::kLimits)) {
      s.notes.push_back(
          s.sim.user_estimates
              ? fmt::format("time limits: {} of {} jobs have none in the workload; they get one "
                            "from the model of user runtime estimates (--user-estimates model, "
                            "docs/formats/trace.md)",
                            s.jobs.size() - with_limit, s.jobs.size())
              : fmt::format("time limits: {} of {} jobs have none (--user-estimates none): under "
                            "--expected-ends limits the scheduler knows nothing of their ends",
                            s.jobs.size() - with_limit, s.jobs.size()));
    }
  }
  return s;
}

namespace {

// The policies of the registry whose choice reads an option (PolicyInfo::reads), e.g.
// "lb, lb+frag and full".
std::string ReadersOf(bool PolicyReads::*field) {
  std::vector<std::string> names;
  for (const PolicyInfo& p : PolicyRegistry()) {
    if (p.reads.*field) names.push_back(p.name);
  }
  return JoinAnd(names);
}

// Why `policy`, run with `o`, does not read the scheduler option `name` (a flag without "--"), as
// the note says it in parentheses; empty when it reads it, or for an option every policy reads.
// docs/policies.md "Options a policy does not read".
std::string WhyInert(std::string_view name, const std::string& policy, const SchedulerOptions& o) {
  StatusOr<const PolicyInfo*> info = FindPolicy(policy);
  if (!info.ok()) return "";
  const PolicyReads& reads = (*info)->reads;
  const bool migration = o.migration.enabled;
  if (name == "evacuation") {
    return migration ? "" : "migration off; --migration on turns it on";
  }
  if (name == "overtake-guard" || name == "limit-power") {
    return o.queue_order == QueueOrder::kResponseRatio
               ? ""
               : "arrival order: no job passes an older one of its request; --queue-order "
                 "response-ratio turns it on";
  }
  if (name == "evacuation-keeps-room") {
    return migration && o.evacuation != EvacuationScope::kOff
               ? ""
               : "no evacuation; --evacuation queue with --migration on turns it on";
  }
  if (name == "defrag-interval" || name == "max-moves-per-pass" || name == "migration-order") {
    if (!migration) {
      return o.migration.passes == DefragPasses::kOff
                 ? "no completion or periodic pass: migration off and --defrag-passes off; "
                   "--migration on --defrag-passes while-waiting turns them on"
                 : "no completion or periodic pass: migration off; --migration on turns them on";
    }
    return o.migration.passes == DefragPasses::kOff
               ? "no completion or periodic pass: --defrag-passes off; --defrag-passes "
                 "while-waiting turns them on"
               : "";
  }
  if (name == "migration-cooldown" || name == "migration-fixed-s" || name == "migration-gbps" ||
      name == "switch-s" || name == "checkpoint-interval" || name == "defrag-passes" ||
      name == "admission-move-budget") {
    return migration ? "" : "no job moves: migration off; --migration on turns it on";
  }
  if (name == "evacuation-min-wait" || name == "evacuation-min-slices" ||
      name == "evacuation-when") {
    return migration && o.evacuation != EvacuationScope::kOff
               ? ""
               : "no evacuation; --evacuation queue with --migration on turns it on";
  }
  if (name == "reservation-slack" || name == "reservation-horizon" || name == "reservation-keep" ||
      name == "reservation-oldest" || name == "reservation-ageing") {
    if (o.max_skip_seconds < 0) {
      return "no look-ahead reservation; --max-skip-seconds S turns it on";
    }
    if (name == "reservation-ageing" && o.reservation_horizon_s < 0) {
      return "no reservation horizon to grow; --reservation-horizon H sets one";
    }
    return "";
  }
  if (name == "threshold") {
    if (reads.threshold || migration) return "";
    return fmt::format(
        "no lazy/busy split; read by {}, and by the migration planner with --migration on",
        ReadersOf(&PolicyReads::threshold));
  }
  if (name == "metric") {
    if (reads.metric || o.joint_placement) return "";
    return fmt::format(
        "it scores no candidate by --metric; read by {}, and by joint placement with "
        "--joint-placement on",
        ReadersOf(&PolicyReads::metric));
  }
  if (name == "frag-objective") {
    if (reads.metric || migration) return "";
    return fmt::format(
        "it scores no candidate by FragCost; read by {}, and by the migration planner with "
        "--migration on",
        ReadersOf(&PolicyReads::metric));
  }
  if (name == "reuse-first") {
    if (reads.reuse_first) return "";
    return fmt::format("read only by {}", ReadersOf(&PolicyReads::reuse_first));
  }
  if (name == "anchored-together") {
    if (reads.anchored_together) return "";
    return fmt::format("read only by {}", ReadersOf(&PolicyReads::anchored_together));
  }
  if (name == "idle-ttl") {
    if (reads.idle_ttl) return "";
    return fmt::format(
        "read only by {}: the others destroy an instance when its job ends, or keep a layout",
        ReadersOf(&PolicyReads::idle_ttl));
  }
  if (name == "static-layout") {
    if (reads.static_layout) return "";
    return fmt::format("it lays no layout; read only by {}",
                       ReadersOf(&PolicyReads::static_layout));
  }
  if (name == "reserve-full") {
    if (reads.reserve_full) return "";
    return "it never creates an instance; every other policy reads it";
  }
  return "";
}

// Options noted together when given: each flag, and whether the note shows its value.
struct InertGroup {
  std::vector<std::string_view> options;
  bool with_value;
};

// Whether the option `name` was given (explicitly, or a value other than its default).
bool GivenOption(const SimSetup& setup, std::string_view name) {
  const ExplicitOptions& e = setup.explicit_options;
  const SchedulerOptions& o = setup.scheduler;
  const SchedulerOptions defaults;
  if (name == "evacuation") return e.evacuation && o.evacuation != EvacuationScope::kOff;
  if (name == "evacuation-keeps-room") return e.evacuation_keeps_room && o.evacuation_keeps_room;
  if (name == "defrag-interval") {
    return o.migration.defrag_interval_s != defaults.migration.defrag_interval_s;
  }
  if (name == "max-moves-per-pass") {
    return o.migration.max_moves_per_pass != defaults.migration.max_moves_per_pass;
  }
  if (name == "migration-order") return e.migration_order;
  if (name == "reservation-slack") return e.reservation_slack;
  if (name == "reservation-horizon") return e.reservation_horizon;
  if (name == "reservation-ageing") return e.reservation_ageing && o.reservation_ageing > 0;
  if (name == "reservation-keep") return e.reservation_keep;
  if (name == "reservation-oldest") return e.reservation_oldest;
  if (name == "threshold") return e.threshold;
  if (name == "metric") return e.metric;
  if (name == "frag-objective") return o.frag_objective != defaults.frag_objective;
  if (name == "reuse-first") return e.reuse_first;
  if (name == "anchored-together") return e.anchored_together;
  if (name == "idle-ttl") return o.idle_ttl_s >= 0;
  if (name == "static-layout") return e.static_layout;
  if (name == "reserve-full") return e.reserve_full;
  if (name == "overtake-guard") return e.overtake_guard && o.overtake_guard >= 0;
  if (name == "limit-power") return e.limit_power && o.limit_power != 1;
  if (name == "evacuation-min-wait") return e.evacuation_min_wait;
  if (name == "evacuation-min-slices") return e.evacuation_min_slices;
  if (name == "evacuation-when") return e.evacuation_when;
  if (name == "defrag-passes") return e.defrag_passes;
  if (name == "migration-cooldown" || name == "migration-fixed-s" || name == "migration-gbps" ||
      name == "switch-s" || name == "checkpoint-interval" || name == "admission-move-budget") {
    // No policy has a default of its own for these: given means not the default.
    const SchedulerOptionSpec* spec = FindSchedulerOption(name);
    return spec != nullptr && spec->get(o) != spec->get(defaults);
  }
  return false;
}

}  // namespace

std::vector<std::string> DefaultPoliciesFor(SimSetup* setup) {
  std::vector<std::string> out;
  for (const std::string& name : PolicyNames()) {
    StatusOr<const PolicyInfo*> info = FindPolicy(name);
    const std::string layout = setup->SchedulerFor(name).static_layout;
    const GpuModel* without = nullptr;
    if (info.ok() && (*info)->reads.static_layout && layout != kBestForMix) {
      for (const GpuModel* m : Distinct(setup->gpus)) {
        bool has = false;
        for (const auto& [n, instances] : m->spec().static_layouts) has = has || n == layout;
        if (!has && without == nullptr) without = m;
      }
    }
    if (without == nullptr) {
      out.push_back(name);
      continue;
    }
    setup->notes.push_back(fmt::format(
        "{} left out: GPU model '{}' has no static layout '{}' in the catalog (static_layouts); "
        "name the policies with --policies, or give --static-layout {}",
        name, without->name(), layout, kBestForMix));
  }
  return out;
}

std::vector<std::string> InertConfigNotes(const SchedulerOptions& options,
                                          const ExplicitOptions& given, const std::string& policy) {
  SimSetup setup;
  setup.scheduler = options;
  setup.explicit_options = given;
  // A key written with the value the policy runs with anyway is no choice to warn about: every
  // printed default config (`serve --print-default-config`) writes every key, and warned about
  // its own defaults at each start (2 to 6 lines a trial could not silence).
  const SchedulerOptions own = OptionsForPolicy(policy, SchedulerOptions{}, ExplicitOptions{});
  for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
    if (spec.given != nullptr && spec.get(options) == spec.get(own)) {
      setup.explicit_options.*(spec.given) = false;
    }
  }
  std::vector<std::string> notes = InertOptionNotes(setup, {policy});
  for (std::string& n : notes) {
    for (size_t at = n.find("--"); at != std::string::npos; at = n.find("--", at)) {
      n.replace(at, 2, "scheduler.");
    }
  }
  return notes;
}

std::vector<std::string> InertOptionNotes(const SimSetup& setup,
                                          const std::vector<std::string>& policies) {
  std::vector<std::string> notes;
  static const std::vector<InertGroup> kGroups = {
      {{"evacuation"}, true},
      // The overtaking guard (§5), given where the queue is in arrival order.
      {{"overtake-guard"}, true},
      // Limits weighed by what they predict (§5), given where the queue is in arrival order.
      {{"limit-power"}, true},
      // Room kept by evacuations (§13), given where no evacuation happens.
      {{"evacuation-keeps-room"}, true},
      // When and for whom an evacuation acts (§13), given where none happens.
      {{"evacuation-min-wait", "evacuation-min-slices", "evacuation-when"}, false},
      // The cost model and budget of a move (§6, §13), given where no job moves.
      {{"migration-cooldown", "migration-fixed-s", "migration-gbps", "switch-s",
        "checkpoint-interval", "defrag-passes", "admission-move-budget"},
       false},
      // The shape of the completion and periodic passes, given where none runs (§6, §13).
      {{"defrag-interval", "max-moves-per-pass", "migration-order"}, false},
      // The shape of a look-ahead reservation, given where none is made (§13).
      {{"reservation-slack", "reservation-horizon", "reservation-keep", "reservation-oldest"},
       false},
      // The horizon's growth with the wait, given where there is no reservation or no horizon.
      {{"reservation-ageing"}, true},
      // The placement options of the policies' own choice (PolicyInfo::reads).
      {{"threshold"}, true},
      {{"metric"}, true},
      {{"frag-objective"}, true},
      {{"reuse-first"}, true},
      {{"anchored-together"}, true},
      {{"idle-ttl"}, true},
      {{"static-layout"}, true},
      {{"reserve-full"}, true},
  };
  for (const InertGroup& g : kGroups) {
    std::vector<std::string> given;
    for (std::string_view name : g.options) {
      if (!GivenOption(setup, name)) continue;
      const SchedulerOptionSpec* spec = FindSchedulerOption(name);
      given.push_back(g.with_value && spec != nullptr
                          ? fmt::format("--{} {}", name, spec->get(setup.scheduler))
                          : fmt::format("--{}", name));
    }
    if (given.empty()) continue;
    // The policies (the reference excluded) that do not read it, grouped by why.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_why;
    for (const std::string& p : policies) {
      if (p == kFragFreeReference) continue;
      const std::string why = WhyInert(g.options.front(), p, setup.SchedulerFor(p));
      if (why.empty()) continue;
      auto it =
          std::find_if(by_why.begin(), by_why.end(), [&](const auto& w) { return w.first == why; });
      if (it == by_why.end()) it = by_why.insert(by_why.end(), {why, {}});
      it->second.push_back(p);
    }
    for (const auto& [why, none] : by_why) {
      notes.push_back(fmt::format("{} {} no effect on {} ({})", JoinAnd(given),
                                  given.size() == 1 ? "has" : "have", fmt::join(none, ", "), why));
    }
  }
  // The reference reads only --max-wait (sim/frag_free.h): its own placement and queue.
  if (std::find(policies.begin(), policies.end(), kFragFreeReference) != policies.end()) {
    const SchedulerOptions defaults;
    std::vector<std::string> given;
    for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
      if (spec.name == "max-wait") continue;
      const std::string value = spec.get(setup.scheduler);
      if (value != spec.get(defaults)) given.push_back(fmt::format("--{} {}", spec.name, value));
    }
    if (!given.empty()) {
      notes.push_back(fmt::format(
          "{} {} no effect on {} (it has no placement rules and runs FIFO with backfill; of the "
          "scheduler's options it reads only --max-wait)",
          fmt::join(given, ", "), given.size() == 1 ? "has" : "have", kFragFreeReference));
    }
  }
  return notes;
}

std::string InertSweptOptionNote(const SimSetup& setup, const std::string& policy,
                                 std::string_view option) {
  if (policy == kFragFreeReference) return "";
  const std::string why = WhyInert(option, policy, setup.SchedulerFor(policy));
  if (why.empty()) return "";
  return fmt::format("--{} has no effect on {} ({}): every value runs the same", option, policy,
                     why);
}

nlohmann::ordered_json SimSetup::ToJson(const SimFlags& f) const {
  nlohmann::ordered_json j;
  j["cluster"] = f.cluster;
  j["gpus"] = gpus.size();
  j["workload"] = f.workload;
  j["workload_description"] = workload_label;
  j["jobs"] = jobs.size();
  j["threshold"] = scheduler.threshold;
  j["frag_objective"] = FragObjectiveName(scheduler.frag_objective);
  j["metric"] = scheduler.metric;
  j["demand_window"] = scheduler.demand_window;
  j["reserve_full"] = scheduler.reserve_full;
  j["reuse_first"] = scheduler.reuse_first;
  j["anchored_together"] = scheduler.anchored_together;
  j["joint_placement"] = scheduler.joint_placement;
  auto off_if_negative = [](double v) {
    return v < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
  };
  j["max_skip_seconds"] = off_if_negative(scheduler.max_skip_seconds);
  j["queue_order"] = QueueOrderName(scheduler.queue_order);
  j["overtake_guard"] = off_if_negative(scheduler.overtake_guard);
  j["limit_power"] = scheduler.limit_power == kLimitPowerLearned
                         ? nlohmann::ordered_json("learned")
                         : nlohmann::ordered_json(scheduler.limit_power);
  j["reservation"] = ReservationModeName(scheduler.reservation);
  j["reservation_depth"] = scheduler.reservation_depth;
  j["reservation_slack"] = scheduler.reservation_slack;
  j["reservation_horizon_s"] = off_if_negative(scheduler.reservation_horizon_s);
  j["reservation_ageing"] = scheduler.reservation_ageing;
  j["reservation_keep"] = scheduler.reservation_keep;
  j["reservation_oldest"] = scheduler.reservation_oldest;
  j["reservation_unknown_ends"] = scheduler.reservation_needs_ends ? "skip" : "strict";
  j["evacuation"] = EvacuationScopeName(scheduler.evacuation);
  j["evacuation_min_wait_s"] = scheduler.evacuation_min_wait_s;
  j["evacuation_min_slices"] = scheduler.evacuation_min_slices;
  j["evacuation_when"] = scheduler.evacuation_after_backfill ? "after-backfill" : "before-backfill";
  j["evacuation_keeps_room"] = scheduler.evacuation_keeps_room;
  j["migration_order"] = scheduler.migrate_before_scan ? "before-scan" : "after-scan";
  j["max_wait_s"] = off_if_negative(scheduler.max_wait_s);
  j["idle_ttl_s"] = off_if_negative(scheduler.idle_ttl_s);
  const SchedulerOptions::Migration& mg = scheduler.migration;
  j["migration"] = {{"enabled", mg.enabled},
                    {"defrag_interval_s", mg.defrag_interval_s},
                    {"max_moves_per_pass", mg.max_moves_per_pass},
                    {"cooldown_s", mg.cooldown_s},
                    {"fixed_s", mg.fixed_s},
                    {"gbps", mg.gbps},
                    {"switch_s", mg.switch_s},
                    {"checkpoint_interval_s", mg.checkpoint_interval_s}};
  j["static_layout"] = scheduler.static_layout;
  j["load"] = offered_load > 0 ? nlohmann::ordered_json(offered_load) : nlohmann::ordered_json();
  // How the arrival times came: regenerated (poisson, trace-order), the file's own ("file": a trace
  // without --load; the flag's default said "poisson" there), none in fill mode.
  j["arrivals"] = f.mode == "fill"   ? nlohmann::ordered_json()
                  : offered_load > 0 ? nlohmann::ordered_json(f.arrivals)
                                     : nlohmann::ordered_json("file");
  j["seed"] = f.seed;
  j["pcie_share"] = f.pcie_share;
  j["fraction_rule"] = f.fraction_rule;
  j["mode"] = f.mode;
  j["fill_target"] = f.fill_target;
  // With --reconfig-latency: reconfig_ms only when both kinds are one fixed value, and the
  // distributions' SPECs (the key is absent otherwise, as before the flag existed).
  if (sim.reconfig_latency == nullptr) {
    j["reconfig_ms"] = f.reconfig_ms;
  } else {
    const ReconfigLatency& rl = *sim.reconfig_latency;
    j["reconfig_ms"] =
        rl.IsFixedUniform() ? nlohmann::ordered_json(rl.create.fixed_ms) : nlohmann::ordered_json();
    j["reconfig_latency"] = {{"create", rl.create.ToString()},
                             {"destroy", rl.destroy.ToString()},
                             {"create_mean_ms", rl.create.MeanMs()},
                             {"destroy_mean_ms", rl.destroy.MeanMs()}};
  }
  j["contention"] = !f.no_contention;
  j["expected_ends"] = f.expected_ends;
  j["expected_ends_oracle"] = f.expected_ends == "known";
  j["duration_cap_s"] =
      f.duration_cap > 0 ? nlohmann::ordered_json(f.duration_cap) : nlohmann::ordered_json();
  j["user_estimates"] = sim.user_estimates ? "model" : "none";
  j["replicas"] = f.replicas;
  j["perturbation"] = perturbation;
  j["jitter"] =
      jitter_applied > 0 ? nlohmann::ordered_json(jitter_applied) : nlohmann::ordered_json();
  j["notes"] = notes;
  return j;
}

void AddReplicaFlags(CLI::App* cmd, SimFlags* f) {
  cmd->add_option("--replicas", f->replicas,
                  "Runs of every simulation that differ only by a seeded perturbation (§9): "
                  "replica r uses --seed + r; a workload with its own arrival times is jittered "
                  "(--jitter). Every figure is then the mean with its 95% confidence interval")
      ->check(WholeNumber(1, 10000))
      ->capture_default_str();
  cmd->add_option(
         "--jitter", f->jitter,
         "Replicas of a workload whose arrival times are not drawn from --seed (a trace "
         "file without --load, or one with --arrivals trace-order): every arrival gap and duration "
         "times an independent factor uniform in [1-F, 1+F], seeded per replica; in "
         "[0, 1)")
      ->check(FiniteNumber("a number in [0, 1)", [](double v) { return v >= 0 && v < 1; }))
      ->each([f](const std::string&) { f->jitter_given = true; })
      ->capture_default_str();
}

StatusOr<std::vector<std::string>> ParsePolicyList(const std::vector<std::string>& values) {
  std::vector<std::string> names;
  std::vector<std::string> policies;  // of each name: its policy's name (an alias's own name)
  for (const std::string& value : values) {
    size_t pos = 0;
    for (int entry = 1;; ++entry) {
      const size_t comma = std::min(value.find(',', pos), value.size());
      const std::string name = value.substr(pos, comma - pos);
      if (name.empty()) {
        return InvalidArgumentError(
            fmt::format("entry {} of '{}' is empty: give comma-separated policy names, each once",
                        entry, value));
      }
      const StatusOr<const PolicyInfo*> info = FindPolicy(name);
      const std::string policy = info.ok() ? (*info)->name : name;
      for (size_t i = 0; i < names.size(); ++i) {
        if (policies[i] != policy) continue;
        if (names[i] == name) {
          return InvalidArgumentError(fmt::format("'{}' is given twice", name));
        }
        return InvalidArgumentError(fmt::format(
            "'{}' and '{}' are the same policy ({}), given twice", names[i], name, policy));
      }
      names.push_back(name);
      policies.push_back(policy);
      if (comma == value.size()) break;
      pos = comma + 1;
    }
  }
  return names;
}

void AddPoliciesFlag(CLI::App* cmd, std::vector<std::string>* policies, const std::string& help) {
  // No CLI11 delimiter: it drops empty entries ("first-fit,,lb" read as first-fit,lb), which
  // ParsePolicyList refuses.
  cmd->add_option_function<std::vector<std::string>>(
      "--policies",
      [policies](const std::vector<std::string>& values) {
        StatusOr<std::vector<std::string>> list = ParsePolicyList(values);
        if (!list.ok()) throw CLI::ValidationError("--policies", list.status().message());
        *policies = std::move(*list);
      },
      help);
}

std::vector<InputFile> SimInputFiles(const SimFlags& f, Context& ctx) {
  std::vector<InputFile> out;
  const std::vector<std::string>& catalogs = ctx.extra_catalogs;
  const std::string& w = f.workload;
  if (w.rfind("alibaba:", 0) == 0) {
    out.push_back({"--workload", w.substr(std::string_view("alibaba:").size())});
  } else if (w != "paper-mix" && w != "churn" && w != "serving" && w != "training") {
    out.push_back({"--workload", w});
  }
  for (const std::string& c : catalogs) out.push_back({"--catalog", c});
  // --reconfig-latency [create=|destroy=]empirical:FILE reads FILE.
  for (std::string_view spec : f.reconfig_latency) {
    for (std::string_view kind : {"create=", "destroy="}) {
      if (spec.substr(0, kind.size()) == kind) spec.remove_prefix(kind.size());
    }
    constexpr std::string_view kEmpirical = "empirical:";
    if (spec.substr(0, kEmpirical.size()) == kEmpirical && spec.size() > kEmpirical.size()) {
      out.push_back({"--reconfig-latency", std::string(spec.substr(kEmpirical.size()))});
    }
  }
  // Every GPU model file the run loads (the data folder's gpus/*.json and the files of a
  // --catalog folder): an output over one would break every later run. A catalog that fails to
  // load is the run's own error, reported when it loads it.
  if (StatusOr<const Catalog*> loaded = ctx.catalog(); loaded.ok()) {
    for (const CatalogSource& src : ctx.catalog_sources()) {
      const std::string who = src.kind == "bundled" ? fmt::format("the GPU catalog ({})", src.path)
                                                    : std::string("--catalog");
      for (const std::string& file : src.files) out.push_back({who, file});
    }
  }
  return out;
}

StatusOr<std::vector<SimSetup>> BuildReplicaSetups(const SimFlags& flags, Context& ctx,
                                                   RunShape shape) {
  const int n = std::max(1, flags.replicas);
  shape.workloads = std::max(1, shape.workloads) * n;
  std::vector<SimSetup> out;
  for (int r = 0; r < n; ++r) {
    SimFlags fr = flags;
    fr.seed = ReplicaSeed(flags.seed, r);
    if (r > 0) fr.no_memory_check = true;  // the first one checked all of them
    auto s = BuildSimSetup(fr, ctx, shape);
    if (!s.ok()) return s.status();
    s->replica = r;
    if (s->perturbation != "seed") {
      if ((n > 1 || flags.jitter_given) && flags.jitter > 0) {
        JitterWorkload(&s->jobs, flags.jitter, fr.seed);
        s->perturbation = "jitter";
        s->jitter_applied = flags.jitter;
        s->workload_label += fmt::format(", arrival gaps and durations jittered by {:g}% (seed {})",
                                         100 * flags.jitter, fr.seed);
      }
    } else if (flags.jitter_given) {
      return InvalidArgumentError(
          "--jitter applies to workloads whose arrival times are not drawn from --seed (a trace "
          "file without --load, or one with --arrivals trace-order); paper-mix, churn and Poisson "
          "arrivals differ between replicas by their seed");
    }
    out.push_back(std::move(*s));
  }
  return out;
}

int ParallelRuns(size_t count, int threads) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t parallel = threads > 0 ? static_cast<size_t>(threads) : hw;
  return static_cast<int>(std::max<size_t>(1, std::min(count, parallel)));
}

void RunInParallel(size_t count, int threads, const std::function<void(size_t)>& run) {
  if (count == 0) return;
  const size_t parallel = static_cast<size_t>(ParallelRuns(count, threads));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) run(i);
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < parallel; ++t) workers.emplace_back(worker);
  worker();
  for (auto& w : workers) w.join();
}

std::vector<StatusOr<SimResult>> RunPoliciesOnReplicas(const std::vector<SimSetup>& setups,
                                                       const std::vector<std::string>& policies,
                                                       int threads, Context& ctx) {
  const size_t n_policies = policies.size(), n_replicas = setups.size();
  const bool fill = !setups.empty() && setups.front().sim.mode == SimMode::kFill;
  ProgressPrinter progress(ctx);
  std::vector<StatusOr<SimResult>> results(n_policies * n_replicas,
                                           Status(StatusCode::kInternal, "not run"));
  RunInParallel(results.size(), threads, [&](size_t k) {
    const size_t i = k % n_policies, r = k / n_policies;
    const SimSetup& s = setups[r];
    SimOptions o = s.sim;
    const std::string label = n_replicas > 1 ? fmt::format("{} #{}", policies[i], r) : policies[i];
    o.progress = [&, label](const SimProgress& p) { progress.Report(label, p, fill); };
    results[k] = RunSimulation(s.gpus, s.jobs, policies[i], s.SchedulerFor(policies[i]), o);
  });
  return results;
}

void ProgressPrinter::Report(const std::string& policy, const SimProgress& p, bool is_fill) {
  if (ctx_.quiet || p.total <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const double pct = 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total);
  if (is_fill) {
    *ctx_.err << fmt::format("migsched: {:<15} {:5.1f}% of the fill target\n", policy, pct);
  } else {
    *ctx_.err << fmt::format("migsched: {:<15} {:5.1f}% ({}/{} jobs done, simulated {:.1f} h)\n",
                             policy, pct, p.done, p.total, p.sim_time_s / 3600);
  }
  ctx_.err->flush();
}

}  // namespace migsched::cli
