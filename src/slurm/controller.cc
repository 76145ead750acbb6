#include "slurm/controller.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>

#include "cluster/planner.h"
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
    if (auto now = slurm_->Job(w.job); !now.ok() || !StillWaiting(*now)) continue;
    if (Status s = slurm_->SetAdminComment(w.job, text); !s.ok()) {
      spdlog::warn("cannot set the reason of job {}: {}", w.job, s.message());
    }
  }
}

std::vector<NodeInput> SlurmController::FetchNodes() {
  std::vector<std::string> names;
  for (const auto& n : config_.nodes) names.push_back(n.name);
  return ReadNodeStates(nodes_, names, kNodeReadsAtOnce);
}

StatusOr<TickReport> SlurmController::Tick(double now_s) {
  TickReport rep;
  const std::string& gres = config_.gres_name;
  // 1. Slurm first, then the daemons (a job Slurm shows as started is then
  // either unbound, its room still held, or already bound).
  ASSIGN_OR_RETURN(std::vector<SlurmJob> jobs, slurm_->Jobs());
  ASSIGN_OR_RETURN(ScontrolRecord part, slurm_->Partition(config_.partition));
  const bool up = part.Value("State").value_or("") == "UP";
  ASSIGN_OR_RETURN(std::vector<SlurmNode> snodes, slurm_->Nodes());
  std::map<std::string, const SlurmNode*> snode;
  for (const SlurmNode& n : snodes) snode[n.name] = &n;

  const std::vector<NodeInput> inputs = FetchNodes();
  std::unique_ptr<ClusterView> view = ClusterView::Build(inputs, *catalog_, &tables_);
  bool node_lost = false;
  std::set<std::string> usable;
  for (const ClusterView::Node& n : view->nodes()) {
    if (n.usable) {
      usable.insert(n.name);
    } else {
      rep.unusable_nodes.push_back(fmt::format("{} ({})", n.name, n.error));
      if (usable_.count(n.name)) {
        node_lost = true;
        spdlog::warn("node {} is not usable: {}; its counts drop to its running jobs'", n.name,
                     n.error);
      }
    }
  }
  for (const std::string& n : usable) {
    if (started_ && !usable_.count(n)) spdlog::info("node {} is usable again", n);
  }

  // 2. The jobs, the rooms, the plan.
  Classified cls = ClassifyJobs(jobs, config_.partition, gres, now_s);
  // A job Slurm showed waiting that its prolog has bound since (the daemons
  // are read after Slurm) has started: it is active on the nodes of its
  // allocations, and no room is planned for it again.
  std::deque<SlurmJob> started;  // cls points into it
  for (auto it = cls.waiting.begin(); it != cls.waiting.end();) {
    const std::vector<JobId> allocations = view->AllocationsOf(it->request.job.key);
    if (allocations.empty()) {
      ++it;
      continue;
    }
    SlurmJob& j = started.emplace_back(*it->slurm);
    j.state = "CONFIGURING";
    j.nodes.clear();
    for (JobId id : allocations) {
      const std::string& node = view->nodes()[view->OccupantOf(id)->node].name;
      if (std::find(j.nodes.begin(), j.nodes.end(), node) == j.nodes.end()) j.nodes.push_back(node);
    }
    cls.active.push_back({&j, std::move(it->request)});
    it = cls.waiting.erase(it);
  }
  rep.waiting = static_cast<int>(cls.waiting.size());
  const ActiveCounts active = CountActive(cls.active, *view);
  // Running in Slurm, allocation gone: no room is claimed for them (the
  // freed placements serve others); reported once past the grace.
  {
    std::map<std::pair<std::string, std::string>, double> lost;
    std::set<std::pair<std::string, std::string>> reported;
    for (const auto& k : active.lost) {
      auto it = lost_since_.find(k);
      const double since = it == lost_since_.end() ? now_s : it->second;
      lost[k] = since;
      if (now_s - since < config_.reclaim_grace_s) continue;
      ++rep.lost;
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
  std::vector<EngineReservation> rooms =
      Rooms(*view, active, room_first_seen_, now_s, config_.room_timeout_s);
  std::map<std::string, double> seen;  // RoomId -> first seen
  for (EngineReservation& h : rooms) {
    const std::string id = RoomId(view->nodes()[h.node].name, h.key);
    seen[id] = room_first_seen_.count(id) ? room_first_seen_[id] : now_s;
    if (h.timed_out) {
      const std::string& node = view->nodes()[h.node].name;
      for (const PlacementRef& p : h.placements) {
        avoid_until_[{node, p.profile}] = now_s + config_.room_timeout_s;
        spdlog::warn(
            "room {} on {} was not taken within {} s: released; {} gets no {} room for "
            "{} s",
            h.key, node, config_.room_timeout_s, node, p.profile, config_.room_timeout_s);
      }
    }
  }
  room_first_seen_ = std::move(seen);

  PlannerInput in;
  in.view = view.get();
  in.now_s = now_s;
  // A job Slurm has started on a node where no room of its profile waits
  // (Slurm freed an ended job's count before its epilog released the
  // instance, and started this job there at once) binds to free placements
  // there once they are free: its demand is planned first, pinned to that
  // node, so that the room it needs is not handed to a waiting job meanwhile
  // (regression: started_job_keeps_the_room_it_binds_to). Its rooms are
  // claimed by it at the next tick and are not added to the counts: Slurm
  // counts the job already.
  const std::vector<ClusterJob> unroomed = StartedWithoutRoom(active, rooms, *view, now_s);
  in.waiting = unroomed;
  for (const ClassifiedJob& w : cls.waiting) in.waiting.push_back(w.request.job);
  for (const ClassifiedJob& a : cls.active) {
    EngineRunningJob r;
    r.job = a.request.job;
    const bool bound = !view->AllocationsOf(r.job.key).empty();
    r.may_move = a.slurm->state == "RUNNING" && bound &&
                 static_cast<double>(a.slurm->start_time) + config_.min_runtime_s <= now_s;
    // Slurm's TimeLimit is the expected end (§13 reservation); none: unknown.
    if (a.slurm->start_time > 0 && a.slurm->time_limit_min > 0) {
      r.expected_end_s = static_cast<double>(a.slurm->start_time) +
                         60.0 * static_cast<double>(a.slurm->time_limit_min);
    }
    in.running.push_back(std::move(r));
  }
  in.reservations = rooms;
  for (auto it = avoid_until_.begin(); it != avoid_until_.end();) {
    if (it->second <= now_s) {
      it = avoid_until_.erase(it);
    } else {
      in.avoid.push_back(it->first);
      ++it;
    }
  }
  in.in_flight = cls.in_flight;
  // The policy's arrival window: the partition's other MIG jobs Slurm lists
  // (running or ended), in submission order.
  for (const SlurmJob& j : jobs) {
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
  ASSIGN_OR_RETURN(ClusterPlan plan, PlanCluster(in, po));
  // Decisions the core refused on an internal error: the job waits (its reason says so).
  for (const PlanIncident& inc : plan.incidents) {
    ++rep.internal_errors;
    spdlog::error(
        "{}: internal error in the scheduler ({}); this decision is refused, the job waits and is "
        "tried again next tick. GPUs:\n{}",
        inc.job, inc.what, inc.state);
  }

  // 3. Hold the rooms: new ones, and renew those taken or claimed.
  std::map<std::pair<std::string, std::string>, int> held;  // rooms for waiting jobs
  const double ttl = config_.reservation_ttl_s;
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const JobPlan& jp = plan.jobs[i];
    if (jp.outcome != Outcome::kPlaced) continue;
    const bool for_started = i < unroomed.size();
    bool ok = true;
    for (const NodePlacement& np : jp.placements) {
      const std::string& node = view->nodes()[np.node].name;
      for (const PlacementRef& p : np.placements) {
        const std::string key = RoomKey(p);
        const bool existing =
            std::find(jp.reservations.begin(), jp.reservations.end(), key) != jp.reservations.end();
        Status st = nodes_->Reserve(node, key, {p}, ttl);
        if (!st.ok()) {
          spdlog::warn("cannot reserve {} on {} for {}: {}", key, node, jp.key, st.message());
          ok = false;
          continue;
        }
        if (!existing) {
          ++rep.rooms_created;
          spdlog::info("room {} on {} for {} ({})", key, node, jp.key, in.waiting[i].Describe());
        }
        if (!for_started) held[{node, p.profile}] += 1;
        pending_release_.erase({node, key});
      }
    }
    if (ok && !for_started) ++rep.placed;
  }
  for (const EngineReservation& h : rooms) {
    if (!h.claimed) continue;
    const std::string& node = view->nodes()[h.node].name;
    if (Status st = nodes_->Reserve(node, h.key, h.placements, ttl); !st.ok()) {
      spdlog::warn("cannot renew claimed room {} on {}: {}", h.key, node, st.message());
    }
    pending_release_.erase({node, h.key});
  }

  // 4. The counts and the gate.
  std::map<std::string, std::vector<GresCount>> want;
  for (const NodeEndpoint& ep : config_.nodes) {
    auto it = snode.find(ep.name);
    if (it == snode.end()) continue;  // Slurm does not know the node: nothing to publish
    want[ep.name] =
        CountsToPublish(*it->second, gres, view->FindNode(ep.name), *view, active, held);
  }
  bool counts_differ = false;
  for (const auto& [node, counts] : published_) {
    auto it = snode.find(node);
    if (it != snode.end() && MigOnly(it->second->gres, gres) != counts) counts_differ = true;
  }
  const bool reverted = !up || !started_ || node_lost || counts_differ;
  // After Slurm itself put the counts back (reconfigure, slurmctld restart)
  // its slurmd register again; a registration that finds a count other than
  // gres.conf's on a node whose jobs use the GRES drains the node ("gres/mig
  // count changed and jobs are using them"). So the gate stays closed and
  // nothing is published for revert_settle_s, until they have registered.
  const bool slurm_reverted = started_ && (!up || counts_differ);
  if (slurm_reverted && settle_until_ == 0) {
    settle_until_ = now_s + config_.revert_settle_s;
    if (!up) {
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
    if (up) RETURN_IF_ERROR(slurm_->SetPartitionUp(config_.partition, false));
    rep.gate_cycled = true;
  }
  if (reverted && settle_until_ > now_s) {
    rep.gate_open = false;  // settling: published_ kept, nothing written
  } else {
    published_.clear();
    for (const auto& [node, counts] : want) {
      const SlurmNode* s = snode[node];
      if (!reverted && s->gres == counts) {
        published_[node] = MigOnly(counts, gres);
        continue;
      }
      if (Status st = slurm_->SetNodeGres(node, counts); !st.ok()) {
        spdlog::error("cannot publish the counts of {}: {}", node, st.message());
        continue;
      }
      published_[node] = MigOnly(counts, gres);
      ++rep.published_nodes;
    }
    rep.gate_open = up && !reverted;
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
        rep.gate_open = true;
        settle_until_ = 0;
        spdlog::info("partition {} is UP ({} nodes published)", config_.partition,
                     published_.size());
      }
    }
  }
  usable_ = usable;
  started_ = true;

  // 5. Rooms nobody needs: unpublished now, released next tick if still untaken.
  std::set<std::pair<std::string, std::string>> still;
  for (const auto& [node_index, key] : plan.release) {
    const std::string& node = view->nodes()[node_index].name;
    if (pending_release_.count({node, key})) {
      if (Status st = nodes_->Unreserve(node, key); !st.ok()) {
        spdlog::warn("cannot release room {} on {}: {}", key, node, st.message());
        still.insert({node, key});
      } else {
        ++rep.rooms_released;
      }
    } else {
      still.insert({node, key});
    }
  }
  pending_release_ = std::move(still);

  // 6. Reclaim allocations of Slurm jobs that no longer hold the node.
  std::map<std::string, std::set<std::string>> holding;  // job key -> nodes
  for (const ClassifiedJob& a : cls.active) {
    holding[a.request.job.key].insert(a.slurm->nodes.begin(), a.slurm->nodes.end());
  }
  std::map<std::pair<std::string, int64_t>, double> orphans;
  for (const NodeInput& ni : inputs) {
    if (!ni.state) continue;
    for (const NodeAllocation& a : ni.state->allocations) {
      if (!JobIdOfKey(a.owner)) continue;  // not a Slurm job's
      if (holding.count(a.owner) && holding[a.owner].count(ni.name)) continue;
      const auto k = std::make_pair(ni.name, a.id);
      const double since = orphan_since_.count(k) ? orphan_since_[k] : now_s;
      if (now_s - since < config_.reclaim_grace_s) {
        orphans[k] = since;
        continue;
      }
      if (Status st = nodes_->Release(ni.name, a.id); !st.ok()) {
        spdlog::warn("cannot release allocation {} ({}) on {}: {}", a.id, a.owner, ni.name,
                     st.message());
        orphans[k] = since;
        continue;
      }
      ++rep.reclaimed;
      spdlog::info("released allocation {} on {}: {} no longer holds the node", a.id, ni.name,
                   a.owner);
    }
  }
  orphan_since_ = std::move(orphans);

  // 7. Migrations, holds and reasons.
  std::map<std::string, const SlurmJob*> by_key;
  for (const SlurmJob& j : jobs) by_key[JobKey(j.id)] = &j;
  for (const RequeueMove& m : plan.migrations) {
    auto id = JobIdOfKey(m.job);
    if (!id) continue;
    // No requeue for a started job's demand: it binds to what its node frees.
    if (m.for_job.rfind(kStartedPrefix, 0) == 0) continue;
    const PlacementRef& p = m.room.placements[0];
    const std::string where =
        fmt::format("{} on {} GPU {}", p.profile, view->nodes()[m.room.node].name, p.gpu);
    Status st = slurm_->SetAdminComment(*id, FormatRequeuedFor(m.for_job, where));
    if (st.ok()) st = slurm_->Requeue(*id);
    if (!st.ok()) {
      spdlog::warn("cannot requeue {} for {}: {}", m.job, m.for_job, st.message());
      continue;
    }
    ++rep.requeued;
    spdlog::info("{}: {}", m.job, m.reason);
  }
  for (const SlurmJob* j : cls.release_begin_time) {
    auto for_job = ParseRequeuedFor(j->admin_comment);
    Status st = slurm_->StartNow(j->id);
    if (st.ok()) {
      st = slurm_->SetAdminComment(
          j->id, Truncate(fmt::format("{}was requeued to open room for {}, which has started",
                                      kCommentPrefix, for_job.value_or("?"))));
    }
    if (!st.ok()) spdlog::warn("cannot release the begin time of job {}: {}", j->id, st.message());
  }
  auto hold = [&](const SlurmJob& j, const std::string& reason) {
    Status st = slurm_->SetAdminComment(j.id, FormatHeld(reason));
    if (st.ok()) st = slurm_->Hold(j.id);
    if (!st.ok()) {
      spdlog::warn("cannot hold job {}: {}", j.id, st.message());
      return;
    }
    ++rep.held;
    spdlog::info("job {} held: {}", j.id, reason);
  };
  for (const auto& [j, message] : cls.invalid) hold(*j, "can never run: " + message);
  int written = 0;
  for (size_t i = unroomed.size(); i < plan.jobs.size(); ++i) {
    const JobPlan& jp = plan.jobs[i];
    const ClassifiedJob& cj = cls.waiting[i - unroomed.size()];
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
        (!fresh && last != reason_written_.end() && now_s - last->second < kReasonEveryS)) {
      continue;
    }
    // A job Slurm has started since it was read must keep the binding its
    // prolog writes into the same AdminComment (the task prolog reads it):
    // not if Slurm shows it started or bound now.
    if (auto now = slurm_->Job(cj.slurm->id); !now.ok() || !StillWaiting(*now)) continue;
    ++written;
    reason_written_[cj.slurm->id] = now_s;
    if (Status st = slurm_->SetAdminComment(cj.slurm->id, text); !st.ok()) {
      spdlog::warn("cannot set the reason of job {}: {}", cj.slurm->id, st.message());
    }
  }
  // Forget jobs that no longer wait.
  std::set<int64_t> waiting_ids;
  for (const ClassifiedJob& w : cls.waiting) waiting_ids.insert(w.slurm->id);
  std::erase_if(reason_written_, [&](const auto& kv) { return !waiting_ids.count(kv.first); });

  // 8. The status snapshot (controller_status.h).
  ControllerStatus st;
  for (const NodeInput& ni : inputs) {
    StatusNode sn;
    sn.name = ni.name;
    const int vi = view->FindNode(ni.name);
    sn.usable = vi >= 0 && view->nodes()[vi].usable;
    sn.error = vi >= 0 ? view->nodes()[vi].error : ni.error;
    if (auto it = snode.find(ni.name); it != snode.end()) {
      sn.slurm_state = it->second->state;
      for (const std::string& f : it->second->state_flags) sn.slurm_state += "+" + f;
      auto p = published_.find(ni.name);
      sn.gres =
          FormatGresValue(p != published_.end() ? p->second : MigOnly(it->second->gres, gres));
    }
    if (ni.state) {
      for (const NodeGpu& g : ni.state->gpus) sn.gpus.push_back({g.index, g.model, {}});
      for (const NodeInstance& in : ni.state->instances) {
        for (StatusGpu& g : sn.gpus) {
          if (g.index == in.gpu) {
            g.instances.push_back(
                {in.profile, in.start, std::string(HolderKindName(in.holder)), in.owner});
          }
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
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const JobPlan& jp = plan.jobs[i];
    std::vector<std::string> where;
    if (jp.outcome == Outcome::kPlaced) {
      for (const NodePlacement& np : jp.placements) {
        const std::string& node = view->nodes()[np.node].name;
        for (const PlacementRef& p : np.placements) {
          st.rooms.push_back({node, p.gpu, p.profile, p.start, jp.key});
          where.push_back(fmt::format("{} GPU {} {}@{}", node, p.gpu, p.profile, p.start));
        }
      }
    }
    if (i < unroomed.size()) continue;
    const ClassifiedJob& cj = cls.waiting[i - unroomed.size()];
    StatusWaiting w;
    w.job = cj.slurm->id;
    w.request = request_text(cj.request);
    if (jp.outcome == Outcome::kPlaced) {
      w.reason = fmt::format("room on {}: Slurm may start it", fmt::join(where, ", "));
    } else if (jp.outcome == Outcome::kNever) {
      w.reason = "held: can never run: " + jp.reason;
    } else {
      w.reason = jp.reason;
    }
    st.waiting.push_back(std::move(w));
  }
  for (const auto& [j, message] : cls.invalid) {
    st.waiting.push_back({j->id, "", "held: can never run: " + message});
  }
  for (const auto& [k, since] : lost_since_) {
    if (now_s - since < config_.reclaim_grace_s) continue;
    st.lost.push_back({JobIdOfKey(k.first).value_or(0), k.second, since});
  }
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    st.partition = status_.partition;
    st.policy = status_.policy;
    st.started_s = status_.started_s;
    st.tick_interval_s = status_.tick_interval_s;
    st.last_tick_s = now_s;
    st.last_attempt_s = now_s;
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
  return rep;
}

}  // namespace migsched::slurm
