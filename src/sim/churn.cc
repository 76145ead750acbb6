#include "sim/churn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/numbers.h"
#include "core/rng.h"
#include "sim/arrivals.h"
#include "sim/paper_mix.h"

namespace migsched {
namespace {

// Phase changes walked within one gap before the rest of it is drawn at the long-run rate
// (sim/churn.h). Reached only at loads of about 1e-5 and below.
constexpr int kMaxPhaseChangesPerGap = 1000;

Status CheckOptions(const ChurnOptions& o) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("churn: " + what); };
  if (o.num_jobs < 0) return bad(fmt::format("num_jobs must be >= 0, got {}", o.num_jobs));
  if (o.num_gpus < 1) return bad(fmt::format("num_gpus must be >= 1, got {}", o.num_gpus));
  if (!std::isfinite(o.load) || !(o.load > 0)) {
    return bad(fmt::format("load must be a number > 0, got {}", o.load));
  }
  for (auto [name, v] : {std::pair{"pcie_share", o.pcie_share},
                         {"long_share", o.long_share},
                         {"latency_sensitive_share", o.latency_sensitive_share},
                         {"restart_share", o.restart_share},
                         {"none_share", o.none_share}}) {
    if (!InUnit(v)) return bad(fmt::format("{} must be in [0, 1], got {}", name, v));
  }
  if (o.restart_share + o.none_share > 1) {
    return bad("restart_share + none_share must be at most 1");
  }
  if (!std::isfinite(o.mix_spread) || o.mix_spread < 0 || o.mix_spread >= 1) {
    return bad(fmt::format("mix_spread must be in [0, 1), got {}", o.mix_spread));
  }
  for (auto [lo, hi] : {std::pair{o.short_min_s, o.short_max_s}, {o.long_min_s, o.long_max_s}}) {
    if (!std::isfinite(lo) || !(lo > 0) || !std::isfinite(hi) || hi < lo) {
      return bad(fmt::format("durations need 0 < min <= max, got {} and {}", lo, hi));
    }
  }
  if (!(o.calm_mean_s > 0) || !(o.burst_mean_s > 0) || !std::isfinite(o.calm_mean_s) ||
      !std::isfinite(o.burst_mean_s) || !std::isfinite(o.burst_factor) || o.burst_factor < 1) {
    return bad("phases need calm_mean_s > 0, burst_mean_s > 0 and burst_factor >= 1");
  }
  return Status::Ok();
}

double LogUniform(double lo, double hi, double u) {
  return std::min(hi, std::max(lo, std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)))));
}

}  // namespace

const std::vector<ChurnClass>& ChurnClasses() {
  static const std::vector<ChurnClass> k = {{1, 0.35}, {2, 0.25}, {3, 0.2}, {4, 0.1}, {7, 0.1}};
  return k;
}

StatusOr<std::vector<WorkloadJob>> GenerateChurn(const GpuModel& model, const ChurnOptions& o) {
  RETURN_IF_ERROR(CheckOptions(o));
  Rng rng(o.seed);
  std::vector<double> weights;
  for (const ChurnClass& c : ChurnClasses()) {
    weights.push_back(c.weight * (1 - o.mix_spread + 2 * o.mix_spread * rng.Uniform01()));
  }
  const int width = std::max<int>(4, static_cast<int>(std::to_string(o.num_jobs).size()));
  std::vector<WorkloadJob> jobs;
  jobs.reserve(o.num_jobs);
  for (int i = 0; i < o.num_jobs; ++i) {
    const int c = rng.Choice(weights);
    const bool pcie = rng.Uniform01() < o.pcie_share;
    const bool big_bloom = rng.UniformInt(0, 1) == 1;
    const bool is_long = rng.Uniform01() < o.long_share;
    const double u = rng.Uniform01();
    const bool latency_sensitive = rng.Uniform01() < o.latency_sensitive_share;
    const double m = rng.Uniform01();
    const ReferenceJob& kind =
        !pcie ? kResNet50Inference : (big_bloom ? kBloom7b1Offload : kBloom560mOffload);
    WorkloadJob j;
    j.name = fmt::format("ch-{:0{}}", i + 1, width);
    j.gpu_fraction = ChurnClasses()[c].compute_slices / 7.0;
    j.fraction_rule = FractionRule::kCompute;
    j.count = 1;
    j.duration_s = is_long ? LogUniform(o.long_min_s, o.long_max_s, u)
                           : LogUniform(o.short_min_s, o.short_max_s, u);
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
  a.demand = [&model](const Job& j) {
    const int p = ResolveProfile(model, j);
    return p < 0 ? 0.0
                 : static_cast<double>(model.profile(p).compute_slices) / model.compute_slices();
  };
  ASSIGN_OR_RETURN(const double gap, MeanGapForLoad(jobs, a));
  // Long-run arrival rate (c/(c+b)) / calm_gap + (b/(c+b)) f / calm_gap = 1 / gap.
  const double c = o.calm_mean_s, b = o.burst_mean_s, f = o.burst_factor;
  const double calm_gap = gap * (c + f * b) / (c + b);
  Rng arrivals(Rng::DeriveSeed(o.seed, 1));
  bool burst = false;
  double t = 0, phase_end = arrivals.Exponential(c);
  for (size_t i = 1; i < jobs.size(); ++i) {
    // Memoryless: a gap that crosses a phase change is redrawn from there.
    int changes = 0;
    while (true) {
      const double next = t + arrivals.Exponential(burst ? calm_gap / f : calm_gap);
      if (next <= phase_end) {
        t = next;
        break;
      }
      if (++changes > kMaxPhaseChangesPerGap) {
        // Phases far shorter than the gap (a tiny --load): their rates average out, so the rest
        // of the gap is drawn at the long-run rate 1 / gap, without walking millions of phases.
        t = phase_end + arrivals.Exponential(gap);
        phase_end = t + arrivals.Exponential(burst ? b : c);
        break;
      }
      t = phase_end;
      burst = !burst;
      phase_end = t + arrivals.Exponential(burst ? b : c);
    }
    jobs[i].arrival_s = t;
  }
  return jobs;
}

}  // namespace migsched
