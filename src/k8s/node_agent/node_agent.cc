#include "k8s/node_agent/node_agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/capacity.h"
#include "core/text.h"

namespace migsched::k8s {

NodeAgent::NodeAgent(NodeDaemons* daemon, std::string node, const Catalog* catalog,
                     NodeAgentConfig config)
    : daemon_(daemon), node_(std::move(node)), catalog_(catalog), config_(std::move(config)) {}

bool NodeAgent::Healthy() { return daemon_->State(node_).ok(); }

StatusOr<std::vector<MigResource>> NodeAgent::Resources() {
  auto st = daemon_->State(node_);
  if (!st.ok()) return st.status();
  std::vector<const GpuModel*> models;
  for (const GpuView& g : st->gpus) {
    auto m = catalog_->Find(g.model);
    if (!m.ok()) return m.status();
    models.push_back(*m);
  }
  std::lock_guard lock(mu_);
  std::vector<MigResource> out;
  for (const ProfileCapacity& pc : NodeCapacity(models, &tables_)) {
    // Only base profiles: '+' (media extensions) is not allowed in a resource name.
    bool base = false;
    for (const GpuModel* m : models) {
      const int p = m->FindProfile(pc.profile);
      if (p >= 0 && m->profile(p).is_base()) base = true;
    }
    if (base && pc.count > 0) out.push_back({pc.profile, pc.count});
  }
  return out;
}

StatusOr<ContainerDevices> NodeAgent::Allocate(const std::string& profile,
                                               const std::vector<std::string>& device_ids) {
  std::vector<std::string> ids = device_ids;
  std::sort(ids.begin(), ids.end());
  const int n = static_cast<int>(ids.size());
  auto st = daemon_->State(node_);
  if (!st.ok()) return st.status().WithPrefix("the node daemon");

  // Reservations of pods with enough placements of the profile, oldest first.
  std::vector<const ReservationRecord*> candidates;
  for (const ReservationView& rv : st->reservations) {
    const ReservationRecord& r = rv.record;
    if (r.owner.rfind("k8s:", 0) != 0) continue;
    const int have = static_cast<int>(
        std::count_if(r.placements.begin(), r.placements.end(),
                      [&](const PlacementRef& p) { return p.profile == profile; }));
    if (have >= n) candidates.push_back(&r);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const ReservationRecord* a, const ReservationRecord* b) {
              return a->expires_at < b->expires_at;
            });
  if (candidates.empty()) {
    return FailedPreconditionError(fmt::format(
        "no pod holds a reservation of {} {} on {}: was the pod placed by migsched (its "
        "spec.schedulerName, the extender's managedResources)? Its reservation may also have "
        "expired before the kubelet started it",
        n, profile, node_));
  }
  if (candidates.size() > 1) {
    spdlog::warn("{} pods wait for {} on {} ({}, ...): taking the oldest", candidates.size(),
                 profile, node_, OneLine(candidates[0]->owner));
  }
  const std::string owner = candidates[0]->owner;
  BindRequest req;
  req.owner = owner;
  // Per pod, profile and devices: a retried call (lost answer) gets the same allocation.
  req.idempotency_key = owner + "/" + profile + "/" + fmt::format("{}", fmt::join(ids, ","));
  req.instances = {{profile, n}};
  req.reservation_prefix = owner;
  auto alloc = daemon_->Allocate(node_, req);
  if (!alloc.ok()) return alloc.status().WithPrefix("binding " + owner + " on " + node_);

  ContainerDevices d;
  std::vector<std::string> uuids;
  for (const JobInstance& i : alloc->instances) uuids.push_back(i.mig_uuid);
  const std::string list = fmt::format("{}", fmt::join(uuids, ","));
  d.envs["NVIDIA_VISIBLE_DEVICES"] = list;
  d.envs["CUDA_VISIBLE_DEVICES"] = list;
  d.envs["MIGSCHED_ALLOCATION_ID"] = std::to_string(alloc->id);
  d.envs["MIGSCHED_POD_KEY"] = owner;
  for (const std::string& path : config_.device_nodes) d.device_nodes.push_back({path, path, "rw"});
  if (config_.cdi) {
    for (const auto& u : uuids) d.cdi_devices.push_back("nvidia.com/gpu=" + u);
  }
  spdlog::info("allocated {} for {} on {}: {}", profile, OneLine(owner), node_, list);
  return d;
}

}  // namespace migsched::k8s
