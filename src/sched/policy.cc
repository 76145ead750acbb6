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

namespace {

SchedulerOptions NoDefaults(SchedulerOptions options, const ExplicitOptions&) { return options; }

// A registry entry whose factory takes the options alone.
PolicyInfo Entry(
    std::string name, std::vector<std::string> aliases, std::string summary, PolicyReads reads,
    std::function<StatusOr<std::unique_ptr<PlacementPolicy>>(const SchedulerOptions&,
                                                             std::string_view)>
        make,
    std::function<SchedulerOptions(SchedulerOptions, const ExplicitOptions&)> defaults = NoDefaults,
    bool joint_placement = false) {
  return PolicyInfo{std::move(name),
                    std::move(aliases),
                    std::move(summary),
                    std::move(make),
                    std::move(defaults),
                    joint_placement,
                    reads};
}

// What each policy's choice reads (policies/*.cc): the baselines only --reserve-full, lb the
// lazy/busy split too, lb+frag and full the §4 choice and idle instances, static its layout.
constexpr PolicyReads kReadsReserveOnly{};
constexpr PolicyReads kReadsLb{.threshold = true};
constexpr PolicyReads kReadsFragAware{.threshold = true,
                                      .metric = true,
                                      .reuse_first = true,
                                      .anchored_together = true,
                                      .idle_ttl = true};
constexpr PolicyReads kReadsStatic{.static_layout = true, .reserve_full = false};

// `static`: the layouts chosen from the workload's mix unless --static-layout is given.
SchedulerOptions StaticDefaults(SchedulerOptions options, const ExplicitOptions& set) {
  if (!set.static_layout) options.static_layout = std::string(kBestForMix);
  return options;
}

// The registry's defaults of `p` for the options `set` does not mark.
SchedulerOptions WithDefaults(const PolicyInfo& p, SchedulerOptions options,
                              const ExplicitOptions& set) {
  if (!set.joint_placement) options.joint_placement = p.joint_placement;
  return p.defaults(std::move(options), set);
}

StatusOr<std::unique_ptr<PlacementPolicy>> MakeFragAware(const SchedulerOptions& options,
                                                         std::string_view as) {
  ASSIGN_OR_RETURN(MetricKind metric, ParseMetric(options.metric));
  return NewFragAwarePolicy(options, metric, std::string(as));
}

}  // namespace

const std::vector<PolicyInfo>& PolicyRegistry() {
  static const std::vector<PolicyInfo>* registry = new std::vector<PolicyInfo>{
      Entry("first-fit", {}, "lowest GPU index, lowest start (§11 ladder, rung 1)",
            kReadsReserveOnly,
            [](const SchedulerOptions& o, std::string_view) { return NewFirstFitPolicy(o); }),
      Entry("lb", {}, "lazy/busy balancing (§3), first fit within (§11 ladder, rung 2)", kReadsLb,
            [](const SchedulerOptions& o, std::string_view) { return NewLbPolicy(o); }),
      Entry("lb+frag", {"frag-aware"},
            "lazy/busy balancing and the fragmentation-aware choice of §4 (§11 ladder, rung 3)",
            kReadsFragAware, MakeFragAware, NoDefaults, kJointPlacementDefault),
      Entry("full", {},
            "lb+frag with the §6 migration planner on (--migration on), with defaults of its own "
            "(§11)",
            kReadsFragAware, MakeFragAware, FullDefaults, kJointPlacementDefault),
      Entry("best-fit", {}, "the fullest GPU (highest util) that fits (§11)", kReadsReserveOnly,
            [](const SchedulerOptions& o, std::string_view) { return NewBestFitPolicy(o); }),
      Entry("driver-default", {}, "lowest-index GPU that fits, the driver's own start order (§11)",
            kReadsReserveOnly,
            [](const SchedulerOptions& o, std::string_view) { return NewDriverDefaultPolicy(o); }),
      Entry("mfi", {}, "minimum increase of blocked placements (§2) over every GPU (§11)",
            kReadsReserveOnly,
            [](const SchedulerOptions& o, std::string_view) { return NewMfiPolicy(o); }),
      Entry("largest-free-run", {},
            "the placement that shortens its GPU's largest free run of slices the least (§11)",
            kReadsReserveOnly,
            [](const SchedulerOptions& o, std::string_view) { return NewLargestFreeRunPolicy(o); }),
      Entry(
          "static", {},
          "fixed layouts chosen from the workload's mix known in advance (--static-layout "
          "best-for-mix), never reconfigured (§11)",
          kReadsStatic,
          [](const SchedulerOptions& o, std::string_view) { return NewStaticPolicy(o, "static"); },
          StaticDefaults),
      Entry("static-all-balanced", {},
            "mig-parted's all-balanced layout (or --static-layout NAME) on every GPU, never "
            "reconfigured (§11)",
            kReadsStatic,
            [](const SchedulerOptions& o, std::string_view) {
              return NewStaticPolicy(o, "static-all-balanced");
            }),
  };
  return *registry;
}

StatusOr<const PolicyInfo*> FindPolicy(std::string_view name) {
  for (const PolicyInfo& p : PolicyRegistry()) {
    if (p.name == name) return &p;
    for (const std::string& a : p.aliases) {
      if (a == name) return &p;
    }
  }
  std::string known;
  for (const PolicyInfo& p : PolicyRegistry()) {
    known += (known.empty() ? "" : ", ") + p.name;
  }
  for (const PolicyInfo& p : PolicyRegistry()) {
    for (const std::string& a : p.aliases) known += fmt::format(", {} (= {})", a, p.name);
  }
  return NotFoundError(fmt::format("unknown policy '{}' (known: {})", name, known));
}

std::vector<std::string> PolicyNames() {
  std::vector<std::string> out;
  for (const PolicyInfo& p : PolicyRegistry()) out.push_back(p.name);
  return out;
}

std::vector<std::pair<std::string, std::string>> PolicyAliases() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PolicyInfo& p : PolicyRegistry()) {
    for (const std::string& a : p.aliases) out.emplace_back(a, p.name);
  }
  return out;
}

StatusOr<SchedulerOptions> PolicyOptions(std::string_view name, SchedulerOptions options,
                                         const ExplicitOptions& set) {
  ASSIGN_OR_RETURN(const PolicyInfo* p, FindPolicy(name));
  return WithDefaults(*p, std::move(options), set);
}

SchedulerOptions OptionsForPolicy(std::string_view name, SchedulerOptions options,
                                  const ExplicitOptions& set) {
  StatusOr<const PolicyInfo*> p = FindPolicy(name);
  if (!p.ok()) return options;
  return WithDefaults(**p, std::move(options), set);
}

bool JointPlacementByDefault(std::string_view name) {
  StatusOr<const PolicyInfo*> p = FindPolicy(name);
  return p.ok() && (*p)->joint_placement;
}

StatusOr<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name,
                                                      const SchedulerOptions& options) {
  ASSIGN_OR_RETURN(const PolicyInfo* p, FindPolicy(name));
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ParseMetric(options.metric).status());
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy, p->make(options, name));
  if (options.migration.enabled && !policy->CreatesInstances()) {
    return InvalidArgumentError(fmt::format(
        "migration on needs a policy that creates instances; '{}' never reconfigures (a move "
        "creates an instance at its target): turn migration off (--migration off, or "
        "migration: off in a config file's scheduler section) or choose another policy",
        name));
  }
  return policy;
}

}  // namespace migsched
