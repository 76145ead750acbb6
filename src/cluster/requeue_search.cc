#include "cluster/requeue_search.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/plan.h"
#include "sched/candidates.h"

namespace migsched {
namespace {

struct Option {
  std::vector<std::string> moved;  // ascending
  int slices = 0;
  int gpu = -1;
  int profile = -1;
  int start = 0;
  auto Key() const { return std::make_tuple(moved.size(), slices, gpu, start); }
};

}  // namespace

StatusOr<std::optional<RequeueChoice>> SearchRequeue(
    const Cluster& cluster, const ClusterView& view, const ClusterJob& waiting,
    const std::vector<const ClusterJob*>& movable, const FilterFor& filter_for,
    PlacementPolicy* policy, const SchedulerOptions& options, int max_moved_jobs) {
  if (waiting.num_nodes != 1 || waiting.per_node.size() != 1 || waiting.per_node[0].count != 1 ||
      max_moved_jobs < 1 || movable.empty()) {
    return std::optional<RequeueChoice>();
  }
  const std::string& profile_name = waiting.per_node[0].profile;
  std::map<std::string, const ClusterJob*> by_key;
  for (const ClusterJob* j : movable) by_key[j->key] = j;
  // The movable job holding a busy instance, or "" (not movable).
  auto holder = [&](const Instance& in) -> std::string {
    const ClusterView::Occupant* o = view.OccupantOf(in.job);
    if (o == nullptr || o->kind != HolderKind::kAllocation || !by_key.count(o->owner)) return "";
    return o->owner;
  };
  // Compute slices each movable job holds, over the whole cluster.
  std::map<std::string, int> slices;
  for (int g = 0; g < cluster.size(); ++g) {
    for (const Instance& in : cluster.gpu(g).instances()) {
      if (!in.busy()) continue;
      const std::string k = holder(in);
      if (!k.empty()) slices[k] += cluster.gpu(g).model().profile(in.profile).compute_slices;
    }
  }
  const JobPlacer::NodeFilter allowed = filter_for(waiting);
  std::vector<Option> options_found;
  for (int n = 0; n < view.num_nodes(); ++n) {
    const ClusterView::Node& node = view.nodes()[n];
    if (!node.usable || !allowed(n, profile_name)) continue;
    for (int k = 0; k < node.num_gpus; ++k) {
      const int g = node.first_gpu + k;
      if (!cluster.accepts_placements(g)) continue;
      const GpuState& gs = cluster.gpu(g);
      const GpuModel& m = gs.model();
      const int p = m.FindProfile(profile_name);
      if (p < 0) continue;
      const ConfigTable& table = gs.table();
      for (int slot : m.SlotsOfProfile(p)) {
        const uint64_t mask = m.slots()[slot].unit_mask;
        std::set<std::string> moved;
        bool ok = true;
        for (const Instance& in : gs.instances()) {
          if (!in.busy() || (m.slots()[in.slot].unit_mask & mask) == 0) continue;
          const std::string key = holder(in);
          if (key.empty()) {
            ok = false;
            break;
          }
          moved.insert(key);
        }
        if (!ok || moved.empty() || static_cast<int>(moved.size()) > max_moved_jobs) continue;
        ConfigId c = gs.busy_config();
        for (const Instance& in : gs.instances()) {
          if (in.busy() && moved.count(holder(in))) c = table.Remove(c, in.slot);
        }
        if (c == kInvalidConfig || table.Add(c, slot) == kInvalidConfig) continue;
        Option o;
        o.moved.assign(moved.begin(), moved.end());
        for (const std::string& key : o.moved) o.slices += slices[key];
        o.gpu = g;
        o.profile = p;
        o.start = m.slots()[slot].start;
        options_found.push_back(std::move(o));
      }
    }
  }
  std::sort(options_found.begin(), options_found.end(),
            [](const Option& a, const Option& b) { return a.Key() < b.Key(); });
  const JobId waiting_id = kFirstOccupantId - 1;
  int tried = 0;
  for (const Option& o : options_found) {
    if (++tried > kMaxOptionsTried) break;
    Cluster copy = cluster;
    Plan release;
    const std::set<std::string> moved(o.moved.begin(), o.moved.end());
    for (int g = 0; g < copy.size(); ++g) {
      for (const Instance& in : copy.gpu(g).instances()) {
        if (in.busy() && moved.count(holder(in))) {
          release.steps.push_back({StepKind::kRelease, g, in.profile, in.start, in.job});
        }
      }
    }
    RETURN_IF_ERROR(ApplyPlan(release, &copy));
    RETURN_IF_ERROR(ApplyPlan(PlacementPlan(copy, o.gpu, o.profile, o.start, waiting_id), &copy));
    JobPlacer placer(&copy, view, view.tables(), policy, options);
    RequeueChoice choice;
    choice.moved = o.moved;
    choice.room.node = view.NodeOf(o.gpu);
    choice.room.placements.push_back(view.ToRef(o.gpu, o.profile, o.start));
    bool all = true;
    for (const std::string& key : o.moved) {
      const ClusterJob& j = *by_key[key];
      ASSIGN_OR_RETURN(auto where, placer.Place(j, filter_for(j)));
      if (!where) {
        all = false;
        break;
      }
      choice.to.push_back(std::move(*where));
    }
    if (all) return std::optional<RequeueChoice>(std::move(choice));
  }
  return std::optional<RequeueChoice>();
}

}  // namespace migsched
