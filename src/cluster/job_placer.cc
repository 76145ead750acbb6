#include "cluster/job_placer.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cluster/forwarding_policy.h"
#include "core/plan.h"

namespace migsched {
namespace {

// The base-profile term of `profile` on `m` (ConfigTable::Feasible's index), or -1.
int TermOf(const GpuModel& m, int profile) {
  const int base = m.BaseOf(profile);
  const auto& bases = m.base_profiles();
  auto it = std::find(bases.begin(), bases.end(), base);
  return it == bases.end() ? -1 : static_cast<int>(it - bases.begin());
}

// A per-node request of at most this many profiles is tried in every order before it is found
// not to fit on a node (4! = 24 tries at most).
constexpr size_t kMaxPermutedParts = 4;

// The part of `job.per_node` the node is chosen by: the most compute slices on
// the first GPU model that offers it (ties: the first listed).
size_t LeadPart(const ClusterJob& job, const Cluster& cluster) {
  size_t best = 0;
  int best_slices = -1;
  for (size_t i = 0; i < job.per_node.size(); ++i) {
    int slices = 0;
    for (const GpuModel* m : cluster.models()) {
      const int p = m->FindProfile(job.per_node[i].profile);
      if (p >= 0) {
        slices = m->profile(p).compute_slices;
        break;
      }
    }
    if (slices > best_slices) {
      best = i;
      best_slices = slices;
    }
  }
  return best;
}

}  // namespace

JobPlacer::JobPlacer(Cluster* cluster, const ClusterView& view, ConfigTableCache* tables,
                     PlacementPolicy* policy, const SchedulerOptions& options)
    : cluster_(cluster), view_(view), tables_(tables), policy_(policy), options_(options) {
  main_ = std::make_unique<Scheduler>(cluster_, Forward(policy_), options_, SteadyClock());
}

const std::vector<JobId>& JobPlacer::IdsOf(const std::string& key) const {
  static const std::vector<JobId> kNone;
  auto it = ids_.find(key);
  return it == ids_.end() ? kNone : it->second;
}

Job JobPlacer::ToJob(const ClusterJob& job, const ProfileCount& part) const {
  Job j;
  j.name = job.key;
  j.profile = part.profile;
  j.count = part.count;
  j.latency_sensitive = job.latency_sensitive;
  j.migratable = job.migratable;
  j.time_limit_s = job.time_limit_s;  // the expected run time (0: unknown)
  return j;
}

void JobPlacer::ReserveNodes(const std::vector<int>& nodes, bool on) {
  for (int n : nodes) {
    const ClusterView::Node& node = view_.nodes()[n];
    for (int k = 0; k < node.num_gpus; ++k) {
      const int g = node.first_gpu + k;
      if (!view_.drained(g)) cluster_->SetReserved(g, on);
    }
  }
}

int JobPlacer::FreeRoom(int node, const std::string& profile) const {
  const ClusterView::Node& n = view_.nodes()[node];
  int room = 0;
  for (int k = 0; k < n.num_gpus; ++k) {
    const int g = n.first_gpu + k;
    if (!cluster_->accepts_placements(g)) continue;
    const GpuState& gs = cluster_->gpu(g);
    const int p = gs.model().FindProfile(profile);
    if (p < 0) continue;
    const int term = TermOf(gs.model(), p);
    if (term < 0) continue;
    room +=
        std::min(gs.table().Feasible(gs.busy_config(), term), gs.model().profile(p).max_instances);
  }
  return room;
}

StatusOr<std::optional<std::vector<NodePlacement>>> JobPlacer::Place(const ClusterJob& job,
                                                                     const NodeFilter& allowed) {
  if (job.per_node.empty() || job.num_nodes < 1) return std::optional<std::vector<NodePlacement>>();
  if (job.num_nodes == 1 && job.per_node.size() == 1 && job.per_node[0].count == 1) {
    return PlaceSimple(job, allowed);
  }
  // Nodes ruled out from the start: not usable, not allowed, or without room.
  // Only those on which the policy could still choose the lead instance are
  // marked reserved (a node without room for one lead instance offers no
  // candidate anyway): on a full cluster most nodes need no marking.
  const size_t lead = LeadPart(job, *cluster_);
  std::vector<int> out_nodes;
  for (int n = 0; n < view_.num_nodes(); ++n) {
    bool ok = view_.nodes()[n].usable && view_.nodes()[n].num_gpus > 0;
    for (const ProfileCount& part : job.per_node) {
      if (!ok) break;
      ok = allowed(n, part.profile) && FreeRoom(n, part.profile) >= part.count;
    }
    if (!ok) {
      if (view_.nodes()[n].usable && FreeRoom(n, job.per_node[lead].profile) > 0) {
        out_nodes.push_back(n);
      }
    }
  }
  std::vector<std::pair<int, GpuState>> saved;  // GPU states before this job, first touch
  auto rollback = [&] {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      cluster_->SetGpu(it->first, std::move(it->second));
    }
  };
  std::vector<NodePlacement> result;
  std::vector<JobId> ids;
  ReserveNodes(out_nodes, true);
  Status status;
  while (static_cast<int>(result.size()) < job.num_nodes) {
    const Job lead_job = ToJob(job, {job.per_node[lead].profile, 1});
    const PlacementRequest req = MakeRequest(*cluster_, next_id_, lead_job);
    std::optional<Candidate> c = policy_->Choose(*cluster_, req);
    if (c && !cluster_->accepts_placements(c->gpu)) c.reset();
    if (!c) break;
    const int node = view_.NodeOf(c->gpu);
    // Save the node's GPUs before trying it.
    const ClusterView::Node& nd = view_.nodes()[node];
    const size_t saved_before = saved.size();
    for (int k = 0; k < nd.num_gpus; ++k)
      saved.emplace_back(nd.first_gpu + k, cluster_->gpu(nd.first_gpu + k));
    NodePlacement np;
    auto fits = PlaceOnNode(job, node, &np, &ids);
    if (!fits.ok()) {
      status = fits.status();
      break;
    }
    if (*fits) {
      result.push_back(std::move(np));
    } else {
      saved.erase(saved.begin() + static_cast<std::ptrdiff_t>(saved_before), saved.end());
    }
    // Used or failed: the node takes no more part in this job.
    out_nodes.push_back(node);
    ReserveNodes({node}, true);
  }
  ReserveNodes(out_nodes, false);
  if (!status.ok()) {
    rollback();
    return status;
  }
  if (static_cast<int>(result.size()) < job.num_nodes) {
    rollback();
    return std::optional<std::vector<NodePlacement>>();
  }
  ids_[job.key] = ids;
  return std::optional<std::vector<NodePlacement>>(std::move(result));
}

StatusOr<std::optional<std::vector<NodePlacement>>> JobPlacer::PlaceSimple(
    const ClusterJob& job, const NodeFilter& allowed) {
  const std::string& profile = job.per_node[0].profile;
  std::vector<int> out_nodes;
  for (int n = 0; n < view_.num_nodes(); ++n) {
    // A node without room for the profile offers no candidate: no need to mark it.
    if (view_.nodes()[n].usable && !allowed(n, profile) && FreeRoom(n, profile) > 0) {
      out_nodes.push_back(n);
    }
  }
  ReserveNodes(out_nodes, true);
  const JobId id = next_id_++;
  auto d = main_->TryPlace(id, ToJob(job, job.per_node[0]));
  ReserveNodes(out_nodes, false);
  if (!d.ok()) return d.status();
  if (!d->has_value()) return std::optional<std::vector<NodePlacement>>();
  const InstanceRef& in = (*d)->instances[0];
  NodePlacement np;
  np.node = view_.NodeOf(in.gpu);
  np.placements.push_back(view_.ToRef(in.gpu, in.profile, in.start));
  ids_[job.key] = {id};
  return std::optional<std::vector<NodePlacement>>(std::vector<NodePlacement>{std::move(np)});
}

StatusOr<bool> JobPlacer::PlaceOnNode(const ClusterJob& job, int node, NodePlacement* out,
                                      std::vector<JobId>* ids) {
  const ClusterView::Node& n = view_.nodes()[node];
  const size_t parts = job.per_node.size();
  // The orders the parts are placed in, each on a fresh copy of the node: the largest first
  // (most compute slices; ties as listed), as first-fit decreasing, then as listed, then, for up
  // to kMaxPermutedParts parts, every other order. A part placed first can take the only GPU
  // another needs whole (2x 3g.20gb then a 7g.40gb on two empty A100s: the 3g pair went to two
  // GPUs; regression: multi_profile_request_refused_on_an_empty_node).
  std::vector<int> slices(parts, 0);
  for (size_t i = 0; i < parts; ++i) {
    for (const GpuModel* m : view_.NodeModels(node)) {
      if (const int p = m->FindProfile(job.per_node[i].profile); p >= 0) {
        slices[i] = m->profile(p).compute_slices;
        break;
      }
    }
  }
  std::vector<std::vector<size_t>> orders;
  std::vector<size_t> listed(parts);
  for (size_t i = 0; i < parts; ++i) listed[i] = i;
  std::vector<size_t> decreasing = listed;
  std::stable_sort(decreasing.begin(), decreasing.end(),
                   [&](size_t a, size_t b) { return slices[a] > slices[b]; });
  orders.push_back(decreasing);
  if (listed != decreasing) orders.push_back(listed);
  if (parts <= kMaxPermutedParts) {
    std::vector<size_t> perm = listed;
    while (std::next_permutation(perm.begin(), perm.end())) {
      if (std::find(orders.begin(), orders.end(), perm) == orders.end()) orders.push_back(perm);
    }
  }
  for (const std::vector<size_t>& order : orders) {
    Cluster sub(view_.NodeModels(node), tables_);
    for (int k = 0; k < n.num_gpus; ++k) {
      sub.SetGpu(k, cluster_->gpu(n.first_gpu + k));
      // The node's anchored jobs anchor its GPUs in the node's cluster too (§4 step 2).
      for (const Instance& i : sub.gpu(k).instances()) {
        if (i.busy() && cluster_->job_anchored(i.job)) sub.SetJobAnchored(i.job, true, {k});
      }
      if (view_.drained(n.first_gpu + k)) {
        sub.SetDrained(k, true);
        sub.SetReserved(k, true);
      }
    }
    Scheduler sched(&sub, Forward(policy_), options_, SteadyClock());
    if (fault_) sched.SetFaultInjector(fault_);
    Plan plan;
    // Per part, as listed: its job id and its placements.
    std::vector<JobId> part_ids(parts, kNoJob);
    std::vector<std::vector<PlacementRef>> placed(parts);
    bool all = true;
    for (size_t i : order) {
      const JobId id = next_id_++;
      auto d = sched.TryPlace(id, ToJob(job, job.per_node[i]));
      if (!d.ok()) return d.status();
      if (!d->has_value()) {
        all = false;
        break;
      }
      part_ids[i] = id;
      for (Step s : (*d)->plan.steps) {
        s.gpu += n.first_gpu;
        if (s.from_gpu >= 0) s.from_gpu += n.first_gpu;
        plan.steps.push_back(s);
      }
      for (const InstanceRef& in : (*d)->instances) {
        placed[i].push_back(view_.ToRef(n.first_gpu + in.gpu, in.profile, in.start));
      }
    }
    if (!all) continue;
    for (JobId id : part_ids) {
      if (sub.job_anchored(id)) cluster_->SetJobAnchored(id, true);  // before its plan applies
    }
    RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
    out->node = node;
    out->placements.clear();
    for (size_t i = 0; i < parts; ++i) {
      out->placements.insert(out->placements.end(), placed[i].begin(), placed[i].end());
    }
    ids->insert(ids->end(), part_ids.begin(), part_ids.end());
    return true;
  }
  return false;
}

void JobPlacer::SetFaultInjector(std::function<bool(const std::string& key)> fails) {
  fault_ = nullptr;
  if (fails) {
    fault_ = [fails = std::move(fails)](JobId, const Job& j) { return fails(j.name); };
  }
  main_->SetFaultInjector(fault_);
}

}  // namespace migsched
