#include "k8s/engine/cluster_engine.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cluster/capacity.h"
#include "cluster/job_placer.h"
#include "core/text.h"
#include "k8s/migration/evictor.h"
#include "sched/explain.h"

namespace migsched::k8s {

ClusterJob ToClusterJob(const PodInfo& pod) {
  ClusterJob job;
  job.key = PodOwnerKey(pod.uid);
  job.num_nodes = 1;
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const auto& c : pod.containers) {
    for (const auto& r : c.requests) {
      if (counts.emplace(r.profile, 0).second) order.push_back(r.profile);
      counts[r.profile] += r.count;
    }
  }
  for (const auto& p : order) job.per_node.push_back({p, counts[p]});
  auto is_true = [&](const char* key) {
    auto it = pod.annotations.find(key);
    return it != pod.annotations.end() && it->second == "true";
  };
  job.latency_sensitive = is_true(kLatencySensitiveAnnotation);
  job.migratable = MayMigrate(pod).ok() ? Migratable::kRestart : Migratable::kNone;
  return job;
}

StatusOr<std::unique_ptr<ClusterEngine>> ClusterEngine::Create(NodeDaemons* daemons,
                                                               NodeDirectory* directory,
                                                               const Catalog* catalog,
                                                               EngineOptions options) {
  auto policy = MakePolicy(options.policy, options.scheduler);
  if (!policy.ok()) return policy.status();
  return std::unique_ptr<ClusterEngine>(
      new ClusterEngine(daemons, directory, catalog, std::move(options), std::move(*policy)));
}

ClusterEngine::ClusterEngine(NodeDaemons* daemons, NodeDirectory* directory, const Catalog* catalog,
                             EngineOptions options, std::unique_ptr<PlacementPolicy> policy)
    : daemons_(daemons),
      directory_(directory),
      catalog_(catalog),
      options_(std::move(options)),
      policy_(std::move(policy)) {
  for (int i = 0; i < std::max(1, options_.state_threads); ++i) {
    readers_.emplace_back([this] { ReaderLoop(); });
  }
}

ClusterEngine::~ClusterEngine() {
  {
    std::lock_guard lock(reads_mu_);
    stopping_ = true;
  }
  reads_cv_.notify_all();
  for (std::thread& t : readers_) t.join();  // a read under way ends within the client's timeout
}

void ClusterEngine::ReaderLoop() {
  std::unique_lock lock(reads_mu_);
  for (;;) {
    reads_cv_.wait(lock, [this] { return stopping_ || !read_queue_.empty(); });
    if (stopping_) return;
    const std::string node = std::move(read_queue_.front());
    read_queue_.pop_front();
    lock.unlock();
    auto st = daemons_->State(node);
    lock.lock();
    NodeRead& r = reads_[node];
    r.answered = true;
    r.result_began = r.began;
    if (st.ok()) {
      r.state = std::move(*st);
      r.error.clear();
    } else {
      r.state.reset();
      r.error = st.status().message();
    }
    r.in_flight = false;
    if (r.again) {
      r.again = false;
      r.in_flight = true;
      r.began = std::chrono::steady_clock::now();
      read_queue_.push_back(node);
    }
    reads_cv_.notify_all();
  }
}

void ClusterEngine::RequestRead(const std::string& name,
                                std::chrono::steady_clock::time_point not_before) {
  NodeRead& r = reads_[name];
  if (r.answered && r.result_began >= not_before) return;
  if (r.in_flight) {
    if (r.began < not_before) r.again = true;
    return;
  }
  r.in_flight = true;
  r.began = std::chrono::steady_clock::now();
  read_queue_.push_back(name);
  reads_cv_.notify_all();
}

std::shared_ptr<std::mutex> ClusterEngine::NodeLock(const std::string& node) {
  std::lock_guard lock(mu_);
  auto& m = node_locks_[node];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

bool ClusterEngine::FirstArrival(const std::string& uid) {
  if (!observed_.insert(uid).second) return false;
  observed_order_.push_back(uid);
  constexpr size_t kMaxObserved = 100000;
  if (observed_order_.size() > kMaxObserved) {
    observed_.erase(observed_order_.front());
    observed_order_.pop_front();
  }
  return true;
}

void ClusterEngine::Invalidate() {
  std::lock_guard lock(mu_);
  snapshot_.reset();
}

std::shared_ptr<const ClusterEngine::Snapshot> ClusterEngine::Build(
    const std::set<std::string>& wait_for, std::chrono::steady_clock::time_point fresh_from,
    std::chrono::steady_clock::time_point others_from) {
  using Clock = std::chrono::steady_clock;
  auto s = std::make_shared<Snapshot>();
  s->taken = Clock::now();
  auto nodes = directory_->Nodes();
  if (!nodes.ok()) {
    s->error = nodes.status().message();
  } else {
    s->nodes = *nodes;
  }
  const auto wait = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, options_.node_wait_s)));
  const Clock::time_point deadline = s->taken + wait;
  const auto not_before = [&](const std::string& name) {
    return wait_for.count(name) ? fresh_from : others_from;
  };
  const auto fresh_enough = [&](const std::string& name) {
    const NodeRead& r = reads_[name];
    return r.answered && r.result_began >= not_before(name);
  };
  {
    std::unique_lock lock(reads_mu_);
    // The nodes named are read (renewed when older than asked); a view that names none (NotReady,
    // the reclaim loop) renews every stale node without waiting for any.
    for (const StaticNode& n : s->nodes) {
      if (wait_for.empty() || wait_for.count(n.name)) RequestRead(n.name, not_before(n.name));
    }
    // Only the nodes the call names are waited for, each at most node_wait_s.
    reads_cv_.wait_until(lock, deadline, [&] {
      for (const StaticNode& n : s->nodes) {
        if (wait_for.count(n.name) && !fresh_enough(n.name)) return false;
      }
      return true;
    });
    const Clock::time_point now = Clock::now();
    const double wait_s = std::chrono::duration<double>(wait).count();
    for (const StaticNode& n : s->nodes) {
      const NodeRead& r = reads_[n.name];
      NodeInput in;
      in.name = n.name;
      const bool overdue = r.in_flight && now - r.began > wait;
      if (fresh_enough(n.name) || (!wait_for.count(n.name) && r.answered && !overdue)) {
        // Answered recently enough, or (not named) its last answer.
        in.state = r.state;
        in.error = r.error;
        if (!fresh_enough(n.name)) s->pending.insert(n.name);
      } else if (r.in_flight) {
        s->pending.insert(n.name);
        in.error = fmt::format(
            "its node daemon did not answer within {} s (timed out; refused until it answers){}",
            wait_s, r.error.empty() ? "" : "; its last error: " + r.error);
      } else {
        s->pending.insert(n.name);
        in.error = r.error.empty() ? "its node daemon has not been read yet" : r.error;
      }
      s->inputs.push_back(std::move(in));
    }
    if (nodes.ok()) {  // nodes no longer listed: forgotten once no read of theirs is under way
      std::set<std::string> listed;
      for (const StaticNode& n : s->nodes) listed.insert(n.name);
      for (auto it = reads_.begin(); it != reads_.end();) {
        it = !listed.count(it->first) && !it->second.in_flight ? reads_.erase(it) : std::next(it);
      }
    }
  }
  std::lock_guard lock(mu_);
  s->view = ClusterView::Build(s->inputs, *catalog_, &tables_);
  snapshot_ = s;
  return s;
}

std::shared_ptr<const ClusterEngine::Snapshot> ClusterEngine::View(bool fresh) {
  const auto now = std::chrono::steady_clock::now();
  if (fresh) {
    // Every node read from now on (migration plans on the cluster as it is).
    std::set<std::string> all;
    auto nodes = directory_->Nodes();
    if (nodes.ok()) {
      for (const StaticNode& n : *nodes) all.insert(n.name);
    }
    return Build(all, now, now);
  }
  // Names no node, so waits for no daemon: what each last answered (NotReady, the reclaim loop).
  return ViewFor({});
}

std::chrono::steady_clock::duration ClusterEngine::MaxAge() const {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.refresh_s));
}

std::shared_ptr<const ClusterEngine::Snapshot> ClusterEngine::ViewFor(
    const std::vector<std::string>& nodes) {
  const auto now = std::chrono::steady_clock::now();
  const auto max_age = MaxAge();
  {
    std::lock_guard lock(mu_);
    if (snapshot_ && now - snapshot_->taken < max_age &&
        std::none_of(nodes.begin(), nodes.end(),
                     [&](const std::string& n) { return snapshot_->pending.count(n) > 0; })) {
      return snapshot_;
    }
  }
  return Build(std::set<std::string>(nodes.begin(), nodes.end()), now - max_age, now - max_age);
}

std::shared_ptr<const ClusterEngine::Snapshot> ClusterEngine::WithFreshNode(
    const std::string& node) {
  const auto now = std::chrono::steady_clock::now();
  // The node read from now on; the others as last read (never waited for).
  return Build({node}, now, now - MaxAge());
}

std::string ClusterEngine::NotReady() {
  auto s = View();  // waits for no daemon (regression: one_hung_daemon_slows_every_filter)
  if (!s->error.empty()) return s->error;
  if (s->nodes.empty()) return "no node daemon found";
  for (const auto& n : s->view->nodes()) {
    if (n.usable) return "";
  }
  return "no node daemon answers";
}

// Placements tried one after another on one copy of the view's cluster (a
// filter or prioritize call tries every node): each Try gives the GPUs of the
// nodes it allowed their state back, so that a call costs one copy of the
// cluster, not one per node. Between tries every GPU is marked reserved (no
// placement), and a Try opens only its nodes' GPUs (drained ones stay
// reserved): the JobPlacer then has no other node to rule out, which would
// cost a reservation mark per GPU of the cluster per try.
class ClusterEngine::Trial {
 public:
  // The pods that can never leave their GPU (§4 step 2) are anchored in the view already: their
  // rooms and allocations say so (Reserve below), in the daemons' records.
  Trial(const Snapshot& s, ConfigTableCache* tables, PlacementPolicy* policy,
        const EngineOptions& options, std::atomic<int64_t>* internal_errors)
      : s_(s),
        scratch_(s.view->cluster()),
        placer_(&scratch_, *s.view, tables, policy, options.scheduler),
        internal_errors_(internal_errors) {
    for (int g = 0; g < scratch_.size(); ++g) scratch_.SetReserved(g, true);
    if (options.fault) placer_.SetFaultInjector(options.fault);
  }

  // The internal error of the last Try ("" when none).
  const std::string& error() const { return error_; }

  // `job` placed with only the nodes of `allowed`; nullopt when it does not
  // fit. `delta` (optional) gets the FragCost increase summed over the GPUs of
  // the chosen node.
  std::optional<NodePlacement> Try(const ClusterJob& job, const std::set<int>& allowed,
                                   double* delta) {
    for (int idx : allowed) {
      const ClusterView::Node& n = s_.view->nodes()[idx];
      for (int g = n.first_gpu; g < n.first_gpu + n.num_gpus; ++g) {
        if (!s_.view->drained(g)) scratch_.SetReserved(g, false);
      }
    }
    auto r =
        placer_.Place(job, [&](int node, const std::string&) { return allowed.count(node) > 0; });
    std::optional<NodePlacement> out;
    error_.clear();
    if (!r.ok()) {
      // A bug in the core: this decision is refused (no node for the pod now), the extender
      // goes on; the pod's next filter tries again.
      error_ = r.status().message();
      ++*internal_errors_;
      std::string state;
      for (int idx : allowed) {
        const ClusterView::Node& n = s_.view->nodes()[idx];
        for (int g = n.first_gpu; g < n.first_gpu + n.num_gpus; ++g) {
          state += fmt::format("\n{} GPU {}: {}", n.name, s_.view->NvmlIndexOf(g),
                               s_.view->cluster().gpu(g).DebugString());
        }
      }
      spdlog::error("placing {}: internal error in the scheduler ({}); this decision is refused{}",
                    OneLine(job.key), error_, state);
    } else if (r->has_value() && !(*r)->empty()) {
      out = (**r)[0];
      if (delta != nullptr) {
        const ClusterView::Node& n = s_.view->nodes()[out->node];
        double d = 0;
        for (int g = n.first_gpu; g < n.first_gpu + n.num_gpus; ++g) {
          d += scratch_.gpu(g).fragcost() - s_.view->cluster().gpu(g).fragcost();
        }
        *delta = d;
      }
    }
    for (int idx : allowed) {
      const ClusterView::Node& n = s_.view->nodes()[idx];
      for (int g = n.first_gpu; g < n.first_gpu + n.num_gpus; ++g) {
        scratch_.SetGpu(g, s_.view->cluster().gpu(g));
        scratch_.SetReserved(g, true);
      }
    }
    return out;
  }

 private:
  const Snapshot& s_;
  Cluster scratch_;
  JobPlacer placer_;
  std::atomic<int64_t>* internal_errors_;
  std::string error_;
};

std::optional<NodePlacement> ClusterEngine::Place(const Snapshot& s, const ClusterJob& job,
                                                  const std::set<int>& allowed, double* delta) {
  Trial t(s, &tables_, policy_.get(), options_, &internal_errors_);
  return t.Try(job, allowed, delta);
}

namespace {

std::string ProfilesOf(const std::vector<const GpuModel*>& models) {
  std::vector<std::string> names;
  for (const GpuModel* m : models) {
    for (int p : m->base_profiles()) {
      if (std::find(names.begin(), names.end(), m->profile(p).name) == names.end()) {
        names.push_back(m->profile(p).name);
      }
    }
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string ClusterEngine::NoFitReason(const Snapshot& s, const ClusterJob& job, int node) {
  const ClusterView& v = *s.view;
  const Cluster& c = v.cluster();
  const ClusterView::Node& n = v.nodes()[node];
  std::vector<int> gpus(n.num_gpus);
  for (int k = 0; k < n.num_gpus; ++k) gpus[k] = n.first_gpu + k;
  std::vector<AskedPart> parts;
  for (const ProfileCount& pc : job.per_node) parts.push_back(PartOfProfile(pc.profile, pc.count));
  // Never: what the node's GPUs hold at once, from the catalog (what the device plugin advertises).
  const NeverVerdict never = CanEverHold(c, gpus, parts, [&](int g, int p) {
    const GpuModel& m = c.gpu(g).model();
    return MaxInstancesAtOnce(m, tables_.Get(m), p);
  });
  switch (never.kind) {
    case NeverVerdict::Kind::kCan:
      break;
    case NeverVerdict::Kind::kNotOffered:
      return fmt::format("profile {} is not offered by any GPU of {} (profiles: {})",
                         job.per_node[never.part].profile, n.name, ProfilesOf(v.NodeModels(node)));
    case NeverVerdict::Kind::kTooFew:
      return fmt::format("{} can never hold {} {} at once (at most {})", n.name,
                         job.per_node[never.part].count, job.per_node[never.part].profile,
                         never.most);
    case NeverVerdict::Kind::kTooManySlices:
      return fmt::format(
          "{} can never hold {} at once (they need {} compute slices together; it "
          "has {})",
          n.name, job.Describe(), never.need, never.most);
  }
  // No room now: per GPU, why no placement of each profile is free.
  const std::vector<PartRoom> room = ExplainRoom(
      c, gpus, parts, [&](int g) { return v.drained(g) ? std::string("drained") : std::string(); });
  std::vector<std::string> out;
  for (size_t i = 0; i < room.size(); ++i) {
    if (room[i].free_places > 0) continue;
    std::vector<std::string> per_gpu;
    for (const auto& [g, why] : room[i].blocked) {
      per_gpu.push_back(fmt::format("GPU {}: {}", v.NvmlIndexOf(g), why));
    }
    out.push_back(
        fmt::format("no {} placement free: {}", job.per_node[i].profile, fmt::join(per_gpu, "; ")));
  }
  if (!out.empty()) return fmt::format("{}", fmt::join(out, "; "));
  // Each profile has a free placement somewhere, but not all of them at once.
  return fmt::format("{} do not fit on {} together now", job.Describe(), n.name);
}

bool ClusterEngine::HoldsItsRoom(const Snapshot& s, const ClusterJob& job, int node) {
  const NodeInput& in = s.inputs[node];
  if (!in.state) return false;
  std::map<std::string, int> want;
  for (const ProfileCount& pc : job.per_node) want[pc.profile] += pc.count;
  for (const ReservationView& rv : in.state->reservations) {
    if (rv.record.owner != job.key) continue;
    std::map<std::string, int> have;
    for (const PlacementRef& p : rv.record.placements) ++have[p.profile];
    if (have == want) return true;
  }
  return false;
}

std::vector<PlacementEngine::Verdict> ClusterEngine::Filter(const PodInfo& pod,
                                                            const std::vector<std::string>& nodes) {
  auto s = ViewFor(nodes);
  const ClusterJob job = ToClusterJob(pod);
  std::lock_guard lock(mu_);
  if (!pod.uid.empty() && FirstArrival(pod.uid)) {
    Job j;
    j.name = job.key;
    // The policy learns the demand of arriving pods, as the simulator's policies do.
    for (const ProfileCount& pc : job.per_node) {
      j.profile = pc.profile;
      j.count = pc.count;
      j.latency_sensitive = job.latency_sensitive;
      policy_->ObserveArrival(s->view->cluster(), j);
    }
  }
  // The nodes with a daemon, named in the reason of a node without one: at most five, then a
  // count. kube-scheduler sends every node that passes its own filters (the MIG resources are
  // ignoredByScheduler), so the whole list, per node sent, made answers of megabytes on a large
  // cluster (regression: filter_answer_grows_with_nodes_times_daemons).
  constexpr size_t kKnownNamed = 5;
  std::vector<std::string> known;
  for (const auto& n : s->view->nodes()) {
    if (known.size() < kKnownNamed) known.push_back(n.name);
  }
  if (s->view->nodes().size() > kKnownNamed) {
    known.push_back(fmt::format("and {} more", s->view->nodes().size() - kKnownNamed));
  }
  std::vector<Verdict> out;
  Trial trial(*s, &tables_, policy_.get(), options_, &internal_errors_);
  for (const std::string& name : nodes) {
    const int idx = s->view->FindNode(name);
    if (idx < 0) {
      out.push_back(
          {false, fmt::format("{} has no migsched node daemon (known: {})", name,
                              known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", ")))});
      continue;
    }
    const ClusterView::Node& n = s->view->nodes()[idx];
    if (!n.usable) {
      out.push_back(
          {false, fmt::format("the node daemon of {} cannot be reached: {}", name, n.error)});
      continue;
    }
    // The pod's own room, left by a bind that did not finish (regression:
    // own_reservation_blocked_its_pod: its instances counted as another's, the node was refused,
    // and a running pod was evicted to make room elsewhere).
    if (HoldsItsRoom(*s, job, idx) || trial.Try(job, {idx}, nullptr)) {
      out.push_back({true, ""});
    } else if (!trial.error().empty()) {
      out.push_back({false, fmt::format("migsched hit an internal error placing this pod on {} "
                                        "({}); tried again at its next filter",
                                        name, trial.error())});
    } else {
      out.push_back({false, NoFitReason(*s, job, idx)});
    }
  }
  const bool fits_somewhere =
      std::any_of(out.begin(), out.end(), [](const Verdict& v) { return v.fits; });
  if (!pod.uid.empty()) {
    if (fits_somewhere) {
      waiting_.erase(pod.uid);
    } else if (!waiting_.count(pod.uid)) {
      if (waiting_.size() >= 10000) waiting_.clear();
      waiting_[pod.uid] = {pod, std::chrono::steady_clock::now()};
    }
  }
  return out;
}

std::vector<PodInfo> ClusterEngine::WaitingPods(double min_wait_s) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::chrono::steady_clock::time_point, const PodInfo*>> w;
  for (const auto& [uid, entry] : waiting_) {
    if (now - entry.since >= std::chrono::duration<double>(min_wait_s)) {
      w.push_back({entry.since, &entry.pod});
    }
  }
  std::sort(w.begin(), w.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->uid < b.second->uid;
  });
  std::vector<PodInfo> out;
  for (const auto& [since, pod] : w) out.push_back(*pod);
  return out;
}

void ClusterEngine::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  waiting_.erase(uid);
}

StatusOr<std::vector<RequeueMove>> ClusterEngine::PlanMigration(const PodInfo& waiting,
                                                                const std::vector<PodInfo>& running,
                                                                int max_moved) {
  auto s = View(/*fresh=*/true);
  PlannerInput in;
  in.view = s->view.get();
  in.waiting = {ToClusterJob(waiting)};
  for (const PodInfo& p : running) {
    EngineRunningJob r;
    r.job = ToClusterJob(p);
    r.may_move = r.job.migratable != Migratable::kNone && !r.job.latency_sensitive;
    in.running.push_back(std::move(r));
  }
  PlannerOptions o;
  o.policy = options_.policy;
  o.scheduler = options_.scheduler;
  o.migrate = true;
  o.migrate_after_s = 0;  // the caller chose the pod by its wait (and evacuation-min-wait)
  o.scheduler.evacuation_min_wait_s = 0;
  o.max_moved_jobs = max_moved;
  o.fault = options_.fault;
  ASSIGN_OR_RETURN(ClusterPlan plan, PlanCluster(in, o));
  for (const PlanIncident& inc : plan.incidents) {
    ++internal_errors_;
    spdlog::error("{}: internal error in the scheduler ({}); this decision is refused. GPUs:\n{}",
                  OneLine(inc.job), inc.what, inc.state);
  }
  if (plan.jobs.empty() || plan.jobs[0].outcome != Outcome::kMigrating) {
    return std::vector<RequeueMove>();
  }
  return plan.migrations;
}

std::vector<int64_t> ClusterEngine::Prioritize(const PodInfo& pod,
                                               const std::vector<std::string>& nodes) {
  auto s = ViewFor(nodes);
  const ClusterJob job = ToClusterJob(pod);
  std::lock_guard lock(mu_);
  std::vector<int64_t> scores(nodes.size(), 0);
  std::set<int> candidates;
  for (const auto& name : nodes) {
    const int idx = s->view->FindNode(name);
    if (idx >= 0 && s->view->nodes()[idx].usable) candidates.insert(idx);
  }
  // A node that holds the pod's whole room (an earlier bind's): that one, keeping the room.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int idx = s->view->FindNode(nodes[i]);
    if (candidates.count(idx) && HoldsItsRoom(*s, job, idx)) {
      scores[i] = kMaxExtenderScore;
      return scores;
    }
  }
  Trial trial(*s, &tables_, policy_.get(), options_, &internal_errors_);
  auto pick = trial.Try(job, candidates, nullptr);
  if (!pick) return scores;
  if (choices_.size() > 10000) choices_.clear();
  choices_[pod.uid] = {s->view->nodes()[pick->node].name, s->view->nodes()[pick->node].generation,
                       *pick};
  // The others that fit, by their FragCost increase.
  std::vector<std::pair<double, int>> others;
  for (int idx : candidates) {
    if (idx == pick->node) continue;
    double delta = 0;
    if (trial.Try(job, {idx}, &delta)) others.push_back({delta, idx});
  }
  std::sort(others.begin(), others.end());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int idx = s->view->FindNode(nodes[i]);
    if (idx == pick->node) {
      scores[i] = kMaxExtenderScore;
      continue;
    }
    for (size_t r = 0; r < others.size(); ++r) {
      if (others[r].second == idx) {
        scores[i] = std::max<int64_t>(1, kMaxExtenderScore - 1 - static_cast<int64_t>(r));
      }
    }
  }
  return scores;
}

StatusOr<PodReservation> ClusterEngine::Reserve(const PodInfo& pod, const std::string& node) {
  const ClusterJob job = ToClusterJob(pod);
  const std::string key = job.key;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.bind_wait_s);
  std::set<std::string> profiles;
  for (const auto& pc : job.per_node) profiles.insert(pc.profile);

  std::shared_ptr<const Snapshot> s;
  int idx = -1;
  const NodeInput* input = nullptr;
  // Held from the check below through the daemon's Reserve, so that two binds
  // on the node (kube-scheduler binds concurrently) cannot both see no pending
  // reservation of their profile and both reserve.
  const std::shared_ptr<std::mutex> node_mu = NodeLock(node);
  std::unique_lock node_lock(*node_mu, std::defer_lock);
  for (;;) {
    node_lock.lock();
    s = WithFreshNode(node);
    idx = s->view->FindNode(node);
    if (idx < 0) return NotFoundError(node + " has no migsched node daemon");
    if (!s->view->nodes()[idx].usable) {
      return UnavailableError("the node daemon of " + node +
                              " cannot be reached: " + s->view->nodes()[idx].error);
    }
    input = &s->inputs[idx];
    // Another pod's reservation here, not bound yet, with a profile in common.
    std::string waiting_for;
    for (const ReservationView& rv : input->state->reservations) {
      const ReservationRecord& r = rv.record;
      if (r.owner == key || r.owner.rfind("k8s:", 0) != 0) continue;
      for (const PlacementRef& p : r.placements) {
        if (profiles.count(p.profile)) waiting_for = r.owner;
      }
    }
    if (waiting_for.empty()) break;
    node_lock.unlock();
    if (std::chrono::steady_clock::now() >= deadline) {
      return UnavailableError(fmt::format(
          "the kubelet of {} has not yet started the pod of reservation {} (a profile in common); "
          "retrying",
          node, waiting_for));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_s));
  }

  NodePlacement placement;
  bool have = false;
  // A reservation of this pod there already (a repeated bind): keep it.
  for (const ReservationView& r : input->state->reservations) {
    if (r.record.owner == key) {
      placement.node = idx;
      placement.placements = r.record.placements;
      have = true;
    }
  }
  {
    std::lock_guard lock(mu_);
    auto it = choices_.find(pod.uid);
    if (!have && it != choices_.end() && it->second.node == node &&
        it->second.generation == s->view->nodes()[idx].generation) {
      placement = it->second.placement;
      have = true;
    }
    if (!have) {
      auto p = Place(*s, job, {idx}, nullptr);
      if (!p) return FailedPreconditionError(NoFitReason(*s, job, idx));
      placement = *p;
    }
    choices_.erase(pod.uid);
  }
  // A pod that can never leave its GPU says so in its room, and its allocation (bound from the
  // room) keeps it: every view, this extender's after a restart included, sees the GPU anchored.
  Status st =
      daemons_->Reserve(node, key, placement.placements, options_.reservation_ttl_s, job.anchors());
  WithFreshNode(node);  // the next filter sees the reservation
  if (!st.ok()) return st;
  Forget(pod.uid);
  // What the pod still holds elsewhere (an earlier bind's room) is released once its Binding to
  // this node is stored (ReleaseElsewhere), not here: a late Binding to that node may still land.

  // The instances per container, in the pod's order.
  PodReservation out;
  out.node = node;
  out.key = key;
  std::vector<bool> used(placement.placements.size(), false);
  for (const auto& c : pod.containers) {
    for (const auto& r : c.requests) {
      for (int k = 0; k < r.count; ++k) {
        for (size_t i = 0; i < placement.placements.size(); ++i) {
          const PlacementRef& p = placement.placements[i];
          if (used[i] || p.profile != r.profile) continue;
          used[i] = true;
          ReservedInstance ri{p, c.container, "", 0};
          for (const GpuView& g : input->state->gpus) {
            if (g.index == p.gpu) ri.gpu_uuid = g.uuid;
          }
          if (auto ref = s->view->FromRef(idx, p)) {
            ri.size = s->view->cluster().gpu(ref->first).model().profile(ref->second).size();
          }
          out.instances.push_back(ri);
          break;
        }
      }
    }
  }
  return out;
}

void ClusterEngine::ReleaseElsewhere(const PodInfo& pod, const std::string& node) {
  const std::string key = PodOwnerKey(pod.uid);
  const std::shared_ptr<const Snapshot> s = View();
  for (size_t i = 0; i < s->inputs.size(); ++i) {
    const std::string& other = s->view->nodes()[i].name;
    if (other == node || !s->inputs[i].state) continue;
    for (const ReservationView& rv : s->inputs[i].state->reservations) {
      if (rv.record.owner != key) continue;
      Status un = daemons_->Unreserve(other, key);
      WithFreshNode(other);
      spdlog::info("{}: released its earlier room on {} (bound to {}){}", OneLine(key),
                   OneLine(other), OneLine(node), un.ok() ? "" : ": " + OneLine(un.message()));
      break;
    }
  }
}

Status ClusterEngine::Release(const PodInfo& pod, const std::string& node) {
  Status st = daemons_->Unreserve(node, PodOwnerKey(pod.uid));
  WithFreshNode(node);
  return st;
}

}  // namespace migsched::k8s
