#include "sched/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "sched/candidates.h"
#include "sched/joint_placement.h"
#include "sched/migration_planner.h"

namespace migsched {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

std::string_view MigrationTriggerName(MigrationTrigger t) {
  switch (t) {
    case MigrationTrigger::kCompletion:
      return "completion";
    case MigrationTrigger::kTick:
      return "tick";
    case MigrationTrigger::kFragmented:
      return "fragmented";
  }
  return "?";
}

Scheduler::Scheduler(Cluster* cluster, std::unique_ptr<PlacementPolicy> policy,
                     SchedulerOptions options, Clock* clock)
    : cluster_(cluster),
      policy_(std::move(policy)),
      options_(std::move(options)),
      clock_(clock),
      joint_(options_.joint_placement ? std::make_unique<JointPlacer>(options_) : nullptr),
      planner_(NewDefragPlanner()) {}

StatusOr<Plan> Scheduler::Setup() {
  ASSIGN_OR_RETURN(Plan plan, policy_->SetupPlan(*cluster_));
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  // Setup instances (static layouts) are not retention's to expire.
  setup_layout_ = plan.reconfigurations() > 0;
  return plan;
}

Status Scheduler::CheckCanEverRun(const Job& job) const {
  int capacity = 0;
  bool offered = false;
  std::vector<std::string> models;
  for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
    const GpuModel& m = cluster_->gpu(gpu).model();
    if (std::find(models.begin(), models.end(), m.name()) == models.end())
      models.push_back(m.name());
    const int profile = ResolveProfile(m, job);
    if (profile < 0) continue;
    offered = true;
    capacity += policy_->Capacity(*cluster_, gpu, profile);
  }
  std::string model_list;
  for (const auto& n : models) model_list += (model_list.empty() ? "" : ", ") + n;
  if (!offered) {
    return FailedPreconditionError(
        job.profile.empty()
            ? fmt::format("no GPU in the cluster ({}) has a profile for gpu_fraction {}",
                          model_list, job.gpu_fraction)
            : fmt::format("no GPU in the cluster ({}) offers profile {}", model_list, job.profile));
  }
  if (capacity == 0) {
    return FailedPreconditionError(fmt::format("the {} policy's layout has no {} instance",
                                               policy_->name(), job.RequestString()));
  }
  if (job.count > capacity) {
    return FailedPreconditionError(
        fmt::format("gang of {} instances is larger than the cluster "
                    "(at most {} at once)",
                    job.RequestString(), capacity));
  }
  return Status();
}

StatusOr<std::optional<Decision>> Scheduler::TryPlace(JobId id, const Job& job) {
  ASSIGN_OR_RETURN(std::optional<Decision> d, Decide(id, job, /*round=*/false));
  if (d) Commit(id, job, *d);
  return d;
}

void Scheduler::Commit(JobId id, const Job& job, const Decision& d) {
  running_[id] = d.instances;
  running_jobs_[id] = job;
  TrackIdle(d.plan);
}

StatusOr<std::optional<Decision>> Scheduler::Decide(JobId id, const Job& job, bool round) {
  const int64_t t0 = clock_->NowNanos();
  auto record = [&] { decision_us_.push_back((clock_->NowNanos() - t0) / 1000.0); };
  if (running_.count(id)) return InternalError(fmt::format("job {} is already running", id));
  // The joint placer's round keeps every GPU's state before the scan changed it.
  auto touch = [&](int gpu) {
    if (round) joint_->Touch(*cluster_, gpu);
  };
  const PlacementRequest req = MakeRequest(*cluster_, id, job);
  Decision d;
  d.job = id;
  if (job.count <= 1) {
    // A retry of a request that found nothing: if no GPU changed since has a
    // candidate, the answer is the same (the GPUs that did not change offer
    // none still) and the policy is not asked. Not for the naive reference.
    const bool memo = policy_->FeasibilityIsPerGpu() && cluster_->grouping();
    std::vector<int> shape;
    if (memo) {
      for (const auto& [m, p] : req.profile_by_model) shape.push_back(p);
      if (StillNoRoom(req, shape)) {
        record();
        return std::optional<Decision>();
      }
    }
    std::optional<Candidate> c = policy_->Choose(*cluster_, req);
    // A policy that ignored a reservation (§5) or a drain gets no placement there.
    if (c && !cluster_->accepts_placements(c->gpu)) c.reset();
    if (memo) {
      if (!c && cluster_->num_reserved() == 0) {
        failed_at_[shape] = cluster_->change_cursor();
      } else {
        failed_at_.erase(shape);
      }
    }
    if (!c) {
      record();
      return std::optional<Decision>();
    }
    d.plan = PlacementPlan(*cluster_, c->gpu, c->profile, c->start, id);
    d.instances.push_back({c->gpu, c->profile, c->start});
    record();
    touch(c->gpu);
    RETURN_IF_ERROR(ApplyPlan(d.plan, cluster_));
  } else {
    // Gang: place one instance at a time on the cluster itself, each part
    // applied before the next choice; all or none: if an instance finds no
    // placement, the GPUs touched so far get their saved states back. Cost:
    // O(count × policy decision), no copy of the cluster.
    std::vector<std::pair<int, GpuState>> saved;  // (gpu, state before the gang), first touch
    auto rollback = [&] {
      for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
        cluster_->SetGpu(it->first, std::move(it->second));
      }
    };
    for (int i = 0; i < job.count; ++i) {
      std::optional<Candidate> c = policy_->Choose(*cluster_, req);
      if (c && !cluster_->accepts_placements(c->gpu)) c.reset();
      if (!c) {
        rollback();
        record();
        return std::optional<Decision>();
      }
      Plan part = PlacementPlan(*cluster_, c->gpu, c->profile, c->start, id);
      bool seen = false;
      for (const auto& s : saved) seen = seen || s.first == c->gpu;
      if (!seen) saved.emplace_back(c->gpu, cluster_->gpu(c->gpu));
      touch(c->gpu);
      if (Status st = ApplyPlan(part, cluster_); !st.ok()) {
        rollback();
        return st;
      }
      d.plan.steps.insert(d.plan.steps.end(), part.steps.begin(), part.steps.end());
      d.instances.push_back({c->gpu, c->profile, c->start});
    }
    record();
  }
  return std::optional<Decision>(std::move(d));
}

bool Scheduler::StillNoRoom(const PlacementRequest& req, const std::vector<int>& shape) {
  auto it = failed_at_.find(shape);
  if (it == failed_at_.end()) return false;
  changed_.clear();
  // A journal that has moved on (or many changes: the full choice is cheaper).
  if (!cluster_->ChangedSince(it->second, &changed_) ||
      changed_.size() > static_cast<size_t>(cluster_->num_groups())) {
    failed_at_.erase(it);
    return false;
  }
  std::sort(changed_.begin(), changed_.end());
  changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
  for (int gpu : changed_) {
    const int profile = req.ProfileOn(cluster_->gpu(gpu).model());
    if (profile < 0) continue;
    bool any = false;
    ForEachCandidateOn(*cluster_, gpu, profile, /*allow_create=*/true, /*count_destroys=*/false,
                       [&](const Candidate&) { any = true; });
    if (any) return false;
  }
  it->second = cluster_->change_cursor();  // no GPU has room now
  return true;
}

StatusOr<Plan> Scheduler::Release(JobId id) {
  auto it = running_.find(id);
  if (it == running_.end()) return NotFoundError(fmt::format("job {} is not running", id));
  Plan plan;
  std::vector<InstanceRef> held = it->second;
  auto moving = migrating_.find(id);
  // Mid-copy: the target is released too and the move is abandoned.
  if (moving != migrating_.end()) held.push_back(moving->second.to);
  for (const InstanceRef& in : held) {
    plan.steps.push_back({StepKind::kRelease, in.gpu, in.profile, in.start, id});
    if (!policy_->KeepIdleInstances()) {
      plan.steps.push_back({StepKind::kDestroy, in.gpu, in.profile, in.start, kNoJob});
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  running_.erase(it);
  running_jobs_.erase(id);
  if (moving != migrating_.end()) migrating_.erase(moving);
  expected_end_.erase(id);
  last_move_s_.erase(id);
  TrackIdle(plan);
  return plan;
}

void Scheduler::Enqueue(JobId id, const Job& job) {
  ObserveArrival(job);
  queue_.push_back({id, job, now_s_, false});
}

StatusOr<std::vector<Decision>> Scheduler::ScheduleQueue() {
  std::vector<Decision> out;
  reservations_.clear();
  fragmented_.clear();
  bool head_seen = false;
  // §12: decisions are collected in the joint placer's round and made final
  // (Commit) when the scan ends, so that a later job may re-lay them.
  const bool joint = joint_ != nullptr && !setup_layout_;
  if (joint) joint_->BeginRound();
  // Placing a job only takes capacity away (and a reservation only adds to
  // that), so once a request failed in this scan, an identical later request
  // fails too and is not tried again. (With joint placement too: a job that
  // found no joint placement with the scan's earlier jobs finds none with more
  // of them, up to the search's bounds.)
  std::set<RequestKey> failed;
  // The same for the backfill onto reserved GPUs below (whether a request
  // fits there does not depend on its duration; whether it may try does).
  std::set<RequestKey> failed_backfill;
  Status status;
  // Tries to place the job at `it`: true if it started (then `it` is erased
  // and advanced); false if it does not fit (or on an error, in `status`).
  // `jointly`: if it does not fit on its own, the joint placer may place it
  // with the scan's earlier jobs (not on reserved GPUs, so not for the
  // backfill onto them).
  auto try_start = [&](std::deque<Queued>::iterator& it, bool jointly) {
    if (!joint) {
      StatusOr<std::optional<Decision>> d = TryPlace(it->id, it->job);
      if (!d.ok()) {
        status = d.status();
        return false;
      }
      if (!d->has_value()) return false;
      out.push_back(std::move(**d));
      it = queue_.erase(it);
      return true;
    }
    StatusOr<std::optional<Decision>> d = Decide(it->id, it->job, /*round=*/true);
    if (!d.ok()) {
      status = d.status();
      return false;
    }
    if (d->has_value()) {
      joint_->Add(it->id, it->job, std::move(**d));
      it = queue_.erase(it);
      return true;
    }
    if (!jointly) return false;
    const int64_t t0 = clock_->NowNanos();
    StatusOr<bool> placed = joint_->Place(cluster_, policy_.get(), it->id, it->job);
    decision_us_.back() += (clock_->NowNanos() - t0) / 1000.0;  // part of this decision
    if (!placed.ok()) {
      status = placed.status();
      return false;
    }
    if (!*placed) return false;
    it = queue_.erase(it);
    return true;
  };
  for (auto it = queue_.begin(); it != queue_.end();) {
    const Job& job = it->job;
    const bool first_try = !it->tried;
    it->tried = true;
    const RequestKey key = RequestKeyOf(job);
    if (!failed.count(key)) {
      if (try_start(it, /*jointly=*/true)) continue;
      if (!status.ok()) break;
      failed.insert(key);
      if (!head_seen) {
        // The head: the oldest job still waiting (§5 starvation guard).
        head_seen = true;
        if (options_.max_skip_seconds >= 0 && now_s_ - it->enqueued_s > options_.max_skip_seconds) {
          reservations_ = ReserveFor(*it);
          SetReservedFlags(true);
        }
      }
      if (first_try && policy_->Migrates() && job.count == 1 && FragmentedRoomOnly(job)) {
        fragmented_.push_back(job);
      }
    }
    // §5 "only jobs that do not delay it may start": a job expected to end
    // (now + its duration) before the earliest reserved placement is expected
    // to be free cannot delay the head, so it may also use the reserved GPUs
    // (EASY backfilling). Jobs without a duration (0: unknown, the daemon)
    // never do.
    if (!reservations_.empty() && job.duration_s > 0 && !failed_backfill.count(key) &&
        now_s_ + job.duration_s <= EarliestReservedFree()) {
      SetReservedFlags(false);
      const bool started = try_start(it, /*jointly=*/false);
      SetReservedFlags(true);
      if (started) continue;
      if (!status.ok()) break;
      failed_backfill.insert(key);
    }
    ++it;
  }
  SetReservedFlags(false);
  if (joint) {
    // The round's decisions are final now (in scan order); on an error, the
    // placements applied so far are still committed so that the scheduler's
    // bookkeeping matches the cluster.
    for (JointPlacer::Entry& e : joint_->entries()) {
      Commit(e.id, e.job, e.decision);
      out.push_back(std::move(e.decision));
    }
    joint_->BeginRound();
  }
  if (!status.ok()) return status;
  return out;
}

double Scheduler::EarliestReservedFree() const {
  double t = kInf;
  for (const Reservation& r : reservations_) t = std::min(t, r.free_at_s);
  return t;
}

double Scheduler::ExpectedEnd(JobId id) const {
  auto it = expected_end_.find(id);
  return it == expected_end_.end() ? kInf : it->second;
}

std::vector<Reservation> Scheduler::ReserveFor(const Queued& q) const {
  struct Best {
    double free_at;
    int wait_cs;
    int gpu;
    int profile;
    int start;
  };
  struct Busy {
    double end;
    int slot;
    int cs;
  };
  std::vector<std::pair<const GpuModel*, int>> profile_on;
  for (const GpuModel* m : cluster_->models())
    profile_on.emplace_back(m, ResolveProfile(*m, q.job));
  std::vector<Best> per_gpu;
  std::vector<Busy> busy;
  for (int g = 0; g < cluster_->size(); ++g) {
    const GpuState& gs = cluster_->gpu(g);
    const GpuModel& m = gs.model();
    const ConfigTable& t = gs.table();
    int profile = -1;
    for (const auto& [model, p] : profile_on) profile = model == &m ? p : profile;
    if (profile < 0) continue;
    // The busy instances by expected end; a migration source frees its
    // instance at the switch-over: soon; a hold, never by itself.
    busy.clear();
    for (const Instance& in : gs.instances()) {
      if (!in.busy()) continue;
      busy.push_back({in.migration == MigrationRole::kSource ? now_s_
                      : in.runs_job()                        ? ExpectedEnd(in.job)
                                                             : kInf,
                      in.slot, m.profile(in.profile).compute_slices});
    }
    std::stable_sort(busy.begin(), busy.end(),
                     [](const Busy& a, const Busy& b) { return a.end < b.end; });
    std::optional<Best> best;
    for (int slot : m.SlotsOfProfile(profile)) {
      const uint64_t units = m.slots()[slot].unit_mask;
      ConfigId rest = gs.busy_config();
      double free_at = now_s_;
      int wait_cs = 0;
      auto wait_for = [&](const Busy& b) {
        rest = t.Remove(rest, b.slot);
        free_at = std::max(free_at, b.end);
        wait_cs += b.cs;
      };
      // The instances overlapping the placement, then the soonest-ending
      // others while the compute slices do not suffice.
      for (const Busy& b : busy) {
        if (m.slots()[b.slot].unit_mask & units) wait_for(b);
      }
      for (const Busy& b : busy) {
        if (t.Add(rest, slot) != kInvalidConfig) break;
        if (!(m.slots()[b.slot].unit_mask & units)) wait_for(b);
      }
      if (t.Add(rest, slot) == kInvalidConfig) continue;
      Best b{free_at, wait_cs, g, profile, m.slots()[slot].start};
      if (!best || std::tie(b.free_at, b.wait_cs) < std::tie(best->free_at, best->wait_cs))
        best = b;
    }
    if (best) per_gpu.push_back(*best);
  }
  const size_t n = std::min(per_gpu.size(), static_cast<size_t>(std::max(1, q.job.count)));
  std::partial_sort(
      per_gpu.begin(), per_gpu.begin() + n, per_gpu.end(), [](const Best& a, const Best& b) {
        return std::tie(a.free_at, a.wait_cs, a.gpu) < std::tie(b.free_at, b.wait_cs, b.gpu);
      });
  std::vector<Reservation> out;
  for (size_t i = 0; i < n; ++i) {
    const Best& b = per_gpu[i];
    out.push_back({q.id, b.gpu, b.profile, b.start, b.free_at});
  }
  return out;
}

void Scheduler::SetReservedFlags(bool on) {
  for (const Reservation& r : reservations_) cluster_->SetReserved(r.gpu, on);
}

bool Scheduler::FragmentedRoomOnly(const Job& job) const {
  std::vector<Candidate> cands;
  // A property of the GPU state (reserved GPUs form groups of their own):
  // one GPU per state group, O(distinct states).
  for (int g : cluster_->representatives()) {
    if (!cluster_->accepts_placements(g)) continue;
    const GpuState& gs = cluster_->gpu(g);
    const GpuModel& m = gs.model();
    const int profile = ResolveProfile(m, job);
    if (profile < 0) continue;
    const Profile& p = m.profile(profile);
    const int free_units =
        std::popcount(m.all_units_mask() & ~gs.table().unit_mask(gs.busy_config()));
    if (gs.free_compute_slices() < p.compute_slices || free_units < p.size()) continue;
    cands.clear();
    AppendCandidates(*cluster_, g, profile, /*allow_create=*/true, &cands);
    if (cands.empty()) return true;
  }
  return false;
}

std::vector<JobId> Scheduler::ExpireWaits() {
  std::vector<JobId> out;
  if (options_.max_wait_s < 0) return out;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (now_s_ - it->enqueued_s >= options_.max_wait_s) {
      out.push_back(it->id);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

// ---- Idle-instance retention ----

bool Scheduler::RetentionOn() const {
  return options_.idle_ttl_s >= 0 && policy_->KeepIdleInstances() && !setup_layout_;
}

void Scheduler::EraseIdle(const SlotKey& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return;
  idle_by_time_.erase({it->second.since_s, key.first, key.second});
  idle_.erase(it);
}

void Scheduler::TrackIdle(const Plan& plan) {
  auto set_idle = [&](const SlotKey& key, bool kept) {
    EraseIdle(key);
    idle_[key] = IdleInfo{now_s_, kept};
    idle_by_time_.insert({now_s_, key.first, key.second});
  };
  for (const Step& s : plan.steps) {
    const SlotKey key{s.gpu, s.start};
    switch (s.kind) {
      case StepKind::kCreate:
        set_idle(key, false);
        break;
      case StepKind::kDestroy:
        EraseIdle(key);
        break;
      case StepKind::kStart:
      case StepKind::kMigrateBegin: {
        auto it = idle_.find(key);
        if (it != idle_.end() && it->second.kept) ++kept_reuses_;
        EraseIdle(key);
        break;
      }
      case StepKind::kRelease:
        set_idle(key, true);
        break;
      case StepKind::kMigrateEnd:
        set_idle({s.from_gpu, s.from_start}, false);
        break;
      case StepKind::kMigrateAbort:
        set_idle(key, false);
        break;
    }
  }
}

StatusOr<Plan> Scheduler::ExpireIdleInstances() {
  Plan plan;
  if (!RetentionOn()) return plan;
  for (const auto& [since, gpu, start] : idle_by_time_) {
    if (since + options_.idle_ttl_s > now_s_) break;
    const GpuState& g = cluster_->gpu(gpu);
    const int i = g.IndexAt(start);
    if (i < 0 || g.instances()[i].busy()) {
      return InternalError(
          fmt::format("idle-instance retention: GPU {} @{} is not an idle instance", gpu, start));
    }
    plan.steps.push_back({StepKind::kDestroy, gpu, g.instances()[i].profile, start, kNoJob});
  }
  if (plan.empty()) return plan;
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  TrackIdle(plan);
  idle_expirations_ += static_cast<int64_t>(plan.steps.size());
  return plan;
}

std::optional<double> Scheduler::NextIdleExpiry() const {
  if (!RetentionOn() || idle_by_time_.empty()) return std::nullopt;
  return std::get<0>(*idle_by_time_.begin()) + options_.idle_ttl_s;
}

// ---- Migration (§6) ----

StatusOr<std::vector<MigrationStart>> Scheduler::RunMigrationPass(
    MigrationTrigger trigger, const std::function<bool(JobId)>& can_move) {
  std::vector<MigrationStart> none;
  if (!policy_->Migrates()) return none;
  if (trigger == MigrationTrigger::kFragmented && fragmented_.empty()) return none;
  MigrationContext ctx;
  ctx.trigger = trigger;
  ctx.options = &options_;
  ctx.now_s = now_s_;
  ctx.rights = [&](JobId id) {
    auto it = running_jobs_.find(id);
    if (it == running_jobs_.end() || it->second.migratable == Migratable::kNone)
      return MoveRights::kNone;
    if (migrating_.count(id)) return MoveRights::kNone;
    auto last = last_move_s_.find(id);
    if (last != last_move_s_.end() && now_s_ - last->second < options_.migration.cooldown_s) {
      return MoveRights::kNone;
    }
    if (can_move && !can_move(id)) return MoveRights::kNone;
    return it->second.latency_sensitive ? MoveRights::kIntra : MoveRights::kAny;
  };
  ctx.job = [&](JobId id) -> const Job* {
    auto it = running_jobs_.find(id);
    return it == running_jobs_.end() ? nullptr : &it->second;
  };
  ctx.expected_end_s = [&](JobId id) { return ExpectedEnd(id); };
  ctx.reservations = reservations_;
  if (trigger == MigrationTrigger::kFragmented) {
    for (const Job& j : fragmented_) ctx.fragmented.push_back(&j);
  }
  SetReservedFlags(true);
  StatusOr<std::vector<MigrationStart>> starts = planner_->RunPass(cluster_, ctx);
  SetReservedFlags(false);
  if (trigger == MigrationTrigger::kFragmented) fragmented_.clear();
  if (!starts.ok()) return starts.status();
  for (const MigrationStart& st : *starts) {
    if (!migrating_.emplace(st.move.job, st.move).second) {
      return InternalError(fmt::format(
          "migration planner began a second move of job {} (one move in flight per job)",
          st.move.job));
    }
    last_move_s_[st.move.job] = now_s_;
    TrackIdle(st.plan);
  }
  return starts;
}

StatusOr<Plan> Scheduler::FinishMigration(JobId id) {
  auto it = migrating_.find(id);
  if (it == migrating_.end()) return NotFoundError(fmt::format("job {} has no move in flight", id));
  const MigrationMove mv = it->second;
  Plan plan = MigrationEndPlan(mv);
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  migrating_.erase(it);
  for (InstanceRef& in : running_[id]) {
    if (in == mv.from) in = mv.to;
  }
  TrackIdle(plan);
  return plan;
}

const MigrationMove* Scheduler::MigrationOf(JobId id) const {
  auto it = migrating_.find(id);
  return it == migrating_.end() ? nullptr : &it->second;
}

bool Scheduler::RemoveFromQueue(JobId id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id == id) {
      queue_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<JobId> Scheduler::QueuedJobs() const {
  std::vector<JobId> out;
  for (const Queued& q : queue_) out.push_back(q.id);
  return out;
}

const std::vector<InstanceRef>* Scheduler::InstancesOf(JobId id) const {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

}  // namespace migsched

// ---- Pins, holds and binds ----

namespace migsched {

StatusOr<Plan> Scheduler::PinPlan(Holder holder, JobId id, const std::vector<InstanceRef>& where,
                                  bool existing) {
  std::vector<std::pair<int, GpuState>> saved;  // (gpu, state before), first touch
  auto rollback = [&] {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      cluster_->SetGpu(it->first, std::move(it->second));
    }
  };
  Plan plan;
  for (const InstanceRef& w : where) {
    if (w.gpu < 0 || w.gpu >= cluster_->size()) {
      rollback();
      return InvalidArgumentError(
          fmt::format("GPU {} does not exist (the cluster has {})", w.gpu, cluster_->size()));
    }
    const std::string gpu_name = cluster_->GpuName(w.gpu);
    const GpuState& g = cluster_->gpu(w.gpu);
    const GpuModel& m = g.model();
    if (w.profile < 0 || w.profile >= static_cast<int>(m.profiles().size())) {
      rollback();
      return InvalidArgumentError(
          fmt::format("{}: no profile #{} on {}", gpu_name, w.profile, m.name()));
    }
    const Profile& p = m.profile(w.profile);
    const int slot = m.SlotOf(w.profile, w.start);
    if (slot < 0) {
      std::string starts;
      for (int s : m.SlotsOfProfile(w.profile)) {
        starts += fmt::format("{}{}", starts.empty() ? "" : ", ", m.slots()[s].start);
      }
      rollback();
      return InvalidArgumentError(fmt::format("{}: {} is not a placement of {} on {} (starts: {})",
                                              gpu_name, w.start, p.name, m.name(), starts));
    }
    const std::string what = fmt::format("{}: {}@{}", gpu_name, p.name, w.start);
    const int at = g.IndexAt(w.start);
    Plan part;
    if (existing) {
      if (at < 0 || g.instances()[at].profile != w.profile) {
        rollback();
        return FailedPreconditionError(fmt::format("{} is not an instance there", what));
      }
      if (g.instances()[at].busy()) {
        // Built before the rollback: it replaces the GPU state that `g` refers to.
        Status refused = FailedPreconditionError(
            fmt::format("{} is held by {}", what, g.instances()[at].HolderString()));
        rollback();
        return refused;
      }
      part.steps.push_back({StepKind::kStart, w.gpu, w.profile, w.start, id});
    } else {
      if (cluster_->drained(w.gpu)) {
        rollback();
        return FailedPreconditionError(fmt::format("{} is drained", gpu_name));
      }
      if (cluster_->reserved(w.gpu)) {
        rollback();
        return FailedPreconditionError(
            fmt::format("{} is reserved for the oldest waiting job (§5)", gpu_name));
      }
      for (const Instance& in : g.instances()) {
        if (in.busy() && (m.slots()[in.slot].unit_mask & m.slots()[slot].unit_mask)) {
          // Built before the rollback: it replaces the GPU state that `in` lives in.
          Status refused = FailedPreconditionError(fmt::format("{} overlaps {}@{} ({})", what,
                                                               m.profile(in.profile).name, in.start,
                                                               in.HolderString()));
          rollback();
          return refused;
        }
      }
      if (g.table().Add(g.busy_config(), slot) == kInvalidConfig) {
        rollback();
        return FailedPreconditionError(fmt::format(
            "{} does not fit beside the busy instances (compute slices or the profile's "
            "instance limit)",
            what));
      }
      part = PlacementPlan(*cluster_, w.gpu, w.profile, w.start, id);
    }
    part.steps.back().holder = holder;
    bool touched = false;
    for (const auto& [gpu, state] : saved) touched = touched || gpu == w.gpu;
    if (!touched) saved.emplace_back(w.gpu, cluster_->gpu(w.gpu));
    if (Status st = ApplyPlan(part, cluster_); !st.ok()) {
      rollback();
      return st;
    }
    plan.steps.insert(plan.steps.end(), part.steps.begin(), part.steps.end());
  }
  TrackIdle(plan);
  return plan;
}

StatusOr<Decision> Scheduler::PlaceAt(JobId id, const Job& job,
                                      const std::vector<InstanceRef>& where) {
  if (running_.count(id)) return AlreadyExistsError(fmt::format("job {} is already running", id));
  if (static_cast<int>(where.size()) != std::max(1, job.count)) {
    return InvalidArgumentError(fmt::format("job {} asks for {} instance(s), {} placement(s) given",
                                            id, job.count, where.size()));
  }
  const bool any_profile = job.profile.empty() && job.gpu_fraction == 0;
  for (const InstanceRef& w : where) {
    if (!any_profile && w.gpu >= 0 && w.gpu < cluster_->size() &&
        w.profile != ResolveProfile(cluster_->gpu(w.gpu).model(), job)) {
      return InvalidArgumentError(fmt::format("job {} ({}) cannot run on profile #{} of {}", id,
                                              job.RequestString(), w.profile,
                                              cluster_->GpuName(w.gpu)));
    }
  }
  ASSIGN_OR_RETURN(Plan plan, PinPlan(Holder::kJob, id, where, /*existing=*/false));
  running_[id] = where;
  running_jobs_[id] = job;
  return Decision{id, std::move(plan), where};
}

StatusOr<Decision> Scheduler::Adopt(JobId id, const Job& job,
                                    const std::vector<InstanceRef>& where) {
  if (running_.count(id)) return AlreadyExistsError(fmt::format("job {} is already running", id));
  if (where.empty()) return InvalidArgumentError(fmt::format("job {}: no instance to adopt", id));
  ASSIGN_OR_RETURN(Plan plan, PinPlan(Holder::kJob, id, where, /*existing=*/true));
  running_[id] = where;
  running_jobs_[id] = job;
  return Decision{id, std::move(plan), where};
}

StatusOr<Plan> Scheduler::Hold(Holder holder, JobId id, const std::vector<InstanceRef>& where,
                               bool existing) {
  if (holder == Holder::kJob)
    return InvalidArgumentError("Hold is for reservations and placeholders");
  if (where.empty())
    return InvalidArgumentError(fmt::format("{} {}: nothing to hold", HolderName(holder), id));
  if (holds_.count({holder, id})) {
    return AlreadyExistsError(fmt::format("{} {} already holds instances", HolderName(holder), id));
  }
  ASSIGN_OR_RETURN(Plan plan, PinPlan(holder, id, where, existing));
  holds_[{holder, id}] = where;
  return plan;
}

StatusOr<Plan> Scheduler::ReleaseHold(Holder holder, JobId id, bool destroy) {
  auto it = holds_.find({holder, id});
  if (it == holds_.end()) {
    return NotFoundError(fmt::format("no {} {} holds instances", HolderName(holder), id));
  }
  Plan plan;
  for (const InstanceRef& in : it->second) {
    Step release{StepKind::kRelease, in.gpu, in.profile, in.start, id};
    release.holder = holder;
    plan.steps.push_back(release);
    if (destroy || !policy_->KeepIdleInstances()) {
      plan.steps.push_back({StepKind::kDestroy, in.gpu, in.profile, in.start, kNoJob});
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  holds_.erase(it);
  TrackIdle(plan);
  return plan;
}

StatusOr<Decision> Scheduler::BindHold(Holder holder, JobId hold_id, JobId job_id, const Job& job,
                                       const std::vector<InstanceRef>& which) {
  auto it = holds_.find({holder, hold_id});
  if (it == holds_.end()) {
    return NotFoundError(fmt::format("no {} {} holds instances", HolderName(holder), hold_id));
  }
  if (running_.count(job_id)) {
    return AlreadyExistsError(fmt::format("job {} is already running", job_id));
  }
  std::vector<InstanceRef> take = which.empty() ? it->second : which;
  std::vector<InstanceRef> keep = it->second;
  for (const InstanceRef& w : take) {
    auto k = std::find(keep.begin(), keep.end(), w);
    if (k == keep.end()) {
      return InvalidArgumentError(fmt::format("{} {} does not hold {}@{} on {}", HolderName(holder),
                                              hold_id, w.profile, w.start,
                                              cluster_->GpuName(w.gpu)));
    }
    keep.erase(k);
  }
  if (static_cast<int>(take.size()) != std::max(1, job.count)) {
    return InvalidArgumentError(fmt::format("job {} asks for {} instance(s), {} held given", job_id,
                                            job.count, take.size()));
  }
  Decision d{job_id, {}, take};
  for (const InstanceRef& w : take) {
    Step release{StepKind::kRelease, w.gpu, w.profile, w.start, hold_id};
    release.holder = holder;
    d.plan.steps.push_back(release);
    d.plan.steps.push_back({StepKind::kStart, w.gpu, w.profile, w.start, job_id});
  }
  RETURN_IF_ERROR(ApplyPlan(d.plan, cluster_));
  if (keep.empty()) {
    holds_.erase(it);
  } else {
    it->second = std::move(keep);
  }
  running_[job_id] = take;
  running_jobs_[job_id] = job;
  return d;
}

const std::vector<InstanceRef>* Scheduler::HeldBy(Holder holder, JobId id) const {
  auto it = holds_.find({holder, id});
  return it == holds_.end() ? nullptr : &it->second;
}

StatusOr<Plan> Scheduler::AbandonMigration(JobId id) {
  auto it = migrating_.find(id);
  if (it == migrating_.end()) return NotFoundError(fmt::format("job {} has no move in flight", id));
  const MigrationMove mv = it->second;
  Plan plan{{{StepKind::kMigrateAbort, mv.to.gpu, mv.to.profile, mv.to.start, id, mv.from.gpu,
              mv.from.start}}};
  if (!policy_->KeepIdleInstances()) {
    plan.steps.push_back({StepKind::kDestroy, mv.to.gpu, mv.to.profile, mv.to.start, kNoJob});
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  migrating_.erase(it);
  TrackIdle(plan);
  return plan;
}

void Scheduler::Requeue(JobId id, const Job& job, double enqueued_s) {
  auto at = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Queued& q) { return q.enqueued_s > enqueued_s; });
  queue_.insert(at, Queued{id, job, enqueued_s, false});
}

Status Scheduler::ApplyExternal(const Plan& plan) {
  for (const Step& st : plan.steps) {
    if (st.kind != StepKind::kCreate && st.kind != StepKind::kDestroy) {
      return InvalidArgumentError(fmt::format(
          "ApplyExternal takes creates and destroys only, got {}", DescribeStep(st, *cluster_)));
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  TrackIdle(plan);
  return Status();
}

std::optional<double> Scheduler::EnqueuedAt(JobId id) const {
  for (const Queued& q : queue_) {
    if (q.id == id) return q.enqueued_s;
  }
  return std::nullopt;
}

}  // namespace migsched
