// static (§11): a fixed layout per GPU, created once before the first job; a
// job waits for an idle instance of exactly its profile, lowest GPU index then
// lowest start first. It never reconfigures: the Kubernetes "mixed" strategy
// with a static mig-parted configuration.
//
// The layout is --static-layout: a name of the catalog's static_layouts
// (mig-parted's all-balanced: the `static-all-balanced` policy), or
// kBestForMix (the default of the `static` policy): per cluster, the layouts
// chosen from the workload's profile mix known in advance (BestStaticLayouts).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "core/config_table.h"
#include "core/numbers.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

// Position of base profile `base` in m.base_profiles().
int TermOf(const GpuModel& m, int base) {
  const std::vector<int>& bases = m.base_profiles();
  return static_cast<int>(std::find(bases.begin(), bases.end(), base) - bases.begin());
}

}  // namespace

std::vector<double> StaticMixDemand(const GpuModel& m, const std::vector<Job>& jobs) {
  std::vector<double> demand(m.base_profiles().size(), 0.0);
  for (const Job& j : jobs) {
    const int p = ResolveProfile(m, j);
    if (p < 0) continue;
    const int base = m.BaseOf(p);
    demand[TermOf(m, base)] += static_cast<double>(j.count) * m.profile(base).compute_slices;
  }
  return demand;
}

std::vector<ConfigId> FullConfigurations(const ConfigTable& t) {
  std::vector<ConfigId> out;
  for (ConfigId c = 0; c < t.num_configs(); ++c) {
    bool full = true;
    for (int s = 0; s < t.num_slots() && full; ++s) {
      full = (t.slot_mask(c) >> s & 1) != 0 || t.Add(c, s) == kInvalidConfig;
    }
    if (full) out.push_back(c);
  }
  return out;
}

std::vector<std::vector<std::pair<int, int>>> BestStaticLayouts(
    const Cluster& cluster, const std::map<const GpuModel*, std::vector<double>>& demand) {
  std::vector<std::vector<std::pair<int, int>>> layouts(cluster.size());
  for (const GpuModel* model : cluster.models()) {
    const GpuModel& m = *model;
    std::vector<int> gpus;
    for (int g = 0; g < cluster.size(); ++g) {
      if (&cluster.gpu(g).model() == model) gpus.push_back(g);
    }
    if (gpus.empty()) continue;
    const ConfigTable& t = cluster.gpu(gpus.front()).table();
    const int terms = t.num_terms();
    const auto it = demand.find(model);
    std::vector<double> d = it != demand.end() ? it->second : std::vector<double>(terms, 0.0);
    d.resize(terms, 0.0);
    double total = 0;
    for (double v : d) total += v;
    // Targets: each profile's share of the demand times the model's compute
    // slices in the cluster.
    std::vector<double> target(terms, 0.0), supply(terms, 0.0);
    const double slices = static_cast<double>(gpus.size()) * m.compute_slices();
    for (int k = 0; k < terms; ++k) target[k] = total > 0 ? d[k] / total * slices : 0.0;
    std::vector<int> cs(terms);
    for (int k = 0; k < terms; ++k) cs[k] = m.profile(m.base_profiles()[k]).compute_slices;
    const std::vector<ConfigId> full = FullConfigurations(t);
    for (int g : gpus) {
      ConfigId best = kInvalidConfig;
      double best_gain = 0;
      int best_demanded = 0;
      for (ConfigId c : full) {
        double gain = 0;
        int demanded = 0;  // instances of demanded profiles
        for (int k = 0; k < terms; ++k) {
          const int n = t.Count(c, k);
          if (n == 0) continue;
          gain += std::min(supply[k] + n * cs[k], target[k]) - std::min(supply[k], target[k]);
          if (d[k] > 0) demanded += n;
        }
        if (best == kInvalidConfig || gain > best_gain + kEps ||
            (gain > best_gain - kEps && demanded > best_demanded)) {
          best = c;
          best_gain = gain;
          best_demanded = demanded;
        }
      }
      for (int k = 0; k < terms; ++k) supply[k] += t.Count(best, k) * cs[k];
      for (int s = 0; s < t.num_slots(); ++s) {
        if ((t.slot_mask(best) >> s & 1) != 0) {
          layouts[g].emplace_back(m.slots()[s].profile, m.slots()[s].start);
        }
      }
    }
  }
  return layouts;
}

namespace {

class StaticPolicy : public PlacementPolicy {
 public:
  StaticPolicy(const SchedulerOptions& options, std::string name)
      : layout_(options.static_layout), name_(std::move(name)) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return name_; }
  bool CreatesInstances() const override { return false; }

  void KnowWorkload(const Cluster& cluster, const std::vector<Job>& jobs) override {
    demand_.clear();
    for (const GpuModel* m : cluster.models()) demand_[m] = StaticMixDemand(*m, jobs);
    known_ = true;
  }

  StatusOr<Plan> SetupPlan(const Cluster& cluster) override {
    Plan plan;
    if (layout_ == kBestForMix) {
      if (!known_) {
        return FailedPreconditionError(fmt::format(
            "the {} policy's layout {} is chosen from the workload's mix known in advance, which "
            "only the simulator has; give --static-layout NAME (a catalog layout, e.g. "
            "all-balanced) or use the policy static-all-balanced",
            name_, kBestForMix));
      }
      const auto layouts = BestStaticLayouts(cluster, demand_);
      for (int gpu = 0; gpu < cluster.size(); ++gpu) {
        for (const auto& [profile, start] : layouts[gpu]) {
          plan.steps.push_back({StepKind::kCreate, gpu, profile, start, kNoJob});
        }
      }
      return plan;
    }
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const GpuModel& m = cluster.gpu(gpu).model();
      const std::vector<std::pair<std::string, int>>* layout = nullptr;
      for (const auto& [name, instances] : m.spec().static_layouts) {
        if (name == layout_) layout = &instances;
      }
      if (layout == nullptr) {
        return FailedPreconditionError(fmt::format(
            "GPU model '{}' has no static layout '{}' in the catalog", m.name(), layout_));
      }
      for (const auto& [profile, start] : *layout) {
        plan.steps.push_back({StepKind::kCreate, gpu, m.FindProfile(profile), start, kNoJob});
      }
    }
    return plan;
  }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    for (int gpu : cluster.representatives()) {  // one GPU per distinct state
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/false, &candidates_);
      if (!candidates_.empty()) return candidates_.front();
    }
    return std::nullopt;
  }

  int Capacity(const Cluster& cluster, int gpu, int profile) const override {
    return cluster.gpu(gpu).CountProfile(profile);
  }

 private:
  std::string layout_;
  std::string name_;
  bool known_ = false;
  std::map<const GpuModel*, std::vector<double>> demand_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewStaticPolicy(const SchedulerOptions& options,
                                                 std::string name) {
  return std::make_unique<StaticPolicy>(options, std::move(name));
}

}  // namespace migsched
