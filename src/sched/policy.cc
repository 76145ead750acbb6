#include "sched/policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "sched/policies/policies.h"

namespace migsched {

PlacementRequest MakeRequest(const Cluster& cluster, JobId id, const Job& job) {
  PlacementRequest r;
  r.job = id;
  r.spec = &job;
  for (const GpuModel* m : cluster.models()) r.profile_by_model.emplace_back(m, ResolveProfile(*m, job));
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
  return {"frag-aware", "first-fit", "best-fit", "driver-default", "static"};
}

StatusOr<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name,
                                                      const SchedulerOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (name == "frag-aware") return NewFragAwarePolicy(options);
  if (name == "first-fit") return NewFirstFitPolicy();
  if (name == "best-fit") return NewBestFitPolicy();
  if (name == "driver-default") return NewDriverDefaultPolicy();
  if (name == "static") return NewStaticPolicy(options);
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFoundError(fmt::format("unknown policy '{}' (known: {})", name, known));
}

}  // namespace migsched
