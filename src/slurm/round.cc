#include "slurm/round.h"

#include <algorithm>

#include "cluster/capacity.h"
#include "slurm/admin_comment.h"
#include "slurm/gres_config.h"

namespace migsched::slurm {
namespace {

// Pending reasons under which Slurm will not start a job now whatever the
// counts say: no room is held for such a job.
bool Ineligible(const SlurmJob& j, double now_s) {
  static const std::vector<std::string> kReasons = {"JobHeldAdmin",
                                                    "JobHeldUser",
                                                    "BeginTime",
                                                    "Dependency",
                                                    "DependencyNeverSatisfied",
                                                    "PartitionInactive",
                                                    "JobArrayTaskLimit"};
  if (std::find(kReasons.begin(), kReasons.end(), j.reason) != kReasons.end()) return true;
  return j.eligible_time > 0 && static_cast<double>(j.eligible_time) > now_s;
}

}  // namespace

Classified ClassifyJobs(const std::vector<SlurmJob>& jobs, const std::string& partition,
                        const std::string& gres_name, double now_s) {
  Classified c;
  std::map<std::string, std::vector<const SlurmJob*>> requeued;  // for job -> moved jobs
  std::map<std::string, bool> waiting_keys;
  for (const SlurmJob& j : jobs) {
    if (!partition.empty() && j.partition != partition) continue;
    auto req = ToJobRequest(j, gres_name);
    if (!req.ok()) {
      if (j.Pending() && !IsHeldByMigsched(j.admin_comment)) {
        c.invalid.push_back({&j, req.status().message()});
      }
      continue;
    }
    if (!req->has_value()) continue;
    if (j.Active()) {
      c.active.push_back({&j, std::move(**req)});
      continue;
    }
    if (!j.Pending()) continue;
    if (auto for_job = ParseRequeuedFor(j.admin_comment); for_job && j.reason == "BeginTime") {
      requeued[*for_job].push_back(&j);
    }
    if (Ineligible(j, now_s)) continue;
    waiting_keys[(*req)->job.key] = true;
    c.waiting.push_back({&j, std::move(**req)});
  }
  std::stable_sort(c.waiting.begin(), c.waiting.end(),
                   [](const ClassifiedJob& a, const ClassifiedJob& b) {
                     if (a.slurm->priority != b.slurm->priority) {
                       return a.slurm->priority > b.slurm->priority;
                     }
                     return a.slurm->id < b.slurm->id;
                   });
  for (const auto& [for_job, moved] : requeued) {
    if (waiting_keys.count(for_job)) {
      InFlightMigration m;
      m.for_job = for_job;
      for (const SlurmJob* j : moved) m.moved.push_back(JobKey(j->id));
      c.in_flight.push_back(std::move(m));
    } else {
      c.release_begin_time.insert(c.release_begin_time.end(), moved.begin(), moved.end());
    }
  }
  return c;
}

std::string RoomId(const std::string& node, const std::string& key) { return node + "/" + key; }

ActiveCounts CountActive(const std::vector<ClassifiedJob>& active, const ClusterView& view) {
  ActiveCounts out;
  for (const ClassifiedJob& a : active) {
    const std::vector<JobId> allocations = view.AllocationsOf(a.request.job.key);
    std::optional<Binding> recorded;
    if (a.slurm->state == "RUNNING") {
      if (auto b = ParseBound(a.slurm->admin_comment); b.ok()) recorded = std::move(*b);
    }
    for (const std::string& node : a.slurm->nodes) {
      const int n = view.FindNode(node);
      bool bound = false;
      for (JobId id : allocations) bound = bound || view.OccupantOf(id)->node == n;
      const bool lost =
          !bound && recorded && recorded->count(node) && n >= 0 && view.nodes()[n].usable;
      if (lost) out.lost.push_back({a.request.job.key, node});
      for (const ProfileCount& p : a.request.job.per_node) {
        out.all[{node, p.profile}] += p.count;
        if (!bound && !lost) out.unbound[{node, p.profile}] += p.count;
      }
    }
  }
  return out;
}

std::vector<EngineReservation> Rooms(const ClusterView& view, const ActiveCounts& counts,
                                     const std::map<std::string, double>& first_seen, double now_s,
                                     double timeout_s) {
  std::vector<EngineReservation> out;
  std::map<std::pair<std::string, std::string>, int> claim = counts.unbound;
  // The rooms are the view's occupants of kind kReservation under the prefix.
  std::vector<EngineReservation> rooms;
  for (int g = 0; g < view.cluster().size(); ++g) {
    for (const Instance& in : view.cluster().gpu(g).instances()) {
      const ClusterView::Occupant* o = in.busy() ? view.OccupantOf(in.job) : nullptr;
      if (o == nullptr || o->kind != HolderKind::kReservation) continue;
      if (o->owner.rfind(kRoomPrefix, 0) != 0) continue;
      EngineReservation h;
      h.node = o->node;
      h.key = o->owner;
      h.placements = {view.ToRef(g, in.profile, in.start)};
      rooms.push_back(std::move(h));
    }
  }
  std::sort(rooms.begin(), rooms.end(), [](const EngineReservation& a, const EngineReservation& b) {
    return std::tie(a.node, a.key) < std::tie(b.node, b.key);
  });
  for (EngineReservation& h : rooms) {
    const std::string& node = view.nodes()[h.node].name;
    int& left = claim[{node, h.placements[0].profile}];
    if (left > 0) {
      h.claimed = true;
      --left;
    } else if (auto it = first_seen.find(RoomId(node, h.key)); it != first_seen.end()) {
      h.timed_out = now_s - it->second >= timeout_s;
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<ClusterJob> StartedWithoutRoom(const ActiveCounts& counts,
                                           const std::vector<EngineReservation>& rooms,
                                           const ClusterView& view, double now_s) {
  std::map<std::pair<std::string, std::string>, int> left = counts.unbound;
  for (const EngineReservation& h : rooms) {
    if (!h.claimed) continue;
    for (const PlacementRef& p : h.placements) --left[{view.nodes()[h.node].name, p.profile}];
  }
  std::vector<ClusterJob> out;
  for (const auto& [where, n] : left) {
    if (n <= 0 || view.FindNode(where.first) < 0) continue;
    ClusterJob j;
    j.key = std::string(kStartedPrefix) + where.first + ":" + where.second;
    j.per_node = {{where.second, n}};
    j.allowed_nodes = {where.first};
    j.waiting_since_s = now_s;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<GresCount> CountsToPublish(
    const SlurmNode& current, const std::string& gres_name, int view_node, const ClusterView& view,
    const ActiveCounts& active, const std::map<std::pair<std::string, std::string>, int>& rooms) {
  std::vector<GresCount> out;
  const bool usable = view_node >= 0 && view.nodes()[view_node].usable;
  std::vector<ProfileCapacity> ceilings;
  if (usable) ceilings = NodeCapacity(view.NodeModels(view_node), view.tables());
  int64_t total = 0;     // the node's MIG total now, the pad's included
  int64_t profiles = 0;  // the profiles' new counts
  int pad = -1;          // the pad's index in `out`
  for (const GresCount& g : current.gres) {
    if (g.name != gres_name) {
      out.push_back(g);
      continue;
    }
    total += g.count;
    if (g.type == kPadType) {
      pad = static_cast<int>(out.size());
      out.push_back(g);
      continue;
    }
    auto get = [&](const std::map<std::pair<std::string, std::string>, int>& m) {
      auto it = m.find({current.name, g.type});
      return it == m.end() ? 0 : it->second;
    };
    GresCount c = g;
    // Not usable: only what Slurm's own jobs hold there, so nothing new
    // starts. Never below that: Slurm forgets the GRES its running jobs hold
    // on a node whose count went under them (its "GRES count underflow"), and
    // would start jobs there once the count is raised again.
    c.count = get(active.all);
    if (usable) {
      int ceiling = 0;
      for (const ProfileCapacity& p : ceilings) {
        if (p.profile == g.type) ceiling = p.count;
      }
      c.count = std::min(ceiling, get(active.all) + get(rooms));
    }
    profiles += c.count;
    out.push_back(c);
  }
  if (pad >= 0) out[pad].count = std::max<int64_t>(0, total - profiles);
  return out;
}

}  // namespace migsched::slurm
