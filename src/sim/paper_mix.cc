#include "sim/paper_mix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/numbers.h"
#include "core/rng.h"
#include "sim/arrivals.h"

namespace migsched {
namespace {

Status CheckOptions(const GpuModel& model, const PaperMixOptions& o) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("paper-mix: " + what); };
  if (o.num_jobs < 0) return bad(fmt::format("num_jobs must be >= 0, got {}", o.num_jobs));
  if (o.num_gpus < 1) return bad(fmt::format("num_gpus must be >= 1, got {}", o.num_gpus));
  if (!std::isfinite(o.load) || !(o.load > 0)) {
    return bad(fmt::format("load must be a number > 0, got {}", o.load));
  }
  if (!InUnit(o.pcie_share)) {
    return bad(fmt::format("pcie_share must be in [0, 1], got {}", o.pcie_share));
  }
  if (!InUnit(o.latency_sensitive_share)) {
    return bad(fmt::format("latency_sensitive_share must be in [0, 1], got {}",
                           o.latency_sensitive_share));
  }
  if (!std::isfinite(o.min_duration_s) || !(o.min_duration_s > 0) ||
      !std::isfinite(o.max_duration_s) || o.max_duration_s < o.min_duration_s) {
    return bad(fmt::format("durations need 0 < min_duration_s <= max_duration_s, got {} and {}",
                           o.min_duration_s, o.max_duration_s));
  }
  if (const std::string missing = FirstProfileNotOffered(model, o); !missing.empty()) {
    return bad(fmt::format("profile '{}' is not offered by GPU model '{}'", missing, model.name()));
  }
  double total = 0;
  for (const auto& [name, w] : o.profile_weights) {
    if (!std::isfinite(w) || w < 0) {
      return bad(fmt::format("weight of profile '{}' must be a number >= 0, got {}", name, w));
    }
    total += w;
  }
  if (!(total > 0)) return bad("profile_weights need at least one weight > 0");
  return Status::Ok();
}

}  // namespace

std::string FirstProfileNotOffered(const GpuModel& model, const PaperMixOptions& o) {
  for (const auto& [name, weight] : o.profile_weights) {
    if (model.FindProfile(name) < 0) return name;
  }
  return "";
}

StatusOr<std::vector<WorkloadJob>> GeneratePaperMix(const GpuModel& model,
                                                    const PaperMixOptions& options) {
  RETURN_IF_ERROR(CheckOptions(model, options));
  std::vector<double> weights;
  for (const auto& pw : options.profile_weights) weights.push_back(pw.second);
  const int width = std::max<int>(4, static_cast<int>(std::to_string(options.num_jobs).size()));
  const double log_min = std::log(options.min_duration_s);
  const double log_max = std::log(options.max_duration_s);

  Rng rng(options.seed);
  std::vector<WorkloadJob> jobs;
  jobs.reserve(options.num_jobs);
  for (int i = 0; i < options.num_jobs; ++i) {
    // The five draws, in the documented order.
    const int p = rng.Choice(weights);
    const bool pcie = rng.Uniform01() < options.pcie_share;
    const bool big_bloom = rng.UniformInt(0, 1) == 1;
    const double u = rng.Uniform01();
    const bool latency_sensitive = rng.Uniform01() < options.latency_sensitive_share;

    const ReferenceJob& kind =
        !pcie ? kResNet50Inference : (big_bloom ? kBloom7b1Offload : kBloom560mOffload);
    WorkloadJob j;
    j.name = fmt::format("pm-{:0{}}", i + 1, width);
    j.profile = options.profile_weights[p].first;
    j.count = 1;
    j.duration_s =
        std::min(options.max_duration_s,
                 std::max(options.min_duration_s, std::exp(log_min + u * (log_max - log_min))));
    j.pcie_gbps = kind.pcie_gbps;
    j.alpha = kind.alpha;
    j.latency_sensitive = latency_sensitive;
    j.migratable = options.migratable;
    jobs.push_back(std::move(j));
    if (options.progress && (i + 1) % 65536 == 0) options.progress(i + 1, options.num_jobs);
  }
  if (options.progress) options.progress(options.num_jobs, options.num_jobs);

  ArrivalOptions arrivals;
  arrivals.mode = ArrivalMode::kPoisson;
  arrivals.load = options.load;
  arrivals.num_gpus = options.num_gpus;
  arrivals.seed = Rng::DeriveSeed(options.seed, 1);
  arrivals.demand = [&model](const Job& j) {
    const int p = ResolveProfile(model, j);
    return p < 0 ? 0.0
                 : static_cast<double>(model.profile(p).compute_slices) / model.compute_slices();
  };
  RETURN_IF_ERROR(RegenerateArrivals(&jobs, arrivals));
  return jobs;
}

}  // namespace migsched
