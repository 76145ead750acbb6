#include "slurm/controller.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "cluster/cluster_view.h"
#include "cluster/planner.h"
#include "nodeapi/node_view.h"
#include "slurm/admin_comment.h"
#include "slurm/round.h"

namespace migsched::slurm {
namespace {

// The MIG entries of a node's GRES list.
std::vector<GresCount> MigOnly(const std::vector<GresCount>& gres, const std::string& name) {
  std::vector<GresCount> out;
  for (const GresCount& g : gres) {
    if (g.name == name) out.push_back(g);
  }
  return out;
}

// Whether `job` (scontrol -o show job) still waits with no binding recorded.
bool StillWaiting(const ScontrolRecord& job) {
  if (job.Value("JobState").value_or("") != "PENDING") return false;
  auto bound = ParseBound(job.Rest("AdminComment").value_or(""));
  return !bound.ok() || !bound->has_value();
}

}  // namespace

StatusOr<std::unique_ptr<SlurmController>> SlurmController::Create(const ControllerConfig& config,
                                                                   SlurmClient* slurm,
                                                                   NodeDaemons* nodes,
                                                                   const Catalog* catalog) {
  auto policy = MakePolicy(config.policy, config.PolicyOptions());
  if (!policy.ok()) return policy.status().WithPrefix("scheduler");
  return std::unique_ptr<SlurmController>(new SlurmController(config, slurm, nodes, catalog));
}

SlurmController::SlurmController(const ControllerConfig& config, SlurmClient* slurm,
                                 NodeDaemons* nodes, const Catalog* catalog)
    : config_(config), slurm_(slurm), nodes_(nodes), catalog_(catalog) {
  status_.partition = config_.partition;
  status_.policy = config_.policy;
  status_.started_s = UnixNow();
  status_.tick_interval_s = config_.tick_ms / 1000.0;
}

void SlurmController::RecordTickError(double now_s, const std::string& error) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_.last_attempt_s = now_s;
  status_.last_error = error;
  ++status_.counters.tick_errors;
}

ControllerStatus SlurmController::Snapshot() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

void SlurmController::SayStopped(double now_s) {
  const ControllerStatus st = Snapshot();
  const std::string text = FormatWaiting(fmt::format(
      "the migsched controller is not running (stopped at {:%Y-%m-%d %H:%M:%S} UTC); MIG jobs "
      "start once it runs again",
      fmt::gmtime(static_cast<std::time_t>(now_s))));
  for (const StatusWaiting& w : st.waiting) {
    if (w.reason.rfind("held:", 0) == 0) continue;
    const std::string spec = w.spec.empty() ? std::to_string(w.job) : w.spec;
    if (auto now = slurm_->Job(spec); !now.ok() || !StillWaiting(*now)) continue;
    if (Status s = slurm_->SetAdminComment(spec, text); !s.ok()) {
      spdlog::warn("cannot set the reason of job {}: {}", w.job, s.message());
    }
  }
}

std::vector<NodeInput> SlurmController::FetchNodes() {
  std::vector<std::string> names;
  for (const auto& n : config_.nodes) names.push_back(n.name);
  return ReadNodeStates(nodes_, names, kNodeReadsAtOnce);
}

// What one tick has read and decided, handed from step to step (Tick below). Lives for one tick;
// `cls` points into `jobs` and `started` (a deque: its elements never move).
struct SlurmController::TickFrame {
  double now_s = 0;
  std::vector<SlurmJob> jobs;  // squeue
  bool up = false;             // the partition is UP
  std::vector<SlurmNode> snodes;
  std::map<std::string, const SlurmNode*> snode;  // name -> snodes entry
  std::vector<NodeInput> inputs;                  // the node daemons' states
  std::unique_ptr<ClusterView> view;
  std::set<std::string> usable;  // nodes usable now
  bool node_lost = false;        // a node usable last tick is not now
  Classified cls;
  std::deque<SlurmJob> started;  // waiting in Slurm's answer, bound since (cls points into it)
  ActiveCounts active;
  std::vector<EngineReservation> rooms;
  std::vector<ClusterJob> unroomed;  // started jobs with no room: planned first, pinned
  PlannerInput in;
  ClusterPlan plan;
  std::map<std::pair<std::string, std::string>, int> held;  // (node, profile) -> rooms for waiting
  std::map<size_t, std::string> unheld;  // plan.jobs index -> why a room of it was refused
};

StatusOr<TickReport> SlurmController::Tick(double now_s) {
  TickReport rep;
  TickFrame f;
  f.now_s = now_s;
  RETURN_IF_ERROR(Read(f, &rep));
  Classify(f, &rep);
  TrackLost(f, &rep);
  TrackRooms(f);
  RETURN_IF_ERROR(MakePlan(f, &rep));
  HoldRooms(f, &rep);
  RETURN_IF_ERROR(Publish(f, &rep));
  ReleaseRooms(f, &rep);
  Reclaim(f, &rep);
  Requeue(f, &rep);
  HoldOrExplain(f, &rep);
  SaveStatus(f, rep);
  return rep;
}

// 1. Slurm first, then the daemons (a job Slurm shows as started is then either unbound, its room
// still held, or already bound).
Status SlurmController::Read(TickFrame& f, TickReport* rep) {
  ASSIGN_OR_RETURN(f.jobs, slurm_->Jobs());
  ASSIGN_OR_RETURN(ScontrolRecord part, slurm_->Partition(config_.partition));
  f.up = part.Value("State").value_or("") == "UP";
  ASSIGN_OR_RETURN(f.snodes, slurm_->Nodes());
  for (const SlurmNode& n : f.snodes) f.snode[n.name] = &n;

  f.inputs = FetchNodes();
  // A node of the config that Slurm does not have (a typo in nodes[].name): Slurm can start no
  // job there, so no room is made there (a room would park a job on it until room_timeout_s).
  if (!f.snodes.empty()) {
    for (NodeInput& in : f.inputs) {
      if (f.snode.count(in.name)) continue;
      in.state.reset();
      in.error = fmt::format(
          "Slurm has no node named {} (sinfo); nodes[].name must be Slurm's node name", in.name);
    }
  }
  // A node Slurm has drained or marked down starts no new job: its GPUs are closed to new rooms
  // as a drained GPU is, and its running jobs keep their instances (regression:
  // rooms_on_a_node_slurm_drained: rooms were made there and the jobs waited on them until
  // room_timeout_s while other nodes had room).
  for (NodeInput& in : f.inputs) {
    auto it = f.snode.find(in.name);
    if (it == f.snode.end() || !in.state || !StartsNoJob(*it->second)) continue;
    for (GpuView& g : in.state->gpus) g.draining = true;
  }
  f.view = ClusterView::Build(f.inputs, *catalog_, &tables_);
  for (const ClusterView::Node& n : f.view->nodes()) {
    if (n.usable) {
      f.usable.insert(n.name);
    } else {
      rep->unusable_nodes.push_back(fmt::format("{} ({})", n.name, n.error));
      if (usable_.count(n.name)) {
        f.node_lost = true;
        spdlog::warn("node {} is not usable: {}; its counts drop to its running jobs'", n.name,
                     n.error);
      } else if (!started_) {
        // Unusable from the first tick (a wrong token, a wrong URL): said once, as a loss is.
        spdlog::warn("node {} is not usable: {}", n.name, n.error);
      }
    }
  }
  for (const std::string& n : f.usable) {
    if (started_ && !usable_.count(n)) spdlog::info("node {} is usable again", n);
  }
  return Status::Ok();
}

// 2. The jobs: waiting, active (bound or not), invalid.
void SlurmController::Classify(TickFrame& f, TickReport* rep) {
  f.cls = ClassifyJobs(f.jobs, config_.partition, config_.gres_name, f.now_s);
  const ClusterView& view = *f.view;
  // A job Slurm showed waiting that its prolog has bound since (the daemons
  // are read after Slurm) has started: it is active on the nodes of its
  // allocations, and no room is planned for it again.
  for (auto it = f.cls.waiting.begin(); it != f.cls.waiting.end();) {
    const std::vector<JobId> allocations = view.AllocationsOf(it->request.job.key);
    if (allocations.empty()) {
      ++it;
      continue;
    }
    SlurmJob& j = f.started.emplace_back(*it->slurm);
    j.state = "CONFIGURING";
    j.nodes.clear();
    for (JobId id : allocations) {
      const std::string& node = view.nodes()[view.OccupantOf(id)->node].name;
      if (std::find(j.nodes.begin(), j.nodes.end(), node) == j.nodes.end()) j.nodes.push_back(node);
    }
    f.cls.active.push_back({&j, std::move(it->request)});
    it = f.cls.waiting.erase(it);
  }
  rep->waiting = static_cast<int>(f.cls.waiting.size());
  f.active = CountActive(f.cls.active, view);
}

// Running in Slurm, allocation gone: no room is claimed for them (the freed placements serve
// others); reported once past the grace.
void SlurmController::TrackLost(const TickFrame& f, TickReport* rep) {
  std::map<std::pair<std::string, std::string>, double> lost;
  std::set<std::pair<std::string, std::string>> reported;
  for (const auto& k : f.active.lost) {
    auto it = lost_since_.find(k);
    const double since = it == lost_since_.end() ? f.now_s : it->second;
    lost[k] = since;
    if (f.now_s - since < config_.reclaim_grace_s) continue;
    ++rep->lost;
    reported.insert(k);
    if (!lost_reported_.count(k)) {
      spdlog::warn(
          "{} runs in Slurm on {} but its allocation there is gone (the node's instances were "
          "lost, e.g. a reboot, or released by hand); its GRES stay counted until Slurm ends it; "
          "the placements are free for other jobs",
          k.first, k.second);
    }
  }
  lost_since_ = std::move(lost);
  lost_reported_ = std::move(reported);
}

// The rooms on the daemons, when each was first seen; a room not taken within room_timeout_s is
// released and its (node, profile) avoided as long.
void SlurmController::TrackRooms(TickFrame& f) {
  f.rooms = Rooms(*f.view, f.active, room_first_seen_, f.now_s, config_.room_timeout_s);
  std::map<std::string, double> seen;  // RoomId -> first seen
  for (EngineReservation& h : f.rooms) {
    const std::string& node = f.view->nodes()[h.node].name;
    const std::string id = RoomId(node, h.key);
    seen[id] = room_first_seen_.count(id) ? room_first_seen_[id] : f.now_s;
    if (!h.timed_out) continue;
    for (const PlacementRef& p : h.placements) {
      avoid_until_[{node, p.profile}] = f.now_s + config_.room_timeout_s;
      spdlog::warn("room {} on {} was not taken within {} s: released; {} gets no {} room for {} s",
                   h.key, node, config_.room_timeout_s, node, p.profile, config_.room_timeout_s);
    }
  }
  room_first_seen_ = std::move(seen);
}

// The plan of the whole cluster by the scheduler core (cluster/planner.h).
Status SlurmController::MakePlan(TickFrame& f, TickReport* rep) {
  const std::string& gres = config_.gres_name;
  PlannerInput& in = f.in;
  in.view = f.view.get();
  in.now_s = f.now_s;
  // A job Slurm has started on a node where no room of its profile waits
  // (Slurm freed an ended job's count before its epilog released the
  // instance, and started this job there at once) binds to free placements
  // there once they are free: its demand is planned first, pinned to that
  // node, so that the room it needs is not handed to a waiting job meanwhile
  // (regression: started_job_keeps_the_room_it_binds_to). Its rooms are
  // claimed by it at the next tick and are not added to the counts: Slurm
  // counts the job already.
  f.unroomed = StartedWithoutRoom(f.active, f.rooms, *f.view, f.now_s);
  in.waiting = f.unroomed;
  // A node Slurm has allocated whole (every CPU taken: an --exclusive job, or CPU-bound jobs)
  // starts no other job until one ends: no room there for a waiting job, which would wait on it
  // while other nodes are idle (regression: room_on_a_node_an_exclusive_job_holds). The jobs
  // Slurm started there keep theirs (planned above, pinned to their node).
  std::vector<std::string> allocated_whole;
  for (const SlurmNode& n : f.snodes) {
    if (AllocatedWhole(n)) allocated_whole.push_back(n.name);
  }
  for (const ClassifiedJob& w : f.cls.waiting) {
    ClusterJob job = w.request.job;
    job.excluded_nodes.insert(job.excluded_nodes.end(), allocated_whole.begin(),
                              allocated_whole.end());
    in.waiting.push_back(std::move(job));
  }
  for (const ClassifiedJob& a : f.cls.active) {
    EngineRunningJob r;
    r.job = a.request.job;
    const bool bound = !f.view->AllocationsOf(r.job.key).empty();
    r.may_move = a.slurm->state == "RUNNING" && bound &&
                 static_cast<double>(a.slurm->start_time) + config_.min_runtime_s <= f.now_s;
    // Slurm's TimeLimit is the expected end (§13 reservation); none: unknown.
    if (a.slurm->start_time > 0 && a.slurm->time_limit_min > 0) {
      r.expected_end_s = static_cast<double>(a.slurm->start_time) +
                         60.0 * static_cast<double>(a.slurm->time_limit_min);
    }
    in.running.push_back(std::move(r));
  }
  in.reservations = f.rooms;
  for (auto it = avoid_until_.begin(); it != avoid_until_.end();) {
    if (it->second <= f.now_s) {
      it = avoid_until_.erase(it);
    } else {
      in.avoid.push_back(it->first);
      ++it;
    }
  }
  in.in_flight = f.cls.in_flight;
  // The policy's arrival window: the partition's other MIG jobs Slurm lists
  // (running or ended), in submission order.
  for (const SlurmJob& j : f.jobs) {
    if (j.partition != config_.partition || j.Pending()) continue;
    auto r = ToJobRequest(j, gres);
    if (!r.ok() || !r->has_value()) continue;
    Job a;
    a.profile = (*r)->job.per_node[0].profile;
    a.count = (*r)->job.per_node[0].count;
    in.recent.push_back(a);
  }
  PlannerOptions po;
  po.policy = config_.policy;
  po.scheduler = config_.PolicyOptions();
  po.migrate = config_.migration_enabled;
  po.migrate_after_s = config_.migration_after_s;
  po.max_moved_jobs = config_.max_moved_jobs;
  po.fault = fault_;
  in.reservation_holder = reservation_holder_;
  ASSIGN_OR_RETURN(f.plan, PlanCluster(in, po));
  reservation_holder_ = f.plan.reservation_holder;
  // Decisions the core refused on an internal error: the job waits (its reason says so).
  for (const PlanIncident& inc : f.plan.incidents) {
    ++rep->internal_errors;
    spdlog::error(
        "{}: internal error in the scheduler ({}); this decision is refused, the job waits and is "
        "tried again next tick. GPUs:\n{}",
        inc.job, inc.what, inc.state);
  }
  return Status::Ok();
}

// 3. Hold the rooms: new ones, and renew those taken or claimed.
void SlurmController::HoldRooms(TickFrame& f, TickReport* rep) {
  const double ttl = config_.reservation_ttl_s;
  std::map<std::pair<std::string, std::string>, std::string> refused;  // this tick's
  for (size_t i = 0; i < f.plan.jobs.size(); ++i) {
    const JobPlan& jp = f.plan.jobs[i];
    if (jp.outcome != Outcome::kPlaced) continue;
    const bool for_started = i < f.unroomed.size();
    bool ok = true;
    for (const NodePlacement& np : jp.placements) {
      const std::string& node = f.view->nodes()[np.node].name;
      for (const PlacementRef& p : np.placements) {
        const std::string key = RoomKey(p);
        const bool existing =
            std::find(jp.reservations.begin(), jp.reservations.end(), key) != jp.reservations.end();
        // Rooms do not say whether their job anchors: a prolog binds any room of its profile
        // (kRoomPrefix), so a room may go to another job; the prolog's bind says it instead.
        Status st = nodes_->Reserve(node, key, {p}, ttl, /*anchors=*/false);
        if (!st.ok()) {
          auto last = refusal_logged_.find({node, key});
          if (last == refusal_logged_.end() || last->second != st.message()) {
            spdlog::warn("cannot reserve {} on {} for {}: {}", key, node, jp.key, st.message());
          }
          refused[{node, key}] = st.message();
          f.unheld[i] = fmt::format("{}: {}", node, st.message());
          ok = false;
          continue;
        }
        if (!existing) {
          ++rep->rooms_created;
          spdlog::info("room {} on {} for {} ({})", key, node, jp.key, f.in.waiting[i].Describe());
        }
        if (!for_started) f.held[{node, p.profile}] += 1;
        pending_release_.erase({node, key});
      }
    }
    if (ok && !for_started) ++rep->placed;
  }
  for (const EngineReservation& h : f.rooms) {
    if (!h.claimed) continue;
    const std::string& node = f.view->nodes()[h.node].name;
    if (Status st = nodes_->Reserve(node, h.key, h.placements, ttl, /*anchors=*/false); !st.ok()) {
      spdlog::warn("cannot renew claimed room {} on {}: {}", h.key, node, st.message());
    }
    pending_release_.erase({node, h.key});
  }
  refusal_logged_ = std::move(refused);
}

// 4. The counts and the gate.
Status SlurmController::Publish(TickFrame& f, TickReport* rep) {
  const std::string& gres = config_.gres_name;
  std::map<std::string, std::vector<GresCount>> want;
  for (const NodeEndpoint& ep : config_.nodes) {
    auto it = f.snode.find(ep.name);
    if (it == f.snode.end()) continue;  // Slurm does not know the node: nothing to publish
    want[ep.name] =
        CountsToPublish(*it->second, gres, f.view->FindNode(ep.name), *f.view, f.active, f.held);
  }
  bool counts_differ = false;
  for (const auto& [node, counts] : published_) {
    auto it = f.snode.find(node);
    if (it != f.snode.end() && MigOnly(it->second->gres, gres) != counts) counts_differ = true;
  }
  const bool reverted = !f.up || !started_ || f.node_lost || counts_differ;
  // After Slurm itself put the counts back (reconfigure, slurmctld restart)
  // its slurmd register again; a registration that finds a count other than
  // gres.conf's on a node whose jobs use the GRES drains the node ("gres/mig
  // count changed and jobs are using them"). So the gate stays closed and
  // nothing is published for revert_settle_s, until they have registered.
  const bool slurm_reverted = started_ && (!f.up || counts_differ);
  if (slurm_reverted && settle_until_ == 0) {
    settle_until_ = f.now_s + config_.revert_settle_s;
    if (!f.up) {
      spdlog::warn(
          "partition {} is DOWN (reconfigure or slurmctld restart?): publishing again in {} s",
          config_.partition, config_.revert_settle_s);
    } else {
      spdlog::warn(
          "GRES counts differ from those published (reconfigure or slurmctld restart?): closing "
          "the gate to publish again in {} s",
          config_.revert_settle_s);
    }
  }
  if (reverted) {
    if (f.up) RETURN_IF_ERROR(slurm_->SetPartitionUp(config_.partition, false));
    // A cycle is counted when the gate closes, not at every tick it stays closed (regression:
    // gate_cycles_counted_ticks: 27 after two closures).
    rep->gate_cycled = !gate_closed_;
    gate_closed_ = true;
  }
  if (reverted && settle_until_ > f.now_s) {
    rep->gate_open = false;  // settling: published_ kept, nothing written
  } else {
    published_.clear();
    for (const auto& [node, counts] : want) {
      const SlurmNode* s = f.snode[node];
      if (!reverted && s->gres == counts) {
        published_[node] = MigOnly(counts, gres);
        continue;
      }
      if (Status st = slurm_->SetNodeGres(node, counts); !st.ok()) {
        spdlog::error("cannot publish the counts of {}: {}", node, st.message());
        continue;
      }
      published_[node] = MigOnly(counts, gres);
      ++rep->published_nodes;
    }
    rep->gate_open = f.up && !reverted;
    if (reverted) {
      // Read back before opening: Slurm must show exactly what was published.
      ASSIGN_OR_RETURN(std::vector<SlurmNode> after, slurm_->Nodes());
      bool same = true;
      for (const SlurmNode& n : after) {
        auto it = published_.find(n.name);
        if (it != published_.end() && MigOnly(n.gres, gres) != it->second) {
          same = false;
          spdlog::warn("node {} shows {} after publishing {}", n.name, FormatGresValue(n.gres),
                       FormatGresValue(it->second));
        }
      }
      if (same && published_.size() == want.size()) {
        RETURN_IF_ERROR(slurm_->SetPartitionUp(config_.partition, true));
        rep->gate_open = true;
        settle_until_ = 0;
        spdlog::info("partition {} is UP ({} node{} published)", config_.partition,
                     published_.size(), published_.size() == 1 ? "" : "s");
      }
    }
  }
  gate_closed_ = !rep->gate_open;
  usable_ = f.usable;
  started_ = true;
  return Status::Ok();
}

// 5. Rooms nobody needs: unpublished now, released next tick if still untaken.
void SlurmController::ReleaseRooms(const TickFrame& f, TickReport* rep) {
  std::set<std::pair<std::string, std::string>> still;
  for (const auto& [node_index, key] : f.plan.release) {
    const std::string& node = f.view->nodes()[node_index].name;
    if (pending_release_.count({node, key})) {
      if (Status st = nodes_->Unreserve(node, key); !st.ok()) {
        spdlog::warn("cannot release room {} on {}: {}", key, node, st.message());
        still.insert({node, key});
      } else {
        ++rep->rooms_released;
      }
    } else {
      still.insert({node, key});
    }
  }
  pending_release_ = std::move(still);
}

// 6. Reclaim allocations of Slurm jobs that no longer hold the node.
void SlurmController::Reclaim(const TickFrame& f, TickReport* rep) {
  std::map<std::string, std::set<std::string>> holding;  // job key -> nodes
  for (const ClassifiedJob& a : f.cls.active) {
    holding[a.request.job.key].insert(a.slurm->nodes.begin(), a.slurm->nodes.end());
  }
  std::map<std::pair<std::string, int64_t>, double> orphans;
  for (const NodeInput& ni : f.inputs) {
    if (!ni.state) continue;
    for (const AllocationOnNode& a : AllocationsOn(*ni.state)) {
      if (!JobIdOfKey(a.owner)) continue;  // not a Slurm job's
      if (holding.count(a.owner) && holding[a.owner].count(ni.name)) continue;
      const auto k = std::make_pair(ni.name, a.id);
      const double since = orphan_since_.count(k) ? orphan_since_[k] : f.now_s;
      if (f.now_s - since < config_.reclaim_grace_s) {
        orphans[k] = since;
        continue;
      }
      if (Status st = nodes_->Release(ni.name, a.id); !st.ok()) {
        spdlog::warn("cannot release allocation {} ({}) on {}: {}", a.id, a.owner, ni.name,
                     st.message());
        orphans[k] = since;
        continue;
      }
      ++rep->reclaimed;
      spdlog::info("released allocation {} on {}: {} no longer holds the node", a.id, ni.name,
                   a.owner);
    }
  }
  orphan_since_ = std::move(orphans);
}

// 7. Migrations (requeues), and the begin times of requeued jobs whose waiting job has started.
void SlurmController::Requeue(const TickFrame& f, TickReport* rep) {
  for (const RequeueMove& m : f.plan.migrations) {
    auto id = JobIdOfKey(m.job);
    if (!id) continue;
    // No requeue for a started job's demand: it binds to what its node frees.
    if (m.for_job.rfind(kStartedPrefix, 0) == 0) continue;
    const PlacementRef& p = m.room.placements[0];
    const std::string where =
        fmt::format("{} on {} GPU {}", p.profile, f.view->nodes()[m.room.node].name, p.gpu);
    std::string spec = std::to_string(*id);
    for (const SlurmJob& j : f.jobs) {
      if (j.id == *id) spec = j.Spec();
    }
    Status st = slurm_->SetAdminComment(spec, FormatRequeuedFor(m.for_job, where));
    if (st.ok()) st = slurm_->Requeue(spec);
    if (!st.ok()) {
      spdlog::warn("cannot requeue {} for {}: {}", m.job, m.for_job, st.message());
      continue;
    }
    ++rep->requeued;
    spdlog::info("{}: {}", m.job, m.reason);
  }
  for (const SlurmJob* j : f.cls.release_begin_time) {
    auto for_job = ParseRequeuedFor(j->admin_comment);
    Status st = slurm_->StartNow(j->Spec());
    if (st.ok()) {
      st = slurm_->SetAdminComment(
          j->Spec(), Truncate(fmt::format("{}was requeued to open room for {}, which has started",
                                          kCommentPrefix, for_job.value_or("?"))));
    }
    if (!st.ok()) spdlog::warn("cannot release the begin time of job {}: {}", j->id, st.message());
  }
}

// 8. Holds and reasons: a job that can never run is held with the reason; a waiting job's
// AdminComment says why it waits.
void SlurmController::HoldOrExplain(const TickFrame& f, TickReport* rep) {
  auto hold = [&](const SlurmJob& j, const std::string& reason) {
    Status st = slurm_->SetAdminComment(j.Spec(), FormatHeld(reason));
    if (st.ok()) st = slurm_->Hold(j.Spec());
    if (!st.ok()) {
      spdlog::warn("cannot hold job {}: {}", j.id, st.message());
      return;
    }
    ++rep->held;
    spdlog::info("job {} held: {}", j.id, reason);
  };
  for (const auto& [j, message] : f.cls.invalid) hold(*j, "can never run: " + message);
  int written = 0;
  for (size_t i = f.unroomed.size(); i < f.plan.jobs.size(); ++i) {
    const JobPlan& jp = f.plan.jobs[i];
    const ClassifiedJob& cj = f.cls.waiting[i - f.unroomed.size()];
    if (jp.outcome == Outcome::kNever) {
      hold(*cj.slurm, "can never run: " + jp.reason);
      continue;
    }
    if (jp.outcome == Outcome::kPlaced) continue;
    std::string reason = jp.reason;
    if (!cj.request.marker_error.empty()) reason += "; --comment: " + cj.request.marker_error;
    const std::string text = FormatWaiting(reason);
    // A failed bind's record (its attempt count) stays until the next bind.
    if (ParseBindAttempt(cj.slurm->admin_comment) > 0 || cj.slurm->admin_comment == text) continue;
    // At most kReasonsPerTick writes a tick, and a job's reason at most every
    // kReasonEveryS once set (each is an `scontrol update`).
    auto last = reason_written_.find(cj.slurm->id);
    const bool fresh = cj.slurm->admin_comment.rfind(kCommentPrefix, 0) != 0;
    if (written >= kReasonsPerTick ||
        (!fresh && last != reason_written_.end() && f.now_s - last->second < kReasonEveryS)) {
      continue;
    }
    // A job Slurm has started since it was read must keep the binding its
    // prolog writes into the same AdminComment (the task prolog reads it):
    // not if Slurm shows it started or bound now.
    if (auto now = slurm_->Job(cj.slurm->Spec()); !now.ok() || !StillWaiting(*now)) continue;
    ++written;
    reason_written_[cj.slurm->id] = f.now_s;
    if (Status st = slurm_->SetAdminComment(cj.slurm->Spec(), text); !st.ok()) {
      spdlog::warn("cannot set the reason of job {}: {}", cj.slurm->id, st.message());
    }
  }
  // Forget jobs that no longer wait.
  std::set<int64_t> waiting_ids;
  for (const ClassifiedJob& w : f.cls.waiting) waiting_ids.insert(w.slurm->id);
  std::erase_if(reason_written_, [&](const auto& kv) { return !waiting_ids.count(kv.first); });
}

// 9. The status snapshot (controller_status.h).
void SlurmController::SaveStatus(const TickFrame& f, const TickReport& rep) {
  const std::string& gres = config_.gres_name;
  ControllerStatus st;
  for (const NodeInput& ni : f.inputs) {
    StatusNode sn;
    sn.name = ni.name;
    const int vi = f.view->FindNode(ni.name);
    sn.usable = vi >= 0 && f.view->nodes()[vi].usable;
    sn.error = vi >= 0 ? f.view->nodes()[vi].error : ni.error;
    if (auto it = f.snode.find(ni.name); it != f.snode.end()) {
      sn.slurm_state = it->second->state;
      for (const std::string& flag : it->second->state_flags) sn.slurm_state += "+" + flag;
      auto p = published_.find(ni.name);
      sn.gres =
          FormatGresValue(p != published_.end() ? p->second : MigOnly(it->second->gres, gres));
    }
    if (ni.state) {
      for (const GpuView& g : ni.state->gpus) {
        StatusGpu& sg = sn.gpus.emplace_back(StatusGpu{g.index.value(), g.model, {}});
        for (const InstanceView& in : g.instances) {
          sg.instances.push_back(
              {in.profile, in.start, std::string(HolderKindName(HolderOf(in))), HolderKey(in)});
        }
      }
      for (StatusGpu& g : sn.gpus) {
        std::sort(
            g.instances.begin(), g.instances.end(),
            [](const StatusInstance& a, const StatusInstance& b) { return a.start < b.start; });
      }
    }
    st.nodes.push_back(std::move(sn));
  }
  auto request_text = [](const JobRequest& r) {
    std::vector<std::string> parts;
    for (const ProfileCount& p : r.job.per_node)
      parts.push_back(fmt::format("{}:{}", p.profile, p.count));
    std::string out = fmt::format("{}", fmt::join(parts, ","));
    if (r.job.num_nodes > 1) out += fmt::format(" x{} nodes", r.job.num_nodes);
    return out;
  };
  for (size_t i = 0; i < f.plan.jobs.size(); ++i) {
    const JobPlan& jp = f.plan.jobs[i];
    std::vector<std::string> where;
    // A room the daemon refused is not held: neither listed nor told to the job as its room.
    auto unheld = f.unheld.find(i);
    if (jp.outcome == Outcome::kPlaced && unheld == f.unheld.end()) {
      for (const NodePlacement& np : jp.placements) {
        const std::string& node = f.view->nodes()[np.node].name;
        for (const PlacementRef& p : np.placements) {
          st.rooms.push_back({node, p.gpu.value(), p.profile, p.start, jp.key});
          where.push_back(fmt::format("{} GPU {} {}@{}", node, p.gpu, p.profile, p.start));
        }
      }
    }
    if (i < f.unroomed.size()) continue;
    const ClassifiedJob& cj = f.cls.waiting[i - f.unroomed.size()];
    StatusWaiting w;
    w.job = cj.slurm->id;
    w.spec = cj.slurm->Spec();
    w.request = request_text(cj.request);
    if (unheld != f.unheld.end()) {
      w.reason = "waiting: the node daemon refused its room: " + unheld->second;
    } else if (jp.outcome == Outcome::kPlaced) {
      w.reason = fmt::format("room on {}: Slurm may start it", fmt::join(where, ", "));
    } else if (jp.outcome == Outcome::kNever) {
      w.reason = "held: can never run: " + jp.reason;
    } else {
      w.reason = jp.reason;
    }
    st.waiting.push_back(std::move(w));
  }
  for (const auto& [j, message] : f.cls.invalid) {
    st.waiting.push_back({j->id, "", "held: can never run: " + message, j->Spec()});
  }
  for (const auto& [k, since] : lost_since_) {
    if (f.now_s - since < config_.reclaim_grace_s) continue;
    st.lost.push_back({JobIdOfKey(k.first).value_or(0), k.second, since});
  }
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    st.partition = status_.partition;
    st.policy = status_.policy;
    st.started_s = status_.started_s;
    st.tick_interval_s = status_.tick_interval_s;
    st.last_tick_s = f.now_s;
    st.last_attempt_s = f.now_s;
    st.gate_open = rep.gate_open;
    st.counters = status_.counters;
    StatusCounters& c = st.counters;
    ++c.ticks;
    c.gate_cycles += rep.gate_cycled ? 1 : 0;
    c.rooms_created += rep.rooms_created;
    c.rooms_released += rep.rooms_released;
    c.publishes += rep.published_nodes;
    c.reclaimed += rep.reclaimed;
    c.requeued += rep.requeued;
    c.held += rep.held;
    status_ = std::move(st);
  }
}

}  // namespace migsched::slurm
