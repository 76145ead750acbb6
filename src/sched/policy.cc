#include "sched/policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "sched/full_policy.h"
#include "sched/metrics.h"
#include "sched/policies/policies.h"

namespace migsched {

PlacementRequest MakeRequest(const Cluster& cluster, JobId id, const Job& job) {
  PlacementRequest r;
  r.job = id;
  r.spec = &job;
  for (const GpuModel* m : cluster.models())
    r.profile_by_model.emplace_back(m, ResolveProfile(*m, job));
  return r;
}

int PlacementPolicy::Capacity(const Cluster& cluster, int gpu, int profile) const {
  // With dynamic partitioning: as many as fit on an empty GPU (feasible_m of
  // the empty configuration), and at most max_instances for variants.
  const GpuState& g = cluster.gpu(gpu);
  const GpuModel& m = g.model();
  const int base = m.BaseOf(profile);
  const auto& bases = m.base_profiles();
  const int term = static_cast<int>(std::find(bases.begin(), bases.end(), base) - bases.begin());
  return std::min(g.table().Feasible(kEmptyConfig, term), m.profile(profile).max_instances);
}

std::vector<std::string> PolicyNames() {
  // The ablation ladder (§11) first, then the other baselines.
  return {"first-fit", "lb", "lb+frag", "full", "best-fit", "driver-default", "mfi", "static"};
}

std::vector<std::pair<std::string, std::string>> PolicyAliases() {
  return {{"frag-aware", "lb+frag"}};
}

StatusOr<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name,
                                                      const SchedulerOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(MetricKind metric, ParseMetric(options.metric));
  if (name == "lb+frag" || name == "frag-aware") {
    return NewFragAwarePolicy(options, metric, std::string(name));
  }
  if (name == "first-fit") return NewFirstFitPolicy(options);
  if (name == "lb") return NewLbPolicy(options);
  if (name == "mfi") return NewMfiPolicy(options);
  if (name == "best-fit") return NewBestFitPolicy(options);
  if (name == "driver-default") return NewDriverDefaultPolicy(options);
  if (name == "static") return NewStaticPolicy(options);
  if (name == "full") {
    ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> placement, MakePolicy("lb+frag", options));
    return NewFullPolicy(std::move(placement));
  }
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  for (const auto& [alias, of] : PolicyAliases()) known += fmt::format(", {} (= {})", alias, of);
  return NotFoundError(fmt::format("unknown policy '{}' (known: {})", name, known));
}

}  // namespace migsched
