#include "cli/sim_flags.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/cluster.h"
#include "io/alibaba_loader.h"
#include "io/trace_reader.h"
#include "sched/metrics.h"
#include "sim/arrivals.h"
#include "sim/paper_mix.h"

namespace migsched::cli {

void AddSimFlags(CLI::App* cmd, SimFlags* f) {
  cmd->add_option("--cluster", f->cluster,
                  "GPUs: COUNTxMODEL[,COUNTxMODEL...], e.g. 4xA100-40GB,8xH100-80GB "
                  "(models: migsched profiles)")
      ->required();
  cmd->add_option("--workload", f->workload,
                  "FILE (trace .csv or .jsonl, docs/formats/trace.md) | paper-mix | "
                  "alibaba:FILE (cluster-trace-gpu-v2023 pod list)")
      ->required();
  cmd->add_option("--threshold", f->threshold, "Lazy/busy threshold t (spec §3)")
      ->capture_default_str();
  cmd->add_option("--metric", f->metric,
                  fmt::format("Fragmentation metric the policies score by (§2): fragcost, "
                              "blocked-placements or demand-weighted (mfi always uses "
                              "blocked-placements; full defaults to {}, docs/results.md)",
                              kFullDefaultMetric))
      ->check(CLI::IsMember(MetricNames()))
      ->each([f](const std::string&) { f->explicit_options.metric = true; })
      ->capture_default_str();
  cmd->add_option("--demand-window", f->demand_window,
                  "demand-weighted: arrivals in the sliding window giving each profile's share; "
                  "seeded with the first N jobs of the workload")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--reserve-full", f->reserve_full,
                  "Full-size reserve (§4 step 7): keep N GPUs able to host the largest profile "
                  "unless nothing else fits (0 = off)")
      ->check(CLI::NonNegativeNumber)
      ->each([f](const std::string&) { f->explicit_options.reserve_full = true; })
      ->capture_default_str();
  cmd->add_option("--joint-placement", f->joint_placement,
                  "Place the jobs waiting at a decision point jointly (§12): a job that does not "
                  "fit on its own starts with those placed before it when some placement of all "
                  "exists; on | off (default: on for lb+frag and full, off for the baselines)")
      ->check(CLI::IsMember({"on", "off"}))
      ->each([f](const std::string&) { f->explicit_options.joint_placement = true; });
  cmd->add_option("--frag-objective", f->frag_objective,
                  "delta: minimum FragCost change; post: minimum FragCost after placing (§4)")
      ->check(CLI::IsMember({"delta", "post"}))
      ->capture_default_str();
  cmd->add_option("--static-layout", f->static_layout,
                  "Layout the static policy creates on every GPU (catalog static_layouts)")
      ->capture_default_str();
  cmd->add_option("--load", f->load,
                  "Offered load for regenerated arrivals (share of cluster GPU capacity); "
                  "default 0.9 for paper-mix and alibaba:, arrivals kept for a FILE unless given");
  cmd->add_option("--arrivals", f->arrivals,
                  "poisson: Poisson arrivals at --load; trace-order: the trace's order with gaps "
                  "scaled to --load (alibaba:, FILE)")
      ->check(CLI::IsMember({"poisson", "trace-order"}))
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of every random draw (same seed, same run)")
      ->capture_default_str();
  cmd->add_option("--jobs", f->jobs,
                  "paper-mix: number of jobs (default 200); traces: use only the first N jobs "
                  "(0 = all)");
  cmd->add_option("--pcie-share", f->pcie_share, "paper-mix: share of PCIe-bound jobs (§10)")
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
                  "fill mode: stop when requested compute reaches this share of the cluster")
      ->capture_default_str();
  cmd->add_option("--reconfig-ms", f->reconfig_ms,
                  "Cost of one MIG create or destroy, ms, serialised per GPU (§4)")
      ->capture_default_str();
  cmd->add_flag("--no-contention", f->no_contention, "Turn off the PCIe contention model (§8)");
  // §5 queue options, idle-instance retention, §6 migration (docs/migration.md).
  cmd->add_option("--max-skip-seconds", f->max_skip_seconds,
                  "Starvation guard (§5): once the oldest waiting job has waited longer, the GPU "
                  "that would free its placement soonest is reserved for it; < 0 = off")
      ->each([f](const std::string&) { f->explicit_options.max_skip_seconds = true; })
      ->capture_default_str();
  cmd->add_option(
         "--max-wait", f->max_wait,
         "Reject a queued job once its wait reaches this many seconds (§5); < 0 = no limit")
      ->capture_default_str();
  cmd->add_option("--idle-ttl", f->idle_ttl,
                  "Destroy an idle instance unused for this many seconds; < 0 = keep it until its "
                  "space is needed")
      ->capture_default_str();
  cmd->add_option("--defrag-interval", f->migration.defrag_interval_s,
                  "Seconds between periodic migration passes (§6, policies that migrate); 0 = off")
      ->capture_default_str();
  cmd->add_option("--max-moves-per-pass", f->migration.max_moves_per_pass,
                  "Intra-GPU moves per pass and GPU (§6)")
      ->capture_default_str();
  cmd->add_option("--migration-cooldown", f->migration.cooldown_s,
                  "A job moves at most once per this many seconds (§6)")
      ->capture_default_str();
  cmd->add_option("--migration-fixed-s", f->migration.fixed_s,
                  "Fixed part of a state copy, seconds: copy = fixed + memory_gb / gbps (§6)")
      ->capture_default_str();
  cmd->add_option("--migration-gbps", f->migration.gbps, "State copy bandwidth, GB/s (§6)")
      ->capture_default_str();
  cmd->add_option("--switch-s", f->migration.switch_s,
                  "Pause at a move's switch-over, seconds: the only time a moved job stops (§6)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-interval", f->migration.checkpoint_interval_s,
                  "Seconds between checkpoints of `restart` jobs; a move loses the progress since "
                  "the last one (§6)")
      ->capture_default_str();
}

namespace {

// The share of one GPU that one instance of `job` occupies on the first model
// of the cluster that can host it (compute slices of the resolved profile over
// the model's); the job's own fraction (or 1) if none can (it is rejected).
double Demand(const std::vector<const GpuModel*>& models, const Job& job) {
  for (const GpuModel* m : models) {
    const int p = ResolveProfile(*m, job);
    if (p >= 0) return static_cast<double>(m->profile(p).compute_slices) / m->compute_slices();
  }
  return job.gpu_fraction > 0 && job.gpu_fraction <= 1 ? job.gpu_fraction : 1.0;
}

std::vector<const GpuModel*> Distinct(const std::vector<const GpuModel*>& gpus) {
  std::vector<const GpuModel*> out;
  for (const GpuModel* g : gpus) {
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

}  // namespace

StatusOr<SimSetup> BuildSimSetup(const SimFlags& f, Context& ctx) {
  SimSetup s;
  ASSIGN_OR_RETURN(const Catalog* catalog, ctx.catalog());
  auto gpus = ParseClusterSpec(f.cluster, *catalog);
  if (!gpus.ok()) return gpus.status().WithPrefix("--cluster");
  s.gpus = *gpus;
  const std::vector<const GpuModel*> models = Distinct(s.gpus);

  s.scheduler.threshold = f.threshold;
  ASSIGN_OR_RETURN(s.scheduler.frag_objective, ParseFragObjective(f.frag_objective));
  s.scheduler.static_layout = f.static_layout;
  s.scheduler.metric = f.metric;
  s.scheduler.demand_window = f.demand_window;
  s.scheduler.reserve_full = f.reserve_full;
  s.scheduler.joint_placement = f.joint_placement == "on";
  s.scheduler.max_skip_seconds = f.max_skip_seconds;
  s.scheduler.max_wait_s = f.max_wait;
  s.scheduler.idle_ttl_s = f.idle_ttl;
  s.scheduler.migration = f.migration;
  s.explicit_options = f.explicit_options;
  RETURN_IF_ERROR(s.scheduler.Validate().WithPrefix("scheduler options"));
  ASSIGN_OR_RETURN(s.sim.mode, ParseSimMode(f.mode));
  s.sim.fill_target = f.fill_target;
  s.sim.reconfig_ms = f.reconfig_ms;
  s.sim.contention = !f.no_contention;
  RETURN_IF_ERROR(s.sim.Validate().WithPrefix("simulator options"));
  if (f.jobs < 0) return InvalidArgumentError("--jobs must be >= 0");
  if (f.load < 0) return InvalidArgumentError("--load must be > 0");
  ASSIGN_OR_RETURN(FractionRule rule, ParseFractionRule(f.fraction_rule));
  ASSIGN_OR_RETURN(ArrivalMode arrivals, ParseArrivalMode(f.arrivals));

  const double load = f.load > 0 ? f.load : 0.9;
  bool regenerate = false;
  if (f.workload == "paper-mix") {
    PaperMixOptions o;
    o.num_jobs = f.jobs > 0 ? f.jobs : 200;
    o.num_gpus = static_cast<int>(s.gpus.size());
    o.load = load;
    o.pcie_share = f.pcie_share;
    o.seed = f.seed;
    if (models.size() > 1) {
      s.notes.push_back(fmt::format("paper-mix draws its profiles from the first GPU model ({})",
                                    models[0]->name()));
    }
    auto jobs = GeneratePaperMix(*models[0], o);
    if (!jobs.ok()) return jobs.status().WithPrefix("paper-mix");
    s.jobs = std::move(*jobs);
    s.offered_load = load;
    s.workload_label = fmt::format("paper-mix ({} jobs, {:.0f}% PCIe-bound, load {})",
                                   s.jobs.size(), 100 * f.pcie_share, load);
  } else if (f.workload.rfind("alibaba:", 0) == 0) {
    const std::string path = f.workload.substr(8);
    AlibabaOptions o;
    o.fraction_rule = rule;
    ASSIGN_OR_RETURN(AlibabaWorkload w, LoadAlibabaPodList(path, o));
    for (const SkippedPods& sk : w.skipped) s.notes.push_back("skipped " + sk.ToString());
    s.jobs = std::move(w.jobs);
    regenerate = true;
    s.workload_label = fmt::format("alibaba:{}", std::filesystem::path(path).filename().string());
  } else {
    ASSIGN_OR_RETURN(s.jobs, ReadTraceFile(f.workload));
    for (Job& j : s.jobs) j.fraction_rule = rule;  // the trace format has no column for it
    regenerate = f.load > 0;
    s.workload_label = std::filesystem::path(f.workload).filename().string();
  }
  if (f.jobs > 0 && f.workload != "paper-mix" && static_cast<size_t>(f.jobs) < s.jobs.size()) {
    s.notes.push_back(fmt::format("using the first {} of {} jobs (--jobs)", f.jobs, s.jobs.size()));
    s.jobs.resize(f.jobs);
  }
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
  } else if (f.workload != "paper-mix") {
    s.workload_label += fmt::format(" ({} jobs, arrival times from the file)", s.jobs.size());
  }
  if (s.jobs.empty())
    return InvalidArgumentError(fmt::format("--workload {}: no jobs", f.workload));
  return s;
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
  j["joint_placement"] = scheduler.joint_placement;
  auto off_if_negative = [](double v) {
    return v < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
  };
  j["max_skip_seconds"] = off_if_negative(scheduler.max_skip_seconds);
  j["max_wait_s"] = off_if_negative(scheduler.max_wait_s);
  j["idle_ttl_s"] = off_if_negative(scheduler.idle_ttl_s);
  const SchedulerOptions::Migration& mg = scheduler.migration;
  j["migration"] = {{"defrag_interval_s", mg.defrag_interval_s},
                    {"max_moves_per_pass", mg.max_moves_per_pass},
                    {"cooldown_s", mg.cooldown_s},
                    {"fixed_s", mg.fixed_s},
                    {"gbps", mg.gbps},
                    {"switch_s", mg.switch_s},
                    {"checkpoint_interval_s", mg.checkpoint_interval_s}};
  j["static_layout"] = scheduler.static_layout;
  j["load"] = offered_load > 0 ? nlohmann::ordered_json(offered_load) : nlohmann::ordered_json();
  j["arrivals"] = f.arrivals;
  j["seed"] = f.seed;
  j["pcie_share"] = f.pcie_share;
  j["fraction_rule"] = f.fraction_rule;
  j["mode"] = f.mode;
  j["fill_target"] = f.fill_target;
  j["reconfig_ms"] = f.reconfig_ms;
  j["contention"] = !f.no_contention;
  j["notes"] = notes;
  return j;
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
