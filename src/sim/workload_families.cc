#include "sim/workload_families.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/numbers.h"
#include "core/rng.h"
#include "sim/arrivals.h"
#include "sim/paper_mix.h"

namespace migsched {
namespace {

Status CheckCommon(const char* family, int num_jobs, int num_gpus, double load,
                   const std::vector<std::pair<int, double>>& classes,
                   std::initializer_list<std::pair<const char*, double>> shares) {
  auto bad = [family](const std::string& what) {
    return InvalidArgumentError(fmt::format("{}: {}", family, what));
  };
  if (num_jobs < 0) return bad(fmt::format("num_jobs must be >= 0, got {}", num_jobs));
  if (num_gpus < 1) return bad(fmt::format("num_gpus must be >= 1, got {}", num_gpus));
  if (!std::isfinite(load) || !(load > 0)) {
    return bad(fmt::format("load must be a number > 0, got {}", load));
  }
  double sum = 0;
  for (const auto& [slices, w] : classes) {
    if (slices < 1 || slices > 7 || !std::isfinite(w) || w < 0) {
      return bad("classes need compute slices in 1..7 and weights >= 0");
    }
    sum += w;
  }
  if (!(sum > 0)) return bad("the class weights must have a positive sum");
  for (const auto& [name, v] : shares) {
    if (!InUnit(v)) return bad(fmt::format("{} must be in [0, 1], got {}", name, v));
  }
  return Status::Ok();
}

std::vector<double> Weights(const std::vector<std::pair<int, double>>& v) {
  std::vector<double> w;
  for (const auto& p : v) w.push_back(p.second);
  return w;
}

double LogUniform(double lo, double hi, double u) {
  return std::min(hi, std::max(lo, std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)))));
}

// Compute share of one GPU of `model` one instance of `j` occupies.
std::function<double(const Job&)> Demand(const GpuModel& model) {
  return [&model](const Job& j) {
    const int p = ResolveProfile(model, j);
    return p < 0 ? 0.0
                 : static_cast<double>(model.profile(p).compute_slices) / model.compute_slices();
  };
}

std::string Name(const char* prefix, int i, int n) {
  const int width = std::max<int>(4, static_cast<int>(std::to_string(n).size()));
  return fmt::format("{}-{:0{}}", prefix, i + 1, width);
}

}  // namespace

StatusOr<std::vector<WorkloadJob>> GenerateServing(const GpuModel& model, const ServingOptions& o) {
  RETURN_IF_ERROR(CheckCommon("serving", o.num_jobs, o.num_gpus, o.load, o.classes,
                              {{"multi_share", o.multi_share},
                               {"latency_sensitive_share", o.latency_sensitive_share},
                               {"pcie_share", o.pcie_share},
                               {"restart_share", o.restart_share},
                               {"none_share", o.none_share},
                               {"diurnal_amplitude", o.diurnal_amplitude}}));
  auto bad = [](const std::string& what) { return InvalidArgumentError("serving: " + what); };
  if (o.restart_share + o.none_share > 1) {
    return bad("restart_share + none_share must be at most 1");
  }
  if (o.multi_count < 2) return bad(fmt::format("multi_count must be >= 2, got {}", o.multi_count));
  if (!std::isfinite(o.lifetime_min_s) || !(o.lifetime_min_s > 0) ||
      !std::isfinite(o.lifetime_max_s) || o.lifetime_max_s < o.lifetime_min_s) {
    return bad(fmt::format("lifetimes need 0 < min <= max, got {} and {}", o.lifetime_min_s,
                           o.lifetime_max_s));
  }
  if (!std::isfinite(o.lifetime_alpha) || !(o.lifetime_alpha > 0)) {
    return bad(fmt::format("lifetime_alpha must be > 0, got {}", o.lifetime_alpha));
  }
  if (!std::isfinite(o.diurnal_period_s) || !(o.diurnal_period_s > 0)) {
    return bad(fmt::format("diurnal_period_s must be > 0, got {}", o.diurnal_period_s));
  }
  Rng rng(o.seed);
  const std::vector<double> weights = Weights(o.classes);
  const double tail = std::pow(o.lifetime_min_s / o.lifetime_max_s, o.lifetime_alpha);
  std::vector<WorkloadJob> jobs;
  jobs.reserve(o.num_jobs);
  for (int i = 0; i < o.num_jobs; ++i) {
    const int c = rng.Choice(weights);
    const bool multi = rng.Uniform01() < o.multi_share;
    const double u = rng.Uniform01();
    const bool latency_sensitive = rng.Uniform01() < o.latency_sensitive_share;
    const bool pcie = rng.Uniform01() < o.pcie_share;
    const double m = rng.Uniform01();
    const ReferenceJob& kind = pcie ? kBloom560mOffload : kResNet50Inference;
    WorkloadJob j;
    j.name = Name("sv", i, o.num_jobs);
    j.gpu_fraction = o.classes[c].first / 7.0;
    j.fraction_rule = FractionRule::kCompute;
    j.count = multi ? o.multi_count : 1;
    j.duration_s =
        std::min(o.lifetime_max_s,
                 std::max(o.lifetime_min_s,
                          o.lifetime_min_s / std::pow(1 - u * (1 - tail), 1 / o.lifetime_alpha)));
    j.pcie_gbps = kind.pcie_gbps;
    j.alpha = kind.alpha;
    j.latency_sensitive = latency_sensitive;
    j.migratable = m < o.none_share                     ? Migratable::kNone
                   : m < o.none_share + o.restart_share ? Migratable::kRestart
                                                        : Migratable::kCheckpoint;
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) return jobs;
  ArrivalOptions a;
  a.load = o.load;
  a.num_gpus = o.num_gpus;
  a.demand = Demand(model);
  ASSIGN_OR_RETURN(const double gap, MeanGapForLoad(jobs, a));
  // Thinning: candidates at the peak rate (1 + A) / G, each kept with
  // probability rate(t) / peak.
  const double amp = o.diurnal_amplitude;
  const double peak_gap = gap / (1 + amp);
  Rng arrivals(Rng::DeriveSeed(o.seed, 1));
  double t = 0;
  for (size_t i = 1; i < jobs.size(); ++i) {
    while (true) {
      t += arrivals.Exponential(peak_gap);
      const double rate = 1 + amp * std::sin(2 * std::numbers::pi * t / o.diurnal_period_s);
      if (arrivals.Uniform01() * (1 + amp) < rate) break;
    }
    jobs[i].arrival_s = t;
  }
  return jobs;
}

StatusOr<std::vector<WorkloadJob>> GenerateTraining(const GpuModel& model,
                                                    const TrainingOptions& o) {
  RETURN_IF_ERROR(
      CheckCommon("training", o.num_jobs, o.num_gpus, o.load, o.classes,
                  {{"pcie_share", o.pcie_share}, {"checkpoint_share", o.checkpoint_share}}));
  auto bad = [](const std::string& what) { return InvalidArgumentError("training: " + what); };
  double gang_sum = 0;
  for (const auto& [size, w] : o.gang_sizes) {
    if (size < 1 || !std::isfinite(w) || w < 0) {
      return bad("gang_sizes need sizes >= 1 and weights >= 0");
    }
    gang_sum += w;
  }
  if (!(gang_sum > 0)) return bad("the gang size weights must have a positive sum");
  if (!std::isfinite(o.duration_min_s) || !(o.duration_min_s > 0) ||
      !std::isfinite(o.duration_max_s) || o.duration_max_s < o.duration_min_s) {
    return bad(fmt::format("durations need 0 < min <= max, got {} and {}", o.duration_min_s,
                           o.duration_max_s));
  }
  Rng rng(o.seed);
  const std::vector<double> weights = Weights(o.classes);
  const std::vector<double> gang_weights = Weights(o.gang_sizes);
  std::vector<WorkloadJob> jobs;
  jobs.reserve(o.num_jobs);
  for (int i = 0; i < o.num_jobs; ++i) {
    const int c = rng.Choice(weights);
    const int g = rng.Choice(gang_weights);
    const double u = rng.Uniform01();
    const bool pcie = rng.Uniform01() < o.pcie_share;
    const bool checkpoint = rng.Uniform01() < o.checkpoint_share;
    const ReferenceJob& kind = pcie ? kBloom7b1Offload : kResNet50Inference;
    WorkloadJob j;
    j.name = Name("tr", i, o.num_jobs);
    j.gpu_fraction = o.classes[c].first / 7.0;
    j.fraction_rule = FractionRule::kCompute;
    // At most what the cluster could hold at once on `model`.
    int per_gpu = 1;
    if (const int p = ResolveProfile(model, j); p >= 0) {
      const Profile& pr = model.profile(p);
      per_gpu = std::max(1, std::min({model.compute_slices() / pr.compute_slices,
                                      model.memory_slices() / pr.memory_slices, pr.max_instances}));
    }
    j.count = std::min(o.gang_sizes[g].first, per_gpu * o.num_gpus);
    j.duration_s = LogUniform(o.duration_min_s, o.duration_max_s, u);
    j.pcie_gbps = kind.pcie_gbps;
    j.alpha = kind.alpha;
    j.latency_sensitive = false;
    j.migratable = checkpoint ? Migratable::kCheckpoint : Migratable::kRestart;
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) return jobs;
  ArrivalOptions a;
  a.load = o.load;
  a.num_gpus = o.num_gpus;
  a.seed = Rng::DeriveSeed(o.seed, 1);
  a.demand = Demand(model);
  RETURN_IF_ERROR(RegenerateArrivals(&jobs, a));
  return jobs;
}

}  // namespace migsched
