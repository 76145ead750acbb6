#include "cluster/cluster_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "core/plan.h"
#include "nodeapi/node_view.h"

namespace migsched {

namespace {

// One node's GPUs and the plan that builds its instances, GPU indices local
// (0..gpus-1). Occupants are numbered from `next_id`.
struct NodeBuild {
  std::vector<const GpuModel*> models;
  std::vector<NvmlIndex> nvml_index;
  std::vector<char> drained;
  Plan plan;
  std::vector<std::pair<JobId, ClusterView::Occupant>> occupants;
  std::string error;
};

uint64_t UnitMask(const GpuModel& m, int profile, int start) {
  const int slot = m.SlotOf(profile, start);
  return slot < 0 ? 0 : m.slots()[slot].unit_mask;
}

NodeBuild BuildNode(const NodeView& s, int node, const Catalog& catalog, JobId* next_id) {
  NodeBuild b;
  std::map<NvmlIndex, int> local;  // NVML index -> local index
  for (const GpuView& g : s.gpus) {
    auto m = catalog.Find(g.model);
    if (!m.ok()) {
      b.error = fmt::format("GPU {}: {}", g.index, m.status().message());
      return b;
    }
    if (local.count(g.index)) {
      b.error = fmt::format("GPU index {} listed twice", g.index);
      return b;
    }
    local[g.index] = static_cast<int>(b.models.size());
    b.models.push_back(*m);
    b.nvml_index.push_back(g.index);
    b.drained.push_back(TakesPlacements(g) ? 0 : 1);
  }
  // Resolves (NVML index, profile name, start) to (local gpu, profile index).
  auto resolve = [&](NvmlIndex gpu, const std::string& profile, int start,
                     std::string* error) -> std::optional<std::pair<int, int>> {
    auto it = local.find(gpu);
    if (it == local.end()) {
      *error = fmt::format("a placement on GPU {}, which the node does not list", gpu);
      return std::nullopt;
    }
    const GpuModel& m = *b.models[it->second];
    const int p = m.FindProfile(profile);
    if (p < 0) {
      *error = fmt::format("GPU {} ({}): unknown profile '{}'", gpu, m.name(), profile);
      return std::nullopt;
    }
    if (m.SlotOf(p, start) < 0) {
      *error = fmt::format("GPU {} ({}): {} cannot start at {}", gpu, m.name(), profile, start);
      return std::nullopt;
    }
    return std::make_pair(it->second, p);
  };

  // (kind, owner) -> the occupant's entry in b.occupants
  std::map<std::tuple<int, std::string>, size_t> entries;
  auto occupant = [&](HolderKind kind, const std::string& owner, bool anchors) {
    // Placeholders each get their own id; the others one per owner.
    const std::string key = kind == HolderKind::kPlaceholder ? fmt::format("#{}", *next_id) : owner;
    auto [it, fresh] =
        entries.emplace(std::make_tuple(static_cast<int>(kind), key), b.occupants.size());
    if (fresh) b.occupants.push_back({(*next_id)++, ClusterView::Occupant{kind, node, owner}});
    auto& [id, o] = b.occupants[it->second];
    // One instance of it that anchors makes it anchor (§4 step 2).
    o.anchors = o.anchors || anchors;
    return id;
  };

  // Reserved placements: (local gpu, unit mask) for the overlap test.
  std::vector<std::pair<int, uint64_t>> reserved;
  std::vector<Step> reservation_steps;
  for (const ReservationView& rv : s.reservations) {
    const ReservationRecord& r = rv.record;
    for (const PlacementRef& p : r.placements) {
      std::string error;
      auto at = resolve(p.gpu, p.profile, p.start, &error);
      if (!at) {
        b.error = fmt::format("reservation '{}': {}", r.owner, error);
        return b;
      }
      const JobId id = occupant(HolderKind::kReservation, r.owner, r.anchors);
      reserved.push_back({at->first, UnitMask(*b.models[at->first], at->second, p.start)});
      reservation_steps.push_back({StepKind::kCreate, at->first, at->second, p.start});
      reservation_steps.push_back({StepKind::kStart, at->first, at->second, p.start, id});
    }
  }
  for (const GpuView& g : s.gpus) {
    for (const InstanceView& in : g.instances) {
      std::string error;
      auto at = resolve(g.index, in.profile, in.start, &error);
      if (!at) {
        b.error = error;
        return b;
      }
      const auto [gpu, profile] = *at;
      const uint64_t mask = UnitMask(*b.models[gpu], profile, in.start);
      const bool under_reservation = std::any_of(reserved.begin(), reserved.end(), [&](auto& r) {
        return r.first == gpu && (r.second & mask) != 0;
      });
      const HolderKind holder = HolderOf(in);
      if (holder == HolderKind::kIdle) {
        if (!under_reservation) b.plan.steps.push_back({StepKind::kCreate, gpu, profile, in.start});
        continue;
      }
      if (holder == HolderKind::kReservation) {
        if (under_reservation) continue;  // the reservation's entry stands for it
      }
      const JobId id = occupant(holder, HolderKey(in), in.anchors);
      b.plan.steps.push_back({StepKind::kCreate, gpu, profile, in.start});
      b.plan.steps.push_back({StepKind::kStart, gpu, profile, in.start, id});
    }
  }
  b.plan.steps.insert(b.plan.steps.end(), reservation_steps.begin(), reservation_steps.end());
  return b;
}

}  // namespace

std::unique_ptr<ClusterView> ClusterView::Build(const std::vector<NodeInput>& inputs,
                                                const Catalog& catalog, ConfigTableCache* tables) {
  std::vector<NodeBuild> builds(inputs.size());
  std::vector<const GpuModel*> models;
  // Nodes whose daemons answer with one boot id reach one daemon (two names for one url, or two
  // urls of one host): its GPUs would count for both, and a room made for one node would land on
  // the other's GPUs. None of them is usable (regression: one_daemon_for_two_nodes).
  std::map<std::string, std::vector<size_t>> by_boot;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].state && !inputs[i].state->boot_id.empty()) {
      by_boot[inputs[i].state->boot_id].push_back(i);
    }
  }
  std::vector<std::string> same_daemon(inputs.size());
  for (const auto& [boot, idx] : by_boot) {
    if (idx.size() < 2) continue;
    for (size_t i : idx) {
      std::vector<std::string> others;
      for (size_t j : idx) {
        if (j != i) others.push_back(inputs[j].name);
      }
      same_daemon[i] = fmt::format("{}", fmt::join(others, ", "));
    }
  }
  JobId next_id = kFirstOccupantId;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].state) {
      builds[i].error = inputs[i].error.empty() ? "unreachable" : inputs[i].error;
      continue;
    }
    if (!same_daemon[i].empty()) {
      builds[i].error = fmt::format(
          "its node daemon (node_name '{}') is also the one of {}: each node needs a daemon of "
          "its own (check the urls)",
          inputs[i].state->name, same_daemon[i]);
      continue;
    }
    JobId first = next_id;
    builds[i] = BuildNode(*inputs[i].state, static_cast<int>(i), catalog, &next_id);
    if (builds[i].error.empty()) {
      // Check the node's instances on a cluster of its own GPUs first: an
      // inconsistent node must not touch the others.
      Cluster trial(builds[i].models, tables);
      if (Status st = ApplyPlan(builds[i].plan, &trial); !st.ok()) {
        builds[i].error = "inconsistent state: " + st.message();
      }
    }
    if (!builds[i].error.empty()) {
      builds[i].occupants.clear();
      next_id = first;
      continue;
    }
    models.insert(models.end(), builds[i].models.begin(), builds[i].models.end());
  }
  std::unique_ptr<ClusterView> v(new ClusterView(models, &catalog, tables));
  Plan all;
  int gpu = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node n;
    n.name = inputs[i].name;
    n.first_gpu = gpu;
    if (inputs[i].state) n.generation = inputs[i].state->generation;
    NodeBuild& b = builds[i];
    if (b.error.empty()) {
      n.usable = true;
      n.num_gpus = static_cast<int>(b.models.size());
      n.nvml_index = b.nvml_index;
      for (Step st : b.plan.steps) {
        st.gpu += gpu;
        all.steps.push_back(st);
      }
      for (int k = 0; k < n.num_gpus; ++k) {
        v->node_of_.push_back(static_cast<int>(i));
        v->drained_.push_back(b.drained[k]);
      }
      for (auto& [id, occ] : b.occupants) v->occupants_[id] = occ;
      gpu += n.num_gpus;
    } else {
      n.error = b.error;
    }
    v->node_index_[n.name] = static_cast<int>(v->nodes_.size());
    v->nodes_.push_back(std::move(n));
  }
  // Each node's part was checked alone; together they touch disjoint GPUs.
  if (Status st = ApplyPlan(all, &v->cluster_); !st.ok()) {
    // Unreachable by construction; keep the view empty rather than wrong.
    for (Node& n : v->nodes_) {
      if (n.usable) {
        n.usable = false;
        n.error = "internal: " + st.message();
      }
    }
  }
  // §4 step 2: an occupant whose daemon says it can never leave (InstanceView::anchors,
  // ReservationRecord::anchors) is an anchored job here; views are rebuilt from fresh node views,
  // so none outlives its holder.
  ForEachOccupied(*v, v->cluster_, [&](int g, JobId id, const ClusterView::Occupant& o) {
    if (o.anchors) v->cluster_.SetJobAnchored(id, true, {g});
  });
  for (int g = 0; g < v->cluster_.size(); ++g) {
    // Drained (Cluster::SetDrained), which a scan's end leaves alone, and reserved, as callers
    // that look at the reserved flag alone expect. Reserved only, a drained GPU was opened by
    // the first queue scan of a planning round (ScanReservations::End opens every GPU): later
    // jobs of the round, and the requeue search, could be placed there (regression:
    // drained_gpu_after_the_first_scan).
    if (v->drained_[g]) {
      v->cluster_.SetDrained(g, true);
      v->cluster_.SetReserved(g, true);
    }
  }
  return v;
}

int ClusterView::FindNode(std::string_view name) const {
  auto it = node_index_.find(std::string(name));
  return it == node_index_.end() ? -1 : it->second;
}

int ClusterView::GlobalGpu(int node, NvmlIndex nvml_index) const {
  const Node& n = nodes_[node];
  for (int k = 0; k < n.num_gpus; ++k) {
    if (n.nvml_index[k] == nvml_index) return n.first_gpu + k;
  }
  return -1;
}

NvmlIndex ClusterView::NvmlIndexOf(int gpu) const {
  const Node& n = nodes_[node_of_[gpu]];
  return n.nvml_index[gpu - n.first_gpu];
}

PlacementRef ClusterView::ToRef(int gpu, int profile, int start) const {
  return {NvmlIndexOf(gpu), cluster_.gpu(gpu).model().profile(profile).name, start};
}

std::optional<std::pair<int, int>> ClusterView::FromRef(int node, const PlacementRef& ref) const {
  const int gpu = GlobalGpu(node, ref.gpu);
  if (gpu < 0) return std::nullopt;
  const int p = cluster_.gpu(gpu).model().FindProfile(ref.profile);
  if (p < 0) return std::nullopt;
  return std::make_pair(gpu, p);
}

const ClusterView::Occupant* ClusterView::OccupantOf(JobId id) const {
  auto it = occupants_.find(id);
  return it == occupants_.end() ? nullptr : &it->second;
}

std::vector<JobId> ClusterView::AllocationsOf(std::string_view owner) const {
  std::vector<JobId> out;
  for (const auto& [id, o] : occupants_) {
    if (o.kind == HolderKind::kAllocation && o.owner == owner) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const GpuModel*> ClusterView::NodeModels(int node) const {
  std::vector<const GpuModel*> out;
  const Node& n = nodes_[node];
  for (int k = 0; k < n.num_gpus; ++k) out.push_back(&cluster_.gpu(n.first_gpu + k).model());
  return out;
}

void AnchorAllocations(const ClusterView& view, const std::set<std::string>& owners,
                       Cluster* cluster) {
  if (owners.empty()) return;
  ForEachOccupied(view, *cluster, [&](int g, JobId id, const ClusterView::Occupant& o) {
    if ((o.kind == HolderKind::kAllocation || o.kind == HolderKind::kReservation) &&
        owners.count(o.owner)) {
      cluster->SetJobAnchored(id, true, {g});
    }
  });
}

}  // namespace migsched
