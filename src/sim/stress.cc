#include "sim/stress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "core/clock.h"
#include "sched/option_table.h"
#include "sched/policies/policies.h"
#include "sched/policy.h"
#include "sim/reconfig_latency.h"
#include "sim/simulator.h"

namespace migsched {
namespace {

// Candidate values of the table's numbers and integers; each option keeps those its own check
// accepts (a negative number is "off" where the table allows it, e.g. --max-wait -1). 0 is
// among them: --max-wait 0, --defrag-interval 0 (no periodic pass), --migration-cooldown 0.
const std::vector<std::string>& NumberCandidates() {
  static const std::vector<std::string> v = {"-1", "0", "0.5", "1", "5", "30", "120", "300"};
  return v;
}
const std::vector<std::string>& IntegerCandidates() {
  static const std::vector<std::string> v = {"0", "1", "2", "3", "4", "8", "16"};
  return v;
}

std::string ModelLabel(const GpuModel& m) {
  return m.short_names().empty() ? m.name() : m.short_names().front();
}

// Static layout names that every model of `gpus` has.
std::vector<std::string> SharedLayouts(const std::vector<const GpuModel*>& gpus) {
  std::vector<std::string> shared;
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::vector<std::string> names;
    for (const auto& [name, instances] : gpus[i]->spec().static_layouts) names.push_back(name);
    if (i == 0) {
      shared = names;
    } else {
      std::erase_if(shared, [&](const std::string& n) {
        return std::find(names.begin(), names.end(), n) == names.end();
      });
    }
  }
  return shared;
}

template <typename T>
const T& Pick(const std::vector<T>& v, Rng& rng) {
  return v[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(v.size()) - 1))];
}

Status Fail(const std::string& msg) { return InternalError(msg); }

}  // namespace

void StressCounts::Add(const StressCounts& o) {
  workloads += o.workloads;
  jobs += o.jobs;
  decisions += o.decisions;
  invariant_checks += o.invariant_checks;
  migrations += o.migrations;
  rejected += o.rejected;
}

std::string StressCase::ClusterSpec() const {
  std::string out;
  for (const auto& [count, model] : groups) {
    out += fmt::format("{}{}x{}", out.empty() ? "" : ",", count, ModelLabel(*model));
  }
  return out;
}

StatusOr<SchedulerOptions> StressCase::Scheduler() const {
  SchedulerOptions o;
  ExplicitOptions given;
  for (const auto& [name, value] : options) {
    const SchedulerOptionSpec* spec = FindSchedulerOption(name);
    if (spec == nullptr) return InvalidArgumentError(fmt::format("unknown option '{}'", name));
    RETURN_IF_ERROR(spec->Apply(value, &o, &given).WithPrefix("--" + name));
  }
  return OptionsForPolicy(policy, o, given);
}

SimOptions StressCase::Sim() const {
  SimOptions s;
  s.mode = SimMode::kOnline;
  s.reconfig_ms = reconfig_ms;
  s.reconfig_latency = reconfig_latency;
  s.reconfig_seed = 1;  // the command line's --seed 1
  s.contention = contention;
  s.knowledge = knowledge;
  s.user_estimates = user_estimates;
  s.user_estimate_seed = 1;  // the command line's --seed 1
  s.TurnOnChecks();
  s.record_jobs = true;
  s.record_timeline = false;
  return s;
}

std::string StressCase::CommandLine(std::string_view trace_path,
                                    std::string_view extra_args) const {
  std::string cmd = "migsched";
  if (!extra_args.empty()) cmd += fmt::format(" {}", extra_args);
  cmd += fmt::format(" simulate --self-check --cluster {} --workload {} --policy {}", ClusterSpec(),
                     trace_path, policy);
  cmd += fmt::format(" --fraction-rule {}", FractionRuleName(fraction_rule));
  if (reconfig_latency == nullptr) {
    cmd += fmt::format(" --reconfig-ms {}", reconfig_ms);
  } else {
    for (const std::string& spec : reconfig_latency->ToSpecs()) {
      cmd += fmt::format(" --reconfig-latency {}", spec);
    }
  }
  cmd += fmt::format(" --expected-ends {} --user-estimates {}", KnowledgeName(knowledge),
                     user_estimates ? "model" : "none");
  if (!contention) cmd += " --no-contention";
  for (const auto& [name, value] : options) cmd += fmt::format(" --{} {}", name, value);
  return cmd;
}

std::string DrawOptionValue(std::string_view spec_name, const std::vector<const GpuModel*>& gpus,
                            Rng& rng) {
  const SchedulerOptionSpec* spec = FindSchedulerOption(spec_name);
  if (spec == nullptr) return "";
  std::vector<std::string> accepted;
  auto keep_accepted = [&](const std::vector<std::string>& candidates) {
    for (const std::string& v : candidates) {
      SchedulerOptions scratch;
      if (spec->set(v, &scratch).ok()) accepted.push_back(v);
    }
  };
  switch (spec->kind) {
    case OptionKind::kBool:
      keep_accepted({"on", "off"});
      break;
    case OptionKind::kChoice:
      keep_accepted(spec->choices);
      break;
    case OptionKind::kInteger:
      keep_accepted(IntegerCandidates());
      break;
    case OptionKind::kNumber:
      keep_accepted(NumberCandidates());
      keep_accepted({"learned"});  // limit-power's word
      break;
    case OptionKind::kString:
      // The table's only text option names a static layout: one every model of the cluster has.
      keep_accepted(SharedLayouts(gpus));
      break;
  }
  if (accepted.empty()) return "";
  return Pick(accepted, rng);
}

StressCase GenerateStressCase(const Catalog& catalog, uint64_t seed, const StressLimits& limits) {
  Rng rng(seed);
  StressCase c;
  c.seed = seed;
  const std::vector<const GpuModel*> models = catalog.models();
  // The cluster: mostly one model, sometimes two or three (mixed).
  const int max_gpus = std::max(1, limits.max_gpus);
  const double mix = rng.Uniform01();
  const int n_groups = mix < 0.6 ? 1 : mix < 0.85 ? 2 : 3;
  int total = 0;
  std::set<const GpuModel*> used;
  for (int g = 0; g < n_groups && total < max_gpus; ++g) {
    const GpuModel* m = Pick(models, rng);
    const int count = static_cast<int>(rng.UniformInt(1, std::min(3, max_gpus - total)));
    c.groups.emplace_back(count, m);
    for (int i = 0; i < count; ++i) c.gpus.push_back(m);
    total += count;
    used.insert(m);
  }
  // Profile names: every profile of the cluster's models (variants included), and one of a
  // model outside the cluster when there is one (a request the cluster cannot run: rejected).
  std::vector<std::string> names;
  for (const GpuModel* m : used) {
    for (const Profile& p : m->profiles()) names.push_back(p.name);
  }
  std::vector<std::string> foreign;
  for (const GpuModel* m : models) {
    for (const Profile& p : m->profiles()) {
      bool offered = false;
      for (const GpuModel* u : used) offered = offered || u->FindProfile(p.name) >= 0;
      if (!offered) foreign.push_back(p.name);
    }
  }
  // Scheduler and simulator settings.
  const std::vector<std::string> policies = PolicyNames();
  c.policy = rng.Uniform01() < 0.4 ? std::string(kDefaultPolicy) : Pick(policies, rng);
  c.fraction_rule = rng.Uniform01() < 0.5 ? FractionRule::kCompute : FractionRule::kMemory;
  c.reconfig_ms = std::vector<double>{0, 23, 2000}[rng.UniformInt(0, 2)];
  c.knowledge = std::vector<Knowledge>{Knowledge::kLimits, Knowledge::kKnown,
                                       Knowledge::kUnknown}[rng.UniformInt(0, 2)];
  c.user_estimates = rng.Uniform01() < 0.5;
  c.contention = rng.Uniform01() < 0.7;
  for (const GpuModel* m : used) c.contention = c.contention && m->pcie_max_gbps() > 0;
  // Options added to the table later (StressLimits::options_added_later) draw from a stream of
  // their own, so that every other draw of a seed stays as it was.
  Rng later(Rng::DeriveSeed(seed, 0x6c61746572));  // "later"
  for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
    const bool added_later = spec.name == "overtake-guard" || spec.name == "limit-power" ||
                             spec.name == "anchored-together" || spec.name == "reservation-ageing";
    if (added_later && !limits.options_added_later) continue;
    Rng& from = added_later ? later : rng;
    if (from.Uniform01() < 0.5) continue;  // left to its default
    std::string v = DrawOptionValue(spec.name, c.gpus, from);
    if (!v.empty()) c.options.emplace_back(spec.name, std::move(v));
  }
  // A static policy runs a catalog layout that every model of the cluster has (static_layouts is
  // optional in a catalog file): where its layout is missing from one, `static` runs instead,
  // whose layout is chosen from the mix (regression: stress_on_a_model_without_static_layouts).
  bool layout_given = false;
  for (const auto& [name, value] : c.options)
    layout_given = layout_given || name == "static-layout";
  if (!layout_given) {
    const std::string layout =
        OptionsForPolicy(c.policy, SchedulerOptions{}, ExplicitOptions{}).static_layout;
    StatusOr<const PolicyInfo*> info = FindPolicy(c.policy);
    const std::vector<std::string> shared = SharedLayouts(c.gpus);
    if (info.ok() && (*info)->reads.static_layout && layout != kBestForMix &&
        std::find(shared.begin(), shared.end(), layout) == shared.end()) {
      c.policy = "static";
    }
  }
  // Migration needs a policy that creates instances (MakePolicy refuses the pair): not drawn
  // for one that never does.
  StatusOr<std::unique_ptr<PlacementPolicy>> plain = MakePolicy(c.policy, SchedulerOptions{});
  if (plain.ok() && !(*plain)->CreatesInstances()) {
    std::erase_if(c.options, [](const auto& o) { return o.first == "migration"; });
  }
  // The workload.
  const int n_jobs = static_cast<int>(
      rng.UniformInt(std::max(1, limits.min_jobs), std::max(limits.min_jobs, limits.max_jobs)));
  const double mean_gap = std::vector<double>{1, 10, 60}[rng.UniformInt(0, 2)];
  double t = 0;
  for (int i = 0; i < n_jobs; ++i) {
    WorkloadJob j;
    j.name = "j" + std::to_string(i);
    if (rng.Uniform01() < 0.75) t += std::round(rng.Exponential(mean_gap) * 1000) / 1000;
    j.arrival_s = t;  // else: the same time as the previous job
    if (rng.Uniform01() < 0.15) {
      j.gpu_fraction = static_cast<double>(rng.UniformInt(1, 100)) / 100;
    } else if (!foreign.empty() && rng.Uniform01() < 0.03) {
      j.profile = Pick(foreign, rng);
    } else {
      j.profile = Pick(names, rng);
    }
    j.fraction_rule = c.fraction_rule;
    j.count = rng.Uniform01() < 0.7 ? 1 : static_cast<int>(rng.UniformInt(2, 8));
    // 1 s to about 1000 s, log-uniform, in milliseconds.
    j.duration_s = std::round(std::exp(rng.Uniform01() * std::log(1000.0)) * 1000) / 1000;
    const double kind = rng.Uniform01();
    if (kind < 0.4) {
      j.pcie_gbps = 0;
    } else if (kind < 0.6) {
      j.pcie_gbps = 5.7, j.alpha = 1.25;  // §8 reference jobs
    } else if (kind < 0.8) {
      j.pcie_gbps = 17.65, j.alpha = 1.07;
    } else {
      j.pcie_gbps = static_cast<double>(rng.UniformInt(1, 400)) / 10;
      j.alpha = 1 + static_cast<double>(rng.UniformInt(0, 100)) / 100;
    }
    j.latency_sensitive = rng.Uniform01() < 0.2;
    j.migratable = static_cast<Migratable>(rng.UniformInt(0, 2));
    // A time limit for some: usually above the duration, sometimes below (a timeout).
    if (rng.Uniform01() < 0.4) {
      j.time_limit_s = std::round(j.duration_s * (0.5 + 4 * rng.Uniform01()) * 1000) / 1000;
    }
    c.jobs.push_back(std::move(j));
  }
  // Drawn reconfiguration latencies for a third of the cases, from a stream of their own (the
  // draws above stay as they were): operations ending at odd times, heavy tails.
  Rng latency(Rng::DeriveSeed(seed, 0x6c6174656e6379));  // "latency"
  if (latency.Uniform01() < 1.0 / 3) {
    ReconfigLatency rl;
    rl.create = FieldCreateLatency();
    rl.destroy = FieldDestroyLatency();
    const int64_t k = latency.UniformInt(0, 2);
    if (k == 1) rl.create = rl.destroy = LatencyDistribution::Lognormal(23, 2);
    if (k == 2) rl.create = rl.destroy = LatencyDistribution::Lognormal(2000, 0.5);
    c.reconfig_latency = std::make_shared<const ReconfigLatency>(std::move(rl));
  }
  return c;
}

Status CheckStressResult(const StressCase& c, const SimResult& r) {
  const Metrics& m = r.metrics;
  const int64_t n = static_cast<int64_t>(c.jobs.size());
  if (m.jobs_total != n) return Fail(fmt::format("jobs_total {} of {} jobs", m.jobs_total, n));
  if (m.jobs_completed + m.jobs_timeout + m.rejected != n) {
    return Fail(fmt::format("completed {} + timed out {} + rejected {} != {} jobs",
                            m.jobs_completed, m.jobs_timeout, m.rejected, n));
  }
  if (m.reconfigurations != m.creates + m.destroys) {
    return Fail(fmt::format("reconfigurations {} != creates {} + destroys {}", m.reconfigurations,
                            m.creates, m.destroys));
  }
  if (m.migrations != m.migrations_intra + m.migrations_inter) {
    return Fail(fmt::format("migrations {} != intra {} + inter {}", m.migrations,
                            m.migrations_intra, m.migrations_inter));
  }
  if (static_cast<int64_t>(r.jobs.size()) != n) {
    return Fail(fmt::format("{} job records of {} jobs", r.jobs.size(), n));
  }
  int64_t reasons = 0;
  for (const auto& [reason, k] : m.rejected_reasons) reasons += k;
  if (reasons != m.rejected) {
    return Fail(fmt::format("{} rejections by reason, {} rejected", reasons, m.rejected));
  }
  StatusOr<SchedulerOptions> options = c.Scheduler();
  const bool migrates = options.ok() && options->migration.enabled;
  int64_t completed = 0, timed_out = 0, moves = 0;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobRecord& rec = r.jobs[i];
    const WorkloadJob& job = c.jobs[i];
    auto bad = [&](const std::string& what) {
      return Fail(fmt::format("job {} ('{}', {}): {}", i, job.name, job.RequestString(), what));
    };
    moves += rec.migrations;
    if (rec.outcome == JobOutcome::kRejected) {
      if (rec.reason.empty()) return bad("rejected without a reason");
      if (!std::isnan(rec.start_s)) return bad("rejected but started");
      if (rec.migrations != 0) return bad("rejected but moved");
      continue;
    }
    const bool timeout = rec.outcome == JobOutcome::kTimeout;
    if ((rec.outcome != JobOutcome::kCompleted && !timeout) || !std::isfinite(rec.end_s)) {
      return bad("accepted but never ended");
    }
    ++(timeout ? timed_out : completed);
    if (!(rec.placed_s >= job.arrival_s)) return bad("placed before it arrived");
    if (!(rec.start_s >= rec.placed_s)) return bad("started before it was placed");
    if (timeout) {
      // Ended at its limit, which the job's own limit or the model of estimates set; a moved
      // job's limit counts from its last relaunch, so each of its runs is within the limit.
      const double runs = 1 + static_cast<double>(rec.migrations);
      if (job.time_limit_s > 0 && !(rec.end_s - rec.start_s <= runs * job.time_limit_s + 1e-6)) {
        return bad(fmt::format("ran {} s over {} run(s) of a {} s limit", rec.end_s - rec.start_s,
                               rec.migrations + 1, job.time_limit_s));
      }
    } else if (!(rec.end_s - rec.start_s >= job.duration_s * (1 - 1e-9) - 1e-9)) {
      // Rate <= 1 (contention only slows), moves only pause or lose work.
      return bad(fmt::format("ran {} s of its {} s", rec.end_s - rec.start_s, job.duration_s));
    }
    const int held = static_cast<int>(std::count(rec.instances.begin(), rec.instances.end(), ';'));
    if (held + 1 != job.count) {
      return bad(fmt::format("held '{}', asked for {} instance(s)", rec.instances, job.count));
    }
    if (rec.migrations > 0 && (job.migratable == Migratable::kNone || !migrates)) {
      return bad(fmt::format("moved {} time(s) but may not move", rec.migrations));
    }
  }
  if (timed_out != m.jobs_timeout) {
    return Fail(fmt::format("{} job records timed out, metrics say {}", timed_out, m.jobs_timeout));
  }
  if (completed != m.jobs_completed) {
    return Fail(
        fmt::format("{} job records completed, metrics say {}", completed, m.jobs_completed));
  }
  if (moves != m.migrations) {
    return Fail(fmt::format("per-job moves add up to {}, metrics say {}", moves, m.migrations));
  }
  return Status();
}

Status RunStressCase(const StressCase& c, StressCounts* counts) {
  const std::string where = fmt::format("stress seed {}", c.seed);
  auto scheduler = c.Scheduler();
  if (!scheduler.ok()) return scheduler.status().WithPrefix(where);
  ManualClock clock;  // decision times are not what is checked; keeps runs reproducible
  SimOptions sim = c.Sim();
  sim.clock = &clock;
  auto r = RunSimulation(c.gpus, c.jobs, c.policy, *scheduler, sim);
  if (!r.ok()) return r.status().WithPrefix(where);
  RETURN_IF_ERROR(CheckStressResult(c, *r).WithPrefix(where));
  if (counts != nullptr) {
    StressCounts one;
    one.workloads = 1;
    one.jobs = static_cast<int64_t>(c.jobs.size());
    one.decisions = r->metrics.decisions;
    one.invariant_checks = r->event_times;
    one.migrations = r->metrics.migrations;
    one.rejected = r->metrics.rejected;
    counts->Add(one);
  }
  return Status();
}

}  // namespace migsched
