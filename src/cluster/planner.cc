#include "cluster/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "cluster/job_placer.h"
#include "cluster/requeue_search.h"
#include "sched/explain.h"
#include "sched/scheduler.h"

namespace migsched {

std::string ClusterJob::Describe() const {
  std::vector<std::string> parts;
  for (const ProfileCount& p : per_node) {
    parts.push_back(p.count == 1 ? p.profile : fmt::format("{}x {}", p.count, p.profile));
  }
  std::string s = fmt::format("{}", fmt::join(parts, " + "));
  if (num_nodes > 1) s += fmt::format(" on each of {} nodes", num_nodes);
  return s;
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPlaced:
      return "placed";
    case Outcome::kWaiting:
      return "waiting";
    case Outcome::kNever:
      return "never";
    case Outcome::kMigrating:
      return "migrating";
  }
  return "?";
}

namespace {

// The node filter of a job: usable, allowed, not excluded, not avoided for the profile.
JobPlacer::NodeFilter FilterOf(const ClusterView& view, const ClusterJob& job,
                               const std::set<std::pair<std::string, std::string>>& avoid) {
  std::vector<char> ok(view.num_nodes(), 0);
  for (int n = 0; n < view.num_nodes(); ++n) {
    const std::string& name = view.nodes()[n].name;
    bool allowed = view.nodes()[n].usable;
    if (allowed && !job.allowed_nodes.empty()) {
      allowed = std::find(job.allowed_nodes.begin(), job.allowed_nodes.end(), name) !=
                job.allowed_nodes.end();
    }
    if (allowed) {
      allowed = std::find(job.excluded_nodes.begin(), job.excluded_nodes.end(), name) ==
                job.excluded_nodes.end();
    }
    ok[n] = allowed ? 1 : 0;
  }
  return [ok, &view, &avoid](int node, const std::string& profile) {
    return ok[node] != 0 && !avoid.count({view.nodes()[node].name, profile});
  };
}

// Whether the job's nodes are restricted by the job itself (not by the state).
bool Restricted(const ClusterJob& j) {
  return !j.allowed_nodes.empty() || !j.excluded_nodes.empty();
}

std::string ShapeKey(const ClusterJob& j) {
  std::string k = fmt::format("{}|", j.num_nodes);
  for (const ProfileCount& p : j.per_node) k += fmt::format("{}x{},", p.count, p.profile);
  k += "|";
  for (const std::string& n : j.allowed_nodes) k += n + ",";
  k += "|";
  for (const std::string& n : j.excluded_nodes) k += n + ",";
  return k;
}

// The nodes not usable, for reasons: "n3 (connection refused)".
std::string UnusableNodes(const ClusterView& view) {
  std::vector<std::string> out;
  for (const ClusterView::Node& n : view.nodes()) {
    if (!n.usable) out.push_back(fmt::format("{} ({})", n.name, n.error));
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

// kNever / kWaiting when the job cannot run on the usable nodes even when
// they are empty (the policy's Capacity per GPU, §4), with the reason; nullopt
// when it can.
std::optional<std::pair<Outcome, std::string>> CanEverRun(const ClusterView& view,
                                                          const ClusterJob& job,
                                                          const PlacementPolicy& policy) {
  const Cluster& c = view.cluster();
  const bool all_usable =
      std::all_of(view.nodes().begin(), view.nodes().end(), [](auto& n) { return n.usable; });
  auto verdict = [&](std::string why) {
    if (all_usable) return std::make_pair(Outcome::kNever, std::move(why));
    return std::make_pair(Outcome::kWaiting,
                          fmt::format("{}; not usable now: {}", why, UnusableNodes(view)));
  };
  if (job.per_node.empty() || job.num_nodes < 1) {
    return std::make_pair(Outcome::kNever, std::string("asks for no MIG instance"));
  }
  if (c.size() == 0) {
    return std::make_pair(Outcome::kWaiting,
                          fmt::format("no node is usable now: {}", UnusableNodes(view)));
  }
  // Profiles some GPU offers.
  std::set<std::string> offered;
  for (const GpuModel* m : c.models()) {
    for (const Profile& p : m->profiles()) offered.insert(p.name);
  }
  for (const ProfileCount& part : job.per_node) {
    if (part.count < 1) {
      return std::make_pair(
          Outcome::kNever, fmt::format("count {} of {} is not positive", part.count, part.profile));
    }
    if (!offered.count(part.profile)) {
      return verdict(fmt::format("no GPU of the cluster offers profile {} (profiles: {})",
                                 part.profile, fmt::join(offered, ", ")));
    }
  }
  std::vector<AskedPart> parts;
  for (const ProfileCount& part : job.per_node)
    parts.push_back(PartOfProfile(part.profile, part.count));
  const CapacityFn capacity = [&](int g, int p) { return policy.Capacity(c, g, p); };
  int capable = 0;
  int judged = 0;  // the nodes the job may use whose GPUs are known (usable)
  // The verdict of the node that comes closest (kTooManySlices before kTooFew, a later part
  // before an earlier one; among kTooFew of one part the node that holds the most of it).
  std::optional<NeverVerdict> closest;
  auto closer = [](const NeverVerdict& a, const NeverVerdict& b) {
    auto rank = [](const NeverVerdict& v) {
      return std::make_tuple(v.kind == NeverVerdict::Kind::kTooManySlices, v.part, v.most);
    };
    return rank(a) > rank(b);
  };
  for (int n = 0; n < view.num_nodes(); ++n) {
    const ClusterView::Node& node = view.nodes()[n];
    if (!node.usable) continue;
    if (!job.allowed_nodes.empty() && std::find(job.allowed_nodes.begin(), job.allowed_nodes.end(),
                                                node.name) == job.allowed_nodes.end()) {
      continue;
    }
    if (std::find(job.excluded_nodes.begin(), job.excluded_nodes.end(), node.name) !=
        job.excluded_nodes.end()) {
      continue;
    }
    std::vector<int> gpus(node.num_gpus);
    for (int k = 0; k < node.num_gpus; ++k) gpus[k] = node.first_gpu + k;
    ++judged;
    const NeverVerdict v = CanEverHold(c, gpus, parts, capacity);
    if (v.can()) {
      ++capable;
    } else if (!closest || closer(v, *closest)) {
      closest = v;
    }
  }
  if (capable >= job.num_nodes) return std::nullopt;
  // No node the job may use could be judged (each is out of reach): nothing says it can never
  // run, and the wait reason says what is not usable now. Regression
  // (trial_never_wording_for_an_unreachable_node): `-w n1` with n1's daemon down was told "no node
  // can ever hold 1g.5gb at once (no node holds all of them together)".
  if (judged == 0 && !all_usable) return std::nullopt;
  if (job.num_nodes == 1) {
    // Worded from the node that comes closest (regression: one 4g.20gb and two 3g.20gb, 10
    // slices on 7-slice GPUs, were told "a node holds at most 1 4g.20gb").
    std::string why = "no node holds all of them together";
    if (closest && closest->kind == NeverVerdict::Kind::kTooManySlices) {
      why = fmt::format("they need {} compute slices together; a node has at most {}",
                        closest->need, closest->most);
    } else if (closest && closest->kind == NeverVerdict::Kind::kTooFew) {
      why = fmt::format("a node holds at most {} {}", closest->most,
                        job.per_node[closest->part].profile);
    } else if (closest && closest->kind == NeverVerdict::Kind::kNotOffered) {
      why = fmt::format("no node offers {}", job.per_node[closest->part].profile);
    }
    return verdict(fmt::format("no node can ever hold {} at once ({})", job.Describe(), why));
  }
  return verdict(fmt::format("needs {} nodes that can each hold {}; {} can", job.num_nodes,
                             job.Describe().substr(0, job.Describe().find(" on each")), capable));
}

// Why a job that can run finds no room now: the fragmented GPUs (enough free
// compute slices and placement units but no free placement of the profile,
// §4 step 6) are named, up to three.
std::string WaitReason(const Cluster& c, const ClusterView& view, const ClusterJob& job,
                       const JobPlacer::NodeFilter& allowed) {
  std::string reason;
  // The nodes this job may use: allowed for some part of it (usable, not excluded) with a GPU
  // open to placements (a drained node's are closed). Regression a_drained_node_is_not_usable:
  // every usable node of the view was counted.
  int usable = 0;
  for (int n = 0; n < static_cast<int>(view.nodes().size()); ++n) {
    const ClusterView::Node& node = view.nodes()[n];
    bool open = false;
    for (int g = node.first_gpu; g < node.first_gpu + node.num_gpus; ++g) {
      open = open || c.accepts_placements(g);
    }
    bool any = false;
    for (const ProfileCount& part : job.per_node) any = any || allowed(n, part.profile);
    usable += open && any ? 1 : 0;
  }
  reason = fmt::format("no room now for {} ({} usable node{})", job.Describe(), usable,
                       usable == 1 ? "" : "s");
  std::vector<std::string> fragmented;
  int more = 0;
  for (const ProfileCount& part : job.per_node) {
    for (int g = 0; g < c.size(); ++g) {
      const int node = view.NodeOf(g);
      if (!c.accepts_placements(g) || !allowed(node, part.profile)) continue;
      const GpuState& gs = c.gpu(g);
      const GpuModel& m = gs.model();
      const int p = m.FindProfile(part.profile);
      if (p < 0) continue;
      if (ExplainGpuRoom(gs, p).kind != GpuRoom::Kind::kFragmented) continue;
      if (fragmented.size() < 3) {
        fragmented.push_back(
            fmt::format("{} GPU {}", view.nodes()[node].name, view.NvmlIndexOf(g)));
      } else {
        ++more;
      }
    }
  }
  if (!fragmented.empty()) {
    reason +=
        fmt::format("; fragmented: {}{} {} enough free slices but no free placement",
                    fmt::join(fragmented, ", "), more > 0 ? fmt::format(" and {} more", more) : "",
                    fragmented.size() + more == 1 ? "has" : "have");
  }
  const std::string unusable = UnusableNodes(view);
  if (!unusable.empty()) reason += "; not usable now: " + unusable;
  return reason;
}

// The held reservations a job may take: covering its per-node request on
// num_nodes allowed nodes, all of them (owned by the job) or pooled ones,
// nodes in order. Empty when they do not cover it.
std::vector<size_t> MatchHeld(const ClusterJob& job, const std::vector<EngineReservation>& held,
                              const std::vector<char>& taken,
                              const JobPlacer::NodeFilter& allowed) {
  // Candidates per node, in input order.
  std::map<int, std::vector<size_t>> by_node;
  bool owned = false;
  for (size_t i = 0; i < held.size(); ++i) {
    if (held[i].owner == job.key) owned = true;
  }
  for (size_t i = 0; i < held.size(); ++i) {
    const EngineReservation& h = held[i];
    if (taken[i] || h.claimed || h.timed_out) continue;
    if (owned ? h.owner != job.key : !h.owner.empty()) continue;
    by_node[h.node].push_back(i);
  }
  std::vector<size_t> out;
  int nodes = 0;
  for (const auto& [node, list] : by_node) {
    if (nodes == job.num_nodes) break;
    // Take, per part, `count` placements of its profile.
    std::vector<size_t> use;
    std::vector<char> used(list.size(), 0);
    bool ok = true;
    for (const ProfileCount& part : job.per_node) {
      if (!allowed(node, part.profile)) {
        ok = false;
        break;
      }
      int need = part.count;
      for (size_t k = 0; k < list.size() && need > 0; ++k) {
        const EngineReservation& h = held[list[k]];
        if (used[k]) continue;
        // A reservation of several placements is taken whole: all of this profile.
        const bool all_this =
            std::all_of(h.placements.begin(), h.placements.end(),
                        [&](const PlacementRef& p) { return p.profile == part.profile; });
        if (!all_this || static_cast<int>(h.placements.size()) > need) continue;
        used[k] = 1;
        need -= static_cast<int>(h.placements.size());
        use.push_back(list[k]);
      }
      if (need > 0) ok = false;
    }
    if (!ok) continue;
    out.insert(out.end(), use.begin(), use.end());
    ++nodes;
  }
  if (nodes < job.num_nodes) return {};
  return out;
}

// Compute slices of the largest part of `job`, on the first model of `cluster` offering it.
int ComputeSlicesOf(const ClusterJob& job, const Cluster& cluster) {
  int most = 0;
  for (const ProfileCount& part : job.per_node) {
    for (const GpuModel* m : cluster.models()) {
      const int p = m->FindProfile(part.profile);
      if (p >= 0) {
        most = std::max(most, m->profile(p).compute_slices);
        break;
      }
    }
  }
  return most;
}

// The waiting jobs (indices, in order) that may get room by requeues, out of `stuck` (those that
// found none): the §13 evacuation options say which. `off`, or migration off:
// §14.5's rule, the first that has waited migrate_after_s. `head`: the first stuck job, if it
// has waited migrate_after_s and evacuation_min_wait_s and asks for evacuation_min_slices
// compute slices. `queue`: every stuck job that passes those, tried in turn.
std::vector<size_t> RequeueCandidates(const PlannerInput& in, const PlannerOptions& options,
                                      const Cluster& cluster, const std::vector<size_t>& stuck) {
  const SchedulerOptions& o = options.scheduler;
  auto waited = [&](size_t i) { return in.now_s - in.waiting[i].waiting_since_s; };
  std::vector<size_t> out;
  if (o.evacuation == EvacuationScope::kOff || !o.migration.enabled) {
    for (size_t i : stuck) {
      if (waited(i) >= options.migrate_after_s) return {i};
    }
    return out;
  }
  auto passes = [&](size_t i) {
    return waited(i) >= options.migrate_after_s && waited(i) >= o.evacuation_min_wait_s &&
           ComputeSlicesOf(in.waiting[i], cluster) >= o.evacuation_min_slices;
  };
  for (size_t i : stuck) {
    if (passes(i)) out.push_back(i);
    if (o.evacuation == EvacuationScope::kHead) break;  // the head only
  }
  return out;
}

}  // namespace

StatusOr<ClusterPlan> PlanCluster(const PlannerInput& in, const PlannerOptions& options) {
  if (in.view == nullptr) return InvalidArgumentError("no cluster view");
  const ClusterView& view = *in.view;
  std::set<std::string> keys;
  for (const ClusterJob& j : in.waiting) {
    if (!keys.insert(j.key).second) {
      return InvalidArgumentError(fmt::format("job '{}' is listed twice", j.key));
    }
  }
  for (const EngineReservation& h : in.reservations) {
    if (h.node < 0 || h.node >= view.num_nodes()) {
      return InvalidArgumentError(
          fmt::format("reservation '{}' names node {}, not in the view", h.key, h.node));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy_owner,
                   MakePolicy(options.policy, options.scheduler));
  PlacementPolicy* policy = policy_owner.get();
  std::set<std::pair<std::string, std::string>> avoid(in.avoid.begin(), in.avoid.end());
  std::set<std::string> avoided_profiles;
  for (const auto& [node, profile] : in.avoid) avoided_profiles.insert(profile);
  std::map<std::string, const InFlightMigration*> in_flight;
  for (const InFlightMigration& m : in.in_flight) in_flight[m.for_job] = &m;

  Cluster scratch = view.cluster();
  if (options.scheduler.anchored_together) {
    // §4 step 2: the running jobs that can never leave their GPU anchor the GPUs they hold.
    std::set<std::string> anchoring;
    for (const EngineRunningJob& r : in.running) {
      if (r.job.anchors()) anchoring.insert(r.job.key);
    }
    AnchorAllocations(view, anchoring, &scratch);
  }
  // The engine's order is the cluster's priority (Slurm's: its own age, fair-share and QOS
  // factors): the scan keeps it and never re-sorts it by a queue order of its own (§5, §14).
  SchedulerOptions in_engine_order = options.scheduler;
  in_engine_order.queue_order = QueueOrder::kFifo;
  JobPlacer placer(&scratch, view, view.tables(), policy, in_engine_order);
  Scheduler& sched = *placer.scheduler();
  // A round serves jobs: an internal error refuses one job's decision, not the round (the job is
  // tried again at the next round, a fresh scheduler: no hold-back within this one).
  sched.SetContainInternalErrors(true, std::numeric_limits<double>::infinity());
  if (options.fault) placer.SetFaultInjector(options.fault);
  // The engine's clock and its running jobs' expected ends (§5/§13 look-ahead reservation).
  sched.SetNow(in.now_s);
  for (const EngineRunningJob& r : in.running) {
    if (!std::isfinite(r.expected_end_s)) continue;
    for (JobId id : view.AllocationsOf(r.job.key)) sched.SetExpectedEnd(id, r.expected_end_s);
  }
  // No move inside a scan: the engine moves a job only by requeueing it (step 4 below).
  sched.SetMoveFilter([](JobId) { return false; });
  // The arrival window (§2): the recent arrivals, then the waiting jobs (a
  // job queued below is observed by Scheduler::Enqueue, the others here).
  for (const Job& j : in.recent) sched.ObserveArrival(j);
  ClusterPlan plan;
  plan.jobs.resize(in.waiting.size());
  std::vector<char> taken(in.reservations.size(), 0);
  std::vector<char> fresh(in.waiting.size(), 0);     // placed now, not from held reservations
  std::map<std::string, std::string> failed_shapes;  // shape -> reason of its first failure
  std::map<std::string, std::optional<std::pair<Outcome, std::string>>> ever;

  // Jobs with a migration in flight go first: the room opened is theirs.
  std::vector<size_t> order;
  for (size_t i = 0; i < in.waiting.size(); ++i) {
    if (in_flight.count(in.waiting[i].key)) order.push_back(i);
  }
  for (size_t i = 0; i < in.waiting.size(); ++i) {
    if (!in_flight.count(in.waiting[i].key)) order.push_back(i);
  }
  auto wait = [&](size_t i, const JobPlacer::NodeFilter& allowed) {
    const ClusterJob& job = in.waiting[i];
    JobPlan& jp = plan.jobs[i];
    jp.outcome = Outcome::kWaiting;
    const std::string shape = ShapeKey(job);
    if (!failed_shapes.count(shape)) failed_shapes[shape] = WaitReason(scratch, view, job, allowed);
    jp.reason = failed_shapes[shape];
  };
  // One-instance jobs queued for the next scan: (waiting index, scheduler id).
  std::vector<std::pair<size_t, JobId>> batch;
  // A decision the core refused on an internal error: the job waits, saying so.
  auto refused = [&](size_t i, std::string what, std::string state) {
    JobPlan& jp = plan.jobs[i];
    jp.outcome = Outcome::kWaiting;
    jp.reason = fmt::format(
        "migsched hit an internal error deciding for this job ({}); it is tried again next round",
        what);
    plan.incidents.push_back({in.waiting[i].key, std::move(what), std::move(state)});
  };
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::Ok();
    // §13 reservation keeping across rounds: the last round's holder, where this scan has it.
    sched.SetReservationHolder(kNoJob);
    for (const auto& [i, id] : batch) {
      if (!in.reservation_holder.empty() && in.waiting[i].key == in.reservation_holder) {
        sched.SetReservationHolder(id);
      }
    }
    ASSIGN_OR_RETURN(std::vector<Decision> decisions, sched.ScheduleQueue());
    for (const auto& [i, id] : batch) {
      if (id == sched.reservation_holder()) plan.reservation_holder = in.waiting[i].key;
    }
    std::map<JobId, const Decision*> by_id;
    for (const Decision& d : decisions) by_id[d.job] = &d;
    std::map<JobId, Scheduler::InternalIncident> incidents;
    for (Scheduler::InternalIncident& inc : sched.TakeIncidents()) incidents[inc.job] = inc;
    for (const auto& [i, id] : batch) {
      auto it = by_id.find(id);
      if (auto inc = incidents.find(id); it == by_id.end() && inc != incidents.end()) {
        sched.RemoveFromQueue(id);
        refused(i, inc->second.what, inc->second.state);
        continue;
      }
      if (it == by_id.end()) {
        sched.RemoveFromQueue(id);  // it waits; a later scan must not place it out of turn
        wait(i, FilterOf(view, in.waiting[i], avoid));
        continue;
      }
      const InstanceRef& r = it->second->instances.at(0);
      JobPlan& jp = plan.jobs[i];
      jp.outcome = Outcome::kPlaced;
      jp.placements = {{view.NodeOf(r.gpu), {view.ToRef(r.gpu, r.profile, r.start)}}};
      fresh[i] = 1;
    }
    batch.clear();
    return Status::Ok();
  };
  for (size_t i : order) {
    const ClusterJob& job = in.waiting[i];
    JobPlan& jp = plan.jobs[i];
    jp.key = job.key;
    const std::string shape = ShapeKey(job);
    if (!ever.count(shape)) ever[shape] = CanEverRun(view, job, *policy);
    if (const auto& v = ever[shape]; v) {
      jp.outcome = v->first;
      jp.reason = v->second;
      continue;
    }
    const JobPlacer::NodeFilter allowed = FilterOf(view, job, avoid);
    // 1. Reservations already held that cover it.
    const std::vector<size_t> held = MatchHeld(job, in.reservations, taken, allowed);
    if (!held.empty()) {
      jp.outcome = Outcome::kPlaced;
      std::map<int, NodePlacement> per_node;
      std::vector<int> node_order;
      for (size_t h : held) {
        taken[h] = 1;
        const EngineReservation& r = in.reservations[h];
        jp.reservations.push_back(r.key);
        if (!per_node.count(r.node)) node_order.push_back(r.node);
        NodePlacement& np = per_node[r.node];
        np.node = r.node;
        np.placements.insert(np.placements.end(), r.placements.begin(), r.placements.end());
      }
      for (int n : node_order) jp.placements.push_back(per_node[n]);
      for (const ProfileCount& p : job.per_node) sched.ObserveArrival(placer.ToJob(job, p));
      continue;
    }
    // 2. Fresh placements (every held reservation stays occupied this round).
    const bool one_instance = job.num_nodes == 1 && job.per_node.size() == 1 &&
                              job.per_node[0].count == 1 && !Restricted(job) &&
                              !avoided_profiles.count(job.per_node[0].profile);
    if (one_instance) {
      // Queued for the scan of this run of one-instance jobs (§5, §12).
      const JobId id = placer.NextId();
      sched.Enqueue(id, placer.ToJob(job, job.per_node[0]), job.waiting_since_s);
      batch.push_back({i, id});
      continue;
    }
    RETURN_IF_ERROR(flush());
    for (const ProfileCount& p : job.per_node) sched.ObserveArrival(placer.ToJob(job, p));
    if (!Restricted(job) && failed_shapes.count(shape)) {
      wait(i, allowed);
      continue;
    }
    StatusOr<std::optional<std::vector<NodePlacement>>> placed = placer.Place(job, allowed);
    if (!placed.ok() && placed.status().code() == StatusCode::kInternal) {
      std::string state;
      for (int g = 0; g < scratch.size(); ++g) {
        state += (g > 0 ? "\n" : "") + scratch.gpu(g).DebugString();
      }
      refused(i, placed.status().message(), std::move(state));
      continue;
    }
    ASSIGN_OR_RETURN(auto where, std::move(placed));
    if (where) {
      jp.outcome = Outcome::kPlaced;
      jp.placements = std::move(*where);
      fresh[i] = 1;
    } else {
      wait(i, allowed);
    }
  }
  RETURN_IF_ERROR(flush());
  std::vector<size_t> stuck;  // jobs that found no room, in order (requeue candidates)
  for (size_t i : order) {
    const ClusterJob& job = in.waiting[i];
    JobPlan& jp = plan.jobs[i];
    if (fresh[i]) {
      for (const NodePlacement& np : jp.placements) {
        for (const PlacementRef& p : np.placements) plan.create.push_back({np.node, job.key, p});
      }
    }
    if (jp.outcome != Outcome::kWaiting) continue;
    if (auto it = in_flight.find(job.key); it != in_flight.end()) {
      jp.outcome = Outcome::kMigrating;
      jp.reason = fmt::format("room being opened: waiting for {} to release their instances ({})",
                              fmt::join(it->second->moved, ", "), jp.reason);
      continue;
    }
    stuck.push_back(i);
  }
  // 3. Held reservations no job took.
  for (size_t h = 0; h < in.reservations.size(); ++h) {
    const EngineReservation& r = in.reservations[h];
    if (!taken[h] && !r.claimed) plan.release.push_back({r.node, r.key});
  }
  // 4. Requeue migration, one at a time (§14.5): how the engine carries out a §13 evacuation.
  const std::vector<size_t> candidates = RequeueCandidates(in, options, scratch, stuck);
  if (options.migrate && in.in_flight.empty() && !candidates.empty()) {
    std::vector<const ClusterJob*> movable;
    for (const EngineRunningJob& r : in.running) {
      if (r.may_move && r.job.migratable != Migratable::kNone && !r.job.latency_sensitive) {
        movable.push_back(&r.job);
      }
    }
    const FilterFor filter_for = [&](const ClusterJob& j) { return FilterOf(view, j, avoid); };
    for (size_t c : candidates) {
      const ClusterJob& w = in.waiting[c];
      ASSIGN_OR_RETURN(auto choice, SearchRequeue(scratch, view, w, movable, filter_for, policy,
                                                  options.scheduler, options.max_moved_jobs));
      if (!choice) continue;
      JobPlan& jp = plan.jobs[c];
      const PlacementRef& room = choice->room.placements[0];
      const std::string where = fmt::format("{} on {} GPU {}", room.profile,
                                            view.nodes()[choice->room.node].name, room.gpu);
      jp.outcome = Outcome::kMigrating;
      jp.reason = fmt::format("room being opened ({}) by requeueing {}", where,
                              fmt::join(choice->moved, ", "));
      for (const std::string& m : choice->moved) {
        plan.migrations.push_back({m, w.key, choice->room,
                                   fmt::format("requeued to open room for {} ({})", w.key, where)});
      }
      break;
    }
  }
  return plan;
}

}  // namespace migsched
