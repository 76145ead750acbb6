#include "sched/scheduler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/numbers.h"
#include "sched/candidates.h"
#include "sched/evacuation.h"
#include "sched/explain.h"
#include "sched/joint_placement.h"
#include "sched/migration_planner.h"
#include "sched/pins.h"

namespace migsched {

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
  std::vector<int> gpus(cluster_->size());
  for (int g = 0; g < cluster_->size(); ++g) gpus[g] = g;
  const AskedPart part{[&job](const GpuModel& m) { return ResolveProfile(m, job); }, job.count};
  const NeverVerdict v = CanEverHold(
      *cluster_, gpus, {part}, [&](int g, int p) { return policy_->Capacity(*cluster_, g, p); });
  switch (v.kind) {
    case NeverVerdict::Kind::kCan:
      return Status();
    case NeverVerdict::Kind::kNotOffered: {
      std::vector<std::string> models;
      for (const GpuModel* m : cluster_->models()) models.push_back(m->name());
      const std::string model_list = fmt::format("{}", fmt::join(models, ", "));
      return FailedPreconditionError(
          job.profile.empty()
              ? fmt::format("no GPU in the cluster ({}) has a profile for gpu_fraction {}",
                            model_list, job.gpu_fraction)
              : fmt::format("no GPU in the cluster ({}) offers profile {}", model_list,
                            job.profile));
    }
    case NeverVerdict::Kind::kTooFew: {
      // A fraction is named by the profiles it resolves to; a policy that never creates
      // instances (`static`) is bounded by its layout, not by what the cluster could hold.
      const NamedRequest r = NameRequest(cluster_->models(), job);
      if (v.most == 0) {
        return FailedPreconditionError(fmt::format("the {} policy's layout has no {} instance{}",
                                                   policy_->name(), r.what, r.fraction));
      }
      const std::string bound = policy_->CreatesInstances()
                                    ? std::string("the cluster")
                                    : fmt::format("the {} policy's layout", policy_->name());
      return FailedPreconditionError(
          fmt::format("gang of {} instances{} is larger than {} (at most {} at once)", r.what,
                      r.fraction, bound, v.most));
    }
    case NeverVerdict::Kind::kTooManySlices:  // one part: its capacity already bounds the slices
      break;
  }
  return FailedPreconditionError(fmt::format("{} needs {} compute slices; the cluster has {}",
                                             job.RequestString(), v.need, v.most));
}

StatusOr<std::optional<Decision>> Scheduler::TryPlace(JobId id, const Job& job) {
  ASSIGN_OR_RETURN(std::optional<Decision> d, Decide(id, job, /*round=*/false));
  if (d) Commit(id, job, *d);
  return d;
}

void Scheduler::Commit(JobId id, const Job& job, const Decision& d) {
  running_[id] = d.instances;
  running_jobs_[id] = job;
  limit_model_.Started(id, now_s_);
  moves_.Started(id, now_s_);
  idle_.Track(d.plan, now_s_);
}

bool Scheduler::MoveBudgetAllows(int64_t moves) const {
  if (options_.max_wait_s < 0) return true;  // nothing is turned away: no budget
  return moves_.BudgetAllows(moves, options_.migration.admission_move_budget);
}

StatusOr<std::optional<Decision>> Scheduler::Decide(JobId id, const Job& job, bool round) {
  const int64_t t0 = clock_->NowNanos();
  auto record = [&] { decision_us_.push_back((clock_->NowNanos() - t0) / 1000.0); };
  if (running_.count(id)) return InternalError(fmt::format("job {} is already running", id));
  if (fault_ && fault_(id, job)) {
    return InternalError(fmt::format("fault injected for job {} (fault drill)", id));
  }
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
    // none still) and the policy is not asked. Not for the naive reference,
    // and not while some GPU is reserved or held (§5, §13): opening one is no
    // change the cluster's journal records, so a failure seen with it closed
    // must not stand for the scan's backfill onto it.
    const bool memo =
        policy_->FeasibilityIsPerGpu() && cluster_->grouping() && cluster_->num_reserved() == 0;
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
      if (!c) {
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
    NoteAnchor(id, job);
    RETURN_IF_ERROR(ApplyPlan(d.plan, cluster_));
  } else {
    // Gang: one instance at a time, where the policy places it (PlaceEach). Registered before its
    // first instance (its later instances see the GPUs it anchors), forgotten again if it finds no
    // room and was not registered before (a queued job stays registered while it waits).
    const bool registered = cluster_->job_anchored(id);
    NoteAnchor(id, job);
    StatusOr<std::optional<Decision>> g = PlaceEach(id, job, round, [&] {
      std::optional<Candidate> c = policy_->Choose(*cluster_, req);
      if (c && !cluster_->accepts_placements(c->gpu)) c.reset();
      return c;
    });
    if (!registered && !(g.ok() && g->has_value())) cluster_->SetJobAnchored(id, false);
    record();
    return g;
  }
  return std::optional<Decision>(std::move(d));
}

StatusOr<std::optional<Decision>> Scheduler::PlaceEach(
    JobId id, const Job& job, bool round, const std::function<std::optional<Candidate>()>& choose) {
  // Each instance on the cluster itself, applied before the next choice; all or none: if an
  // instance finds no placement, the GPUs touched so far get their saved states back. Cost:
  // O(count × choice), no copy of the cluster.
  std::vector<std::pair<int, GpuState>> saved;  // (gpu, state before the job), first touch
  auto rollback = [&] {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      cluster_->SetGpu(it->first, std::move(it->second));
    }
  };
  Decision d;
  d.job = id;
  for (int i = 0; i < job.count; ++i) {
    std::optional<Candidate> c = choose();
    if (!c) {
      rollback();
      return std::optional<Decision>();
    }
    Plan part = PlacementPlan(*cluster_, c->gpu, c->profile, c->start, id);
    bool seen = false;
    for (const auto& s : saved) seen = seen || s.first == c->gpu;
    if (!seen) saved.emplace_back(c->gpu, cluster_->gpu(c->gpu));
    if (round) joint_->Touch(*cluster_, c->gpu);
    if (Status st = ApplyPlan(part, cluster_); !st.ok()) {
      rollback();
      return st;
    }
    d.plan.steps.insert(d.plan.steps.end(), part.steps.begin(), part.steps.end());
    d.instances.push_back({c->gpu, c->profile, c->start});
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
  // Mid-copy: the target is released too and the move is abandoned.
  if (const MigrationMove* moving = moves_.InFlight(id)) held.push_back(moving->to);
  for (const InstanceRef& in : held) {
    plan.steps.push_back({StepKind::kRelease, in.gpu, in.profile, in.start, id});
    if (!policy_->KeepIdleInstances()) {
      plan.steps.push_back({StepKind::kDestroy, in.gpu, in.profile, in.start, kNoJob});
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  running_.erase(it);
  cluster_->SetJobAnchored(id, false);  // it holds nothing now
  if (auto job = running_jobs_.find(id); job != running_jobs_.end()) {
    limit_model_.Ended(id, job->second.time_limit_s, now_s_, RequestKeyOf(job->second));
    running_jobs_.erase(job);
  }
  moves_.Ended(id);
  expected_end_.erase(id);
  idle_.Track(plan, now_s_);
  return plan;
}

void Scheduler::Enqueue(JobId id, const Job& job) { Enqueue(id, job, now_s_); }

void Scheduler::NoteAnchor(JobId id, const Job& job, const std::vector<InstanceRef>& held) {
  if (!options_.anchored_together || !job.anchors()) return;
  std::vector<int> gpus;
  for (const InstanceRef& in : held) gpus.push_back(in.gpu);
  cluster_->SetJobAnchored(id, true, gpus);
}

void Scheduler::Enqueue(JobId id, const Job& job, double enqueued_s) {
  ObserveArrival(job);
  // Placed jointly (§12) the job's plan is applied outside Decide: it is registered while queued.
  NoteAnchor(id, job);
  queue_.push_back({id, job, std::min(enqueued_s, now_s_), false});
}

namespace {
// §5: the limit a waiting job is ordered by (a job without one counts as kUnknownLimitForOrderS).
double LimitForOrder(const Job& job) {
  return job.time_limit_s > 0 ? job.time_limit_s : kUnknownLimitForOrderS;
}

// Sorts (key, index) pairs by key, highest first; equal keys by `before` of their indices.
template <typename Before>
void SortHighestFirst(std::vector<std::pair<double, size_t>>* keys, Before before) {
  std::sort(keys->begin(), keys->end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return before(a.second, b.second);
  });
}
}  // namespace

double Scheduler::ExpectedRunForOrder(const Job& job) const {
  const double limit = LimitForOrder(job);
  // §5 run times learned per request: with the learned power, a limit counts for what the jobs of
  // its request ran for theirs (LimitModel::RequestFactor); a job without a limit has no such
  // share to scale.
  if (options_.limit_power != kLimitPowerLearned || !(job.time_limit_s > 0)) return limit;
  return limit * limit_model_.RequestFactor(RequestKeyOf(job));
}

void Scheduler::OrderQueue() {
  if (options_.queue_order != QueueOrder::kResponseRatio) return;  // FIFO: arrival order
  // §5: (wait + E) / E, highest first, E the expected run time (ExpectedRunForOrder: the limit,
  // scaled by its request's learned factor with the learned power); ties by arrival (enqueued_s,
  // then job id).
  std::vector<std::pair<double, size_t>> keys(queue_.size());  // (ratio, queue_ index)
  for (size_t i = 0; i < queue_.size(); ++i) {
    const Queued& q = queue_[i];
    const double expected = ExpectedRunForOrder(q.job);
    keys[i] = {(now_s_ - q.enqueued_s + expected) / expected, i};
  }
  SortHighestFirst(&keys, [&](size_t a, size_t b) { return ArrivedBefore(queue_[a], queue_[b]); });
  std::deque<Queued> sorted;
  for (const auto& [ratio, i] : keys) sorted.push_back(std::move(queue_[i]));
  queue_ = std::move(sorted);
  if (const double power = LimitPower(); power != 1) WeighLimitsWithinRequests(power);
  if (options_.overtake_guard >= 0) GuardOvertaking();
}

bool Scheduler::ArrivedBefore(const Queued& a, const Queued& b) {
  if (a.enqueued_s != b.enqueued_s) return a.enqueued_s < b.enqueued_s;
  return a.id < b.id;
}

void Scheduler::ReorderWithinRequests(
    const std::function<void(std::vector<size_t>* jobs)>& reorder) {
  std::map<RequestKey, std::vector<size_t>> places;
  for (size_t i = 0; i < queue_.size(); ++i) places[RequestKeyOf(queue_[i].job)].push_back(i);
  std::vector<size_t> from(queue_.size());  // place -> the queue_ index of the job it gets
  for (const auto& [key, at] : places) {
    std::vector<size_t> jobs = at;
    if (jobs.size() > 1) reorder(&jobs);  // one job keeps its place
    for (size_t k = 0; k < at.size(); ++k) from[at[k]] = jobs[k];
  }
  std::deque<Queued> ordered;
  for (size_t place = 0; place < queue_.size(); ++place) {
    ordered.push_back(std::move(queue_[from[place]]));
  }
  queue_ = std::move(ordered);
}

void Scheduler::WeighLimitsWithinRequests(double power) {
  // §5 limits weighed by what they predict: a request's places go to its jobs by
  // wait / limit^power, highest first (ties by arrival).
  ReorderWithinRequests([&](std::vector<size_t>* jobs) {
    std::vector<std::pair<double, size_t>> keys;
    keys.reserve(jobs->size());
    for (size_t i : *jobs) {
      const Queued& q = queue_[i];
      keys.push_back({(now_s_ - q.enqueued_s) / std::pow(LimitForOrder(q.job), power), i});
    }
    SortHighestFirst(&keys,
                     [&](size_t a, size_t b) { return ArrivedBefore(queue_[a], queue_[b]); });
    for (size_t k = 0; k < keys.size(); ++k) (*jobs)[k] = keys[k].second;
  });
}

void Scheduler::GuardOvertaking() {
  // §5 overtaking guard: per request, the places the order gave its jobs (in order) go first to
  // its jobs that have waited more than overtake_guard × their median wait, in arrival order,
  // then to the others in the order they had. Those guarded are the request's oldest jobs.
  ReorderWithinRequests([&](std::vector<size_t>* jobs) {
    std::vector<double> waits;
    waits.reserve(jobs->size());
    for (size_t i : *jobs) waits.push_back(now_s_ - queue_[i].enqueued_s);
    std::nth_element(waits.begin(), waits.begin() + waits.size() / 2, waits.end());
    const double bound = options_.overtake_guard * waits[waits.size() / 2];
    std::vector<size_t> guarded, rest;
    for (size_t i : *jobs) {
      (now_s_ - queue_[i].enqueued_s > bound ? guarded : rest).push_back(i);
    }
    std::sort(guarded.begin(), guarded.end(),
              [&](size_t a, size_t b) { return ArrivedBefore(queue_[a], queue_[b]); });
    guarded.insert(guarded.end(), rest.begin(), rest.end());
    *jobs = std::move(guarded);
  });
}

// The state one queue scan hands from step to step (ScheduleQueue).
struct Scheduler::ScanFrame {
  std::vector<Decision> out;  // the jobs started, in scan order (joint: added at EndScan)
  // §12: decisions are collected in the joint placer's round and made final (Commit) when the
  // scan ends, so that a later job may re-lay them.
  bool joint = false;
  // §5/§13: reservations for a waiting job that does not fit, once overdue, while fewer than
  // `depth` jobs of this scan hold some (easy: 1; conservative: --reservation-depth).
  bool conservative = false;
  int depth = 1;
  int reserved_jobs = 0;
  bool head_seen = false;  // a job has failed its own try (the first one is the head)
  // Placing a job only takes capacity away (and a reservation or hold only adds to that), so
  // once a request failed in this scan, an identical later request fails too and is not tried
  // again, except by the holder of a kept reservation (§13), whose room was closed to it. (With
  // joint placement too: a job that found no joint placement with the scan's earlier jobs finds
  // none with more of them, up to the search's bounds.)
  std::set<RequestKey> failed;
  // The same for the backfill onto reserved GPUs (by the GPUs opened: whether a request fits
  // there does not depend on its duration; which GPUs it may try does), and beside them.
  std::set<std::pair<RequestKey, std::vector<int>>> failed_backfill;
  std::set<RequestKey> failed_beside;
  Status status;  // the first error not contained ends the scan with it
};

// One scan of the queue in its order: each job's turn (its own try, then the §13 backfill onto
// reserved GPUs, then beside the reservations), evacuation after the backfill when so set, and
// the end of the scan (reservations dropped, the joint round committed, holds whose moves are
// over ended).
StatusOr<std::vector<Decision>> Scheduler::ScheduleQueue() {
  ScanFrame f;
  BeginScan(f);
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (auto h = held_back_.find(it->id); h != held_back_.end()) {
      if (now_s_ < h->second) {
        ++it;  // held back after an internal error: not tried (nor reserved for) yet
        continue;
      }
      held_back_.erase(h);
    }
    const TurnEnd end = TakeTurn(f, it);
    if (end == TurnEnd::kStop) break;
    if (end != TurnEnd::kStarted) ++it;
  }
  if (f.status.ok() && options_.evacuation_after_backfill) EvacuateAfterBackfill(f);
  EndScan(f);
  if (!f.status.ok()) return f.status;
  return std::move(f.out);
}

void Scheduler::BeginScan(ScanFrame& f) {
  OrderQueue();
  scan_.Begin();
  fragmented_.clear();
  f.conservative = options_.reservation == ReservationMode::kConservative;
  f.depth = f.conservative ? options_.reservation_depth : 1;
  f.joint = joint_ != nullptr && !setup_layout_;
  if (f.joint) joint_->BeginRound();
  // §13 reservation keeping: the job that holds the easy reservation is given it first.
  const JobId holder = reservation_holder_;
  reservation_holder_ = kNoJob;
  if (options_.reservation_keep && !f.conservative && holder != kNoJob &&
      !held_back_.count(holder) && !evac_holds_.Holds(holder)) {
    for (const Queued& q : queue_) {
      if (q.id != holder) continue;
      ReserveBeforeTurns(f, q);
      break;
    }
  }
  // §13: else the overdue job that has waited longest, when its reservation can be made (if not,
  // the first overdue job that does not fit reserves at its turn).
  if (options_.reservation_oldest && !f.conservative && f.reserved_jobs == 0) {
    const Queued* oldest = nullptr;
    for (const Queued& q : queue_) {
      if (held_back_.count(q.id) || evac_holds_.Holds(q.id) || !Overdue(q)) continue;
      if (oldest == nullptr || q.enqueued_s < oldest->enqueued_s) oldest = &q;
    }
    if (oldest != nullptr) ReserveBeforeTurns(f, *oldest);
  }
}

void Scheduler::ReserveBeforeTurns(ScanFrame& f, const Queued& q) {
  // As at a turn (TakeTurn): the GPUs held for other jobs' evacuations are closed to it, so that
  // its reservation never lands on room another job holds, which that job could then not take
  // (regression: oldest_reserved_on_an_evacuation_hold, a stall found by the stress harness,
  // seed 909903).
  scan_.CloseFor(q.id, evac_holds_);
  ReserveIfOverdue(f, q);
}

bool Scheduler::Overdue(const Queued& q) const {
  return options_.max_skip_seconds >= 0 && now_s_ - q.enqueued_s > options_.max_skip_seconds;
}

void Scheduler::ReserveIfOverdue(ScanFrame& f, const Queued& q) {
  if (f.reserved_jobs >= f.depth || !Overdue(q)) return;
  // §13 reservation ageing: the horizon of a job grows with its wait.
  double horizon_s = options_.reservation_horizon_s;
  if (horizon_s >= 0 && options_.reservation_ageing > 0) {
    horizon_s = std::max(horizon_s, options_.reservation_ageing * (now_s_ - q.enqueued_s));
  }
  const LookAheadRules look_ahead{options_.reservation_needs_ends, options_.reservation_slack,
                                  horizon_s};
  std::vector<Reservation> r = LookAheadReservations(
      *cluster_, q.id, q.job, now_s_, [this](JobId j) { return ExpectedEnd(j); }, look_ahead);
  if (r.empty()) return;
  ++f.reserved_jobs;
  scan_.Add(r);
  if (!f.conservative) reservation_holder_ = q.id;
}

bool Scheduler::TryStart(ScanFrame& f, std::deque<Queued>::iterator& it, bool jointly) {
  const JobId id = it->id;
  if (!f.joint) {
    StatusOr<std::optional<Decision>> d = TryPlace(it->id, it->job);
    if (!d.ok()) {
      f.status = d.status();
      return false;
    }
    if (!d->has_value()) return false;
    f.out.push_back(std::move(**d));
    it = queue_.erase(it);
    evac_holds_.Drop(id);
    return true;
  }
  StatusOr<std::optional<Decision>> d = Decide(it->id, it->job, /*round=*/true);
  if (!d.ok()) {
    f.status = d.status();
    return false;
  }
  if (d->has_value()) {
    joint_->Add(it->id, it->job, std::move(**d));
    it = queue_.erase(it);
    evac_holds_.Drop(id);
    return true;
  }
  if (!jointly) return false;
  const int64_t t0 = clock_->NowNanos();
  StatusOr<bool> placed = joint_->Place(cluster_, policy_.get(), it->id, it->job);
  decision_us_.back() += (clock_->NowNanos() - t0) / 1000.0;  // part of this decision
  if (!placed.ok()) {
    f.status = placed.status();
    return false;
  }
  if (!*placed) return false;
  it = queue_.erase(it);
  evac_holds_.Drop(id);
  return true;
}

Scheduler::TurnEnd Scheduler::OnError(ScanFrame& f, JobId id) {
  return Contain(id, &f.status) ? TurnEnd::kNext : TurnEnd::kStop;
}

Scheduler::TurnEnd Scheduler::TakeTurn(ScanFrame& f, std::deque<Queued>::iterator& it) {
  const bool first_try = !it->tried;
  it->tried = true;
  const RequestKey key = RequestKeyOf(it->job);
  // Closed: what is reserved or held for other jobs; this job's own hold is open to it.
  scan_.CloseFor(it->id, evac_holds_);
  TurnEnd end = OwnTry(f, it, first_try, key);
  if (end == TurnEnd::kNotPlaced) end = BackfillOntoReserved(f, it, key);
  if (end == TurnEnd::kNotPlaced) end = PlaceBeside(f, it, key);
  return end == TurnEnd::kNotPlaced ? TurnEnd::kNext : end;
}

Scheduler::TurnEnd Scheduler::OwnTry(ScanFrame& f, std::deque<Queued>::iterator& it, bool first_try,
                                     const RequestKey& key) {
  const JobId id = it->id;
  // The holder of a kept reservation (made before any turn) has room open to it alone, which was
  // closed to the identical request that failed: it is tried (regression:
  // kept_holder_skipped_by_an_identical_request). So has a job whose evacuation holds room
  // (regression: hold_holder_skipped_by_an_identical_request, a stall found by the stress
  // harness, seed 1288229: its hold then ended with the scan, and nothing else was to happen).
  if (f.failed.count(key) && !scan_.Has(id) && !evac_holds_.Holds(id)) {
    // Not tried (an identical request failed earlier in this scan), so it does not fit either;
    // under conservative backfilling it still gets its own reservations (regression:
    // conservative_reserves_for_every_request).
    if (f.conservative && !evac_holds_.Holds(id)) ReserveIfOverdue(f, *it);
    return TurnEnd::kNotPlaced;
  }
  if (TryStart(f, it, /*jointly=*/true)) return TurnEnd::kStarted;
  if (!f.status.ok()) return OnError(f, id);
  f.failed.insert(key);
  const bool head = !f.head_seen;
  f.head_seen = true;
  const bool held = evac_holds_.Holds(id);
  // §5/§13: the head (or, conservative, each of the first `depth` overdue jobs that do not fit)
  // reserves the placements that free soonest.
  if (!held) ReserveIfOverdue(f, *it);
  // §13: a placement that moves of running jobs would open now (at the job's turn; or after the
  // scan, with the room backfill left).
  if (!held && !options_.evacuation_after_backfill && MayEvacuateFor(*it, head)) {
    StatusOr<bool> evacuated = TryEvacuate(*it, f.joint);
    if (!evacuated.ok()) {
      f.status = evacuated.status();
      return OnError(f, id);
    }
  }
  // Room is made only for a job that can wait for it: not for one whose --max-wait ends now
  // (admission mode: it is turned away at this instant, and the room would serve nobody).
  const bool can_wait = options_.max_wait_s < 0 || WaitDeadline(*it) > now_s_;
  if (first_try && can_wait && options_.migration.enabled && it->job.count == 1 &&
      FragmentedRoomOnly(it->job)) {
    fragmented_.push_back(it->job);
  }
  return TurnEnd::kNotPlaced;
}

// §13 (a): a job expected to end (now + its time limit) no later than a reservation's expected
// start cannot delay that job, so it may also use that reservation's GPU (EASY backfilling),
// when every reservation there allows it. Jobs without a limit (0: run time unknown) never do.
// Holds stay closed.
Scheduler::TurnEnd Scheduler::BackfillOntoReserved(ScanFrame& f, std::deque<Queued>::iterator& it,
                                                   const RequestKey& key) {
  const JobId id = it->id;
  const Job& job = it->job;
  if (scan_.empty() || job.time_limit_s <= 0) return TurnEnd::kNotPlaced;
  const std::vector<int> opened = scan_.BackfillGpus(id, now_s_ + job.time_limit_s, evac_holds_);
  if (opened.empty() || f.failed_backfill.count({key, opened})) return TurnEnd::kNotPlaced;
  for (int g : opened) scan_.Open(g);
  const bool started = TryStart(f, it, /*jointly=*/false);
  for (int g : opened) scan_.Restore(g);
  if (started) return TurnEnd::kStarted;
  if (!f.status.ok()) return OnError(f, id);
  f.failed_backfill.insert({key, opened});
  return TurnEnd::kNotPlaced;
}

// §13 (b): beside a reservation, where it stays valid.
Scheduler::TurnEnd Scheduler::PlaceBeside(ScanFrame& f, std::deque<Queued>::iterator& it,
                                          const RequestKey& key) {
  if (scan_.empty() || f.failed_beside.count(key)) {
    return TurnEnd::kNotPlaced;
  }
  const JobId id = it->id;
  StatusOr<bool> placed = PlaceBesideReservations(it, f.joint, &f.out);
  if (!placed.ok()) {
    f.status = placed.status();
    return OnError(f, id);
  }
  if (*placed) return TurnEnd::kStarted;
  f.failed_beside.insert(key);
  return TurnEnd::kNotPlaced;
}

// §13 after backfill: the waiting jobs in queue order (the first is the head), with what the
// scan left free.
void Scheduler::EvacuateAfterBackfill(ScanFrame& f) {
  std::set<RequestKey> tried;
  bool head = true;
  for (const Queued& q : queue_) {
    const RequestKey key = RequestKeyOf(q.job);
    const bool first = head;
    head = false;
    if (evac_holds_.Holds(q.id) || held_back_.count(q.id) || tried.count(key) ||
        !MayEvacuateFor(q, first)) {
      continue;
    }
    scan_.CloseFor(q.id, evac_holds_);
    StatusOr<bool> evacuated = TryEvacuate(q, f.joint);
    if (!evacuated.ok()) {
      f.status = evacuated.status();
      if (!Contain(q.id, &f.status)) break;
      continue;
    }
    if (!*evacuated) tried.insert(key);
  }
}

void Scheduler::EndScan(ScanFrame& f) {
  scan_.End(evac_holds_);
  if (f.joint) {
    // The round's decisions are final now (in scan order); on an error, the placements applied
    // so far are still committed so that the scheduler's bookkeeping matches the cluster.
    for (JointPlacer::Entry& e : joint_->entries()) {
      Commit(e.id, e.job, e.decision);
      f.out.push_back(std::move(e.decision));
    }
    joint_->BeginRound();
  }
  // Holds whose moves are over end now: the scan just had its chance (the holds made in this
  // scan have their moves in flight).
  for (JobId j : evac_holds_.Over([this](JobId m) { return moves_.Moving(m); })) {
    evac_holds_.Drop(j);
  }
}

bool Scheduler::Contain(JobId id, Status* status) {
  if (!contain_ || status->code() != StatusCode::kInternal) return false;
  InternalIncident inc;
  inc.job = id;
  inc.what = std::string(status->message());
  inc.at_s = now_s_;
  for (int g = 0; g < cluster_->size(); ++g) {
    if (g > 0) inc.state += '\n';
    inc.state += cluster_->gpu(g).DebugString();
  }
  incidents_.push_back(std::move(inc));
  held_back_[id] = now_s_ + retry_after_s_;
  *status = Status();
  return true;
}

void Scheduler::SetContainInternalErrors(bool on, double retry_after_s) {
  contain_ = on;
  retry_after_s_ = std::max(0.0, retry_after_s);
}

std::vector<Scheduler::InternalIncident> Scheduler::TakeIncidents() {
  std::vector<InternalIncident> out;
  out.swap(incidents_);
  return out;
}

std::optional<double> Scheduler::HeldBackUntil(JobId id) const {
  auto h = held_back_.find(id);
  if (h == held_back_.end()) return std::nullopt;
  return h->second;
}

MoveRights Scheduler::RightsOf(JobId id) const {
  auto it = running_jobs_.find(id);
  if (it == running_jobs_.end() || it->second.migratable == Migratable::kNone)
    return MoveRights::kNone;
  if (moves_.Moving(id) || moves_.CoolingDown(id, now_s_, options_.migration.cooldown_s)) {
    return MoveRights::kNone;
  }
  // A `restart` job moves again only once it has checkpointed since its last move restarted it:
  // every move of it then keeps at least one checkpoint interval of progress, so it ends.
  if (it->second.migratable == Migratable::kRestart &&
      moves_.RestartedSinceCheckpoint(id, now_s_, options_.migration.checkpoint_interval_s)) {
    return MoveRights::kNone;
  }
  return it->second.latency_sensitive ? MoveRights::kIntra : MoveRights::kAny;
}

bool Scheduler::MayEvacuateFor(const Queued& q, bool head) const {
  if (options_.evacuation == EvacuationScope::kOff || !options_.migration.enabled) return false;
  if (options_.evacuation == EvacuationScope::kHead && !head) return false;
  if (q.job.count != 1 || now_s_ - q.enqueued_s < options_.evacuation_min_wait_s) return false;
  if (options_.evacuation_min_slices > 0) {
    int cs = 0;
    for (const GpuModel* m : cluster_->models()) {
      const int p = ResolveProfile(*m, q.job);
      if (p >= 0) {
        cs = m->profile(p).compute_slices;
        break;
      }
    }
    if (cs < options_.evacuation_min_slices) return false;
  }
  return true;
}

StatusOr<bool> Scheduler::TryEvacuate(const Queued& waiting, bool joint) {
  const JobId id = waiting.id;
  EvacuationQuery q;
  q.job = &waiting.job;
  q.rights = [this](JobId j) {
    return move_filter_ && !move_filter_(j) ? MoveRights::kNone : RightsOf(j);
  };
  q.job_of = [this](JobId j) -> const Job* {
    auto r = running_jobs_.find(j);
    return r == running_jobs_.end() ? nullptr : &r->second;
  };
  // Open GPUs only: CloseFor(id) closed those of other jobs, a drained GPU offers no placement
  // and is never a move's target (core/cluster.h); a move never goes to this job's own
  // reservations either, and no GPU the scan's joint round may re-lay changes (§12).
  const std::vector<char> own = scan_.OwnGpus(id);
  auto open = [this, joint](int g) {
    return cluster_->accepts_placements(g) && !(joint && joint_->Touched(g));
  };
  q.source_ok = open;
  q.target_ok = [&open, &own](int g) { return open(g) && !own[g]; };
  // Room kept for small jobs (§13): where some GPU has a free placement of the smallest recent
  // size, smaller than this job's, a plan that leaves none is passed over for the next one. Not
  // for the job the starvation guard serves: one past --max-skip-seconds for which a look-ahead
  // reservation can be made (at any distance; under --reservation-unknown-ends skip only with a
  // known start), whose own start then comes first, as its reservation's. An overdue job whose
  // start is unknown under skip gets no reservation and waits like any other, and so does not
  // take the room either (regression: overdue_job_with_unknown_start_took_the_kept_room).
  const int waiting_cs = ComputeSlicesOf(waiting.job);
  const int small = arrival_sizes_.Smallest();
  bool keep_room = options_.evacuation_keeps_room && small > 0 && small < waiting_cs;
  if (keep_room && Overdue(waiting)) {
    const LookAheadRules any_distance{options_.reservation_needs_ends, 0, -1};
    keep_room = LookAheadReservations(
                    *cluster_, id, waiting.job, now_s_, [this](JobId j) { return ExpectedEnd(j); },
                    any_distance)
                    .empty();
  }
  if (keep_room) {
    q.accept = [this, small](const EvacuationPlan& p) { return KeepsRoomFor(*cluster_, p, small); };
  }
  std::optional<EvacuationPlan> plan = PlanEvacuation(*cluster_, q);
  // Where jobs are turned away, a job that would be is admitted by a plan that takes the room
  // (checked below, once its blockers' ends are known).
  bool takes_room = false;
  if (!plan && keep_room && options_.max_wait_s >= 0) {
    q.accept = nullptr;
    plan = PlanEvacuation(*cluster_, q);
    takes_room = plan.has_value();
  }
  if (!plan) return false;
  // Worth it only if the moves free the placement sooner than waiting for the
  // blockers to end: the longest copy plus the switch-over against the latest
  // expected end (unknown ends count as never).
  double moved_by = now_s_, ends_by = now_s_;
  const GpuModel& m = cluster_->gpu(plan->gpu).model();
  for (const MigrationMove& mv : plan->moves) {
    const Job* spec = q.job_of(mv.job);
    const double copy =
        spec != nullptr && spec->migratable == Migratable::kCheckpoint
            ? MigrationCopySeconds(static_cast<double>(m.profile(mv.from.profile).memory_mib),
                                   options_.migration)
            : 0;
    moved_by = std::max(moved_by, now_s_ + copy + options_.migration.switch_s);
    ends_by = std::max(ends_by, ExpectedEnd(mv.job));
  }
  if (!(moved_by < ends_by)) return false;
  // Moves that pay for themselves (§13): the slice-seconds of waiting the moves save the waiting
  // job (it starts at moved_by instead of ends_by) must exceed what they cost the movers (each
  // mover's pause, and a `restart` mover's work since its last checkpoint, times its slices).
  // An unknown end saves an unbounded wait.
  // A job that --max-wait rejects before the blockers end is not saved a wait but admitted
  // instead of turned away (admission mode): worth any cost the rule of step 4 allows.
  const bool rejected_otherwise = options_.max_wait_s >= 0 && WaitDeadline(waiting) < ends_by;
  if (takes_room && !rejected_otherwise) return false;
  if (std::isfinite(ends_by) && !rejected_otherwise) {
    double cost = 0;
    for (const MigrationMove& mv : plan->moves) {
      cost += MoveCostS(mv.job) * m.profile(mv.from.profile).compute_slices;
    }
    if (!((ends_by - moved_by) * waiting_cs > cost)) return false;
  }
  // Where jobs are turned away, moves per admitted job stay within the budget (§13).
  if (!MoveBudgetAllows(static_cast<int64_t>(plan->moves.size()))) return false;
  RETURN_IF_ERROR(BeginEvacuation(id, *plan));
  // The hold supersedes the job's reservations (they wait for ends).
  scan_.DropFor(id);
  return true;
}

double Scheduler::MoveCostS(JobId id) const {
  double cost = options_.migration.switch_s;
  auto j = running_jobs_.find(id);
  const std::optional<double> since = moves_.SinceCheckpointOrigin(id, now_s_);
  if (j != running_jobs_.end() && j->second.migratable == Migratable::kRestart && since &&
      options_.migration.checkpoint_interval_s > 0) {
    cost += std::fmod(std::max(0.0, *since), options_.migration.checkpoint_interval_s);
  }
  return cost;
}

int Scheduler::ComputeSlicesOf(const Job& job) const {
  return InstanceComputeSlicesOf(job) * std::max(1, job.count);
}

int Scheduler::InstanceComputeSlicesOf(const Job& job) const {
  for (const GpuModel* m : cluster_->models()) {
    const int p = ResolveProfile(*m, job);
    if (p >= 0) return m->profile(p).compute_slices;
  }
  return 0;
}

Status Scheduler::BeginEvacuation(JobId id, const EvacuationPlan& plan) {
  // One move in flight per job (§6): checked for the whole plan before any of
  // it is applied, so a bad plan changes nothing.
  std::set<JobId> moving;
  for (const MigrationMove& mv : plan.moves) {
    if (moves_.Moving(mv.job) || !moving.insert(mv.job).second) {
      return InternalError(fmt::format("evacuation began a second move of job {}", mv.job));
    }
  }
  evac_holds_.Hold(Reservation{id, plan.gpu, plan.profile, plan.start, now_s_, now_s_, true});
  for (const MigrationMove& mv : plan.moves) {
    MigrationStart st{mv, MigrationBeginPlan(*cluster_, mv), id};
    RETURN_IF_ERROR(ApplyPlan(st.plan, cluster_).WithPrefix("evacuation"));
    if (!moves_.Begin(mv, now_s_)) {
      return InternalError(fmt::format("evacuation began a second move of job {}", mv.job));
    }
    idle_.Track(st.plan, now_s_);
    evac_holds_.AddMover(id, mv.job);
    evacuation_starts_.push_back(std::move(st));
  }
  ++evacuations_begun_;
  return Status();
}

std::optional<Candidate> Scheduler::BestBeside(JobId id, const Job& job) {
  struct Best {
    Candidate c;
    double score;
  };
  auto key = [](const Best& b) {
    return std::make_tuple(!b.c.reuse, b.c.destroys, b.c.gpu, -b.c.start);
  };
  std::optional<Best> best;
  std::vector<Candidate> cands;
  std::set<int> seen;
  const ExpectedEndFn expected_end = [this](JobId j) { return ExpectedEnd(j); };
  for (const Reservation& r : scan_.all()) {
    if (r.job == id || !seen.insert(r.gpu).second) continue;
    if (evac_holds_.HeldForOther(r.gpu, id)) continue;
    const GpuState& g = cluster_->gpu(r.gpu);
    const int profile = ResolveProfile(g.model(), job);
    if (profile < 0) continue;
    cands.clear();
    scan_.Open(r.gpu);
    AppendCandidates(*cluster_, r.gpu, profile, /*allow_create=*/!setup_layout_, &cands);
    scan_.Restore(r.gpu);
    for (const Candidate& c : cands) {
      // Every reservation on that GPU must stay valid.
      bool keeps = true;
      for (const Reservation& o : scan_.all()) {
        if (o.gpu == r.gpu && o.job != id)
          keeps = keeps && KeepsReservation(g, o, c.slot, expected_end);
      }
      if (!keeps) continue;
      const Best cand{c, g.table().FragCost(c.busy_after) - g.fragcost()};
      if (!best || cand.score < best->score - 1e-9 ||
          (cand.score <= best->score + 1e-9 && key(cand) < key(*best))) {
        best = cand;
      }
    }
  }
  if (!best) return std::nullopt;
  return best->c;
}

StatusOr<bool> Scheduler::PlaceBesideReservations(std::deque<Queued>::iterator& it, bool round,
                                                  std::vector<Decision>* out) {
  const JobId id = it->id;
  const Job& job = it->job;
  const int64_t t0 = clock_->NowNanos();
  auto record = [&] { decision_us_.push_back((clock_->NowNanos() - t0) / 1000.0); };
  const PlacementRequest req = MakeRequest(*cluster_, id, job);
  // Each instance where the policy places it on the GPUs open to the job, else beside a
  // reservation (a single job's own try on the open GPUs has just failed); all or none.
  StatusOr<std::optional<Decision>> placed = PlaceEach(id, job, round, [&] {
    std::optional<Candidate> c;
    if (job.count > 1) {
      c = policy_->Choose(*cluster_, req);
      if (c && !cluster_->accepts_placements(c->gpu)) c.reset();
    }
    return c ? c : BestBeside(id, job);
  });
  record();
  if (!placed.ok()) return placed.status();
  if (!placed->has_value()) return false;
  Decision d = std::move(**placed);
  if (round) {
    joint_->Add(id, job, std::move(d));
  } else {
    Commit(id, job, d);
    out->push_back(std::move(d));
  }
  it = queue_.erase(it);
  evac_holds_.Drop(id);
  return true;
}

double Scheduler::ExpectedEnd(JobId id) const {
  auto it = expected_end_.find(id);
  return it == expected_end_.end() ? kInf : it->second;
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

void Scheduler::HoldWaits(double from_s, double to_s) {
  for (Queued& q : queue_) q.held_s += std::max(0.0, to_s - std::max(q.enqueued_s, from_s));
}

std::vector<JobId> Scheduler::ExpireWaits() {
  std::vector<JobId> out;
  if (options_.max_wait_s < 0) return out;
  for (auto it = queue_.begin(); it != queue_.end();) {
    // A job whose evacuation is under way was admitted with the moves that open its room (in
    // admission mode, --max-wait 0, the moves are how a job is admitted rather than turned away):
    // it waits for them, not for the limit.
    if (now_s_ >= WaitDeadline(*it) && !evac_holds_.Holds(it->id)) {
      out.push_back(it->id);
      evac_holds_.Drop(it->id);
      cluster_->SetJobAnchored(it->id, false);
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

StatusOr<Plan> Scheduler::ExpireIdleInstances() {
  if (!RetentionOn()) return Plan{};
  ASSIGN_OR_RETURN(Plan plan, idle_.Due(*cluster_, now_s_, options_.idle_ttl_s));
  if (plan.empty()) return plan;
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  idle_.Track(plan, now_s_);
  idle_.CountExpired(static_cast<int64_t>(plan.steps.size()));
  return plan;
}

std::optional<double> Scheduler::NextIdleExpiry() const {
  if (!RetentionOn()) return std::nullopt;
  const std::optional<double> oldest = idle_.OldestSince();
  if (!oldest) return std::nullopt;
  return *oldest + options_.idle_ttl_s;
}

// ---- One instant ----

Status Scheduler::RunInstant(const InstantEvents& ev, InstantDriver* driver) {
  auto can_move = [driver](JobId id) { return driver->MayMove(id); };
  auto pass = [&](MigrationTrigger trigger) -> Status {
    StatusOr<std::vector<MigrationStart>> starts = RunMigrationPass(trigger, can_move);
    if (!starts.ok()) return driver->StepFailed("migration pass", starts.status());
    return driver->MovesBegun(*starts);
  };
  const bool migrates = options_.migration.enabled && ev.migrate;
  // 1. At a completion, the pass before the scan when the options ask for it (§13).
  bool completion_done = false;
  if (migrates && ev.completed && options_.migrate_before_scan) {
    RETURN_IF_ERROR(pass(MigrationTrigger::kCompletion));
    completion_done = true;
  }
  // 2. The queue scan.
  if (ev.scan && !queue_.empty()) {
    StatusOr<std::vector<Decision>> decisions = ScheduleQueue();
    if (!decisions.ok()) {
      RETURN_IF_ERROR(driver->StepFailed("queue scan", decisions.status()));
    } else {
      for (const Decision& d : *decisions) RETURN_IF_ERROR(driver->Placed(d));
    }
  }
  driver->Scanned();
  // 3. Waits past --max-wait.
  if (options_.max_wait_s >= 0 && ev.timer) {
    for (JobId id : ExpireWaits()) driver->Rejected(id);
  }
  // 4. The fragmented requests' pass; the completion pass, or else the periodic one.
  if (migrates) {
    if (has_fragmented_requests()) RETURN_IF_ERROR(pass(MigrationTrigger::kFragmented));
    if (ev.completed && !completion_done) {
      RETURN_IF_ERROR(pass(MigrationTrigger::kCompletion));
    } else if (ev.tick && !ev.completed) {
      RETURN_IF_ERROR(pass(MigrationTrigger::kTick));
    }
  }
  // 5. Idle instances past --idle-ttl.
  std::optional<double> due = NextIdleExpiry();
  if (due && *due <= now_s_) {
    StatusOr<Plan> plan = ExpireIdleInstances();
    if (!plan.ok()) return driver->StepFailed("idle expiry", plan.status());
    RETURN_IF_ERROR(driver->IdleExpired(*plan));
  }
  return Status();
}

// ---- Migration (§6) ----

StatusOr<std::vector<MigrationStart>> Scheduler::RunMigrationPass(
    MigrationTrigger trigger, const std::function<bool(JobId)>& can_move) {
  std::vector<MigrationStart> none;
  if (!options_.migration.enabled) return none;
  if (trigger == MigrationTrigger::kFragmented && !has_fragmented_requests()) return none;
  // Moves that pay for themselves (§13): a completion or periodic pass while no job waits gains
  // nothing now and costs every move its pause (and a `restart` job its work since the last
  // checkpoint). Evacuations begun in a scan still come out of the kFragmented pass.
  // With the passes off, every move is asked for by a waiting job: the evacuations and the moves
  // aimed at an arrival's fragmented room, both in the kFragmented pass.
  if (trigger != MigrationTrigger::kFragmented &&
      (options_.migration.passes == DefragPasses::kOff ||
       (options_.migration.passes == DefragPasses::kWhileWaiting && queue_.empty()))) {
    return none;
  }
  // Evacuations begun in the scans since the last kFragmented pass come first.
  std::vector<MigrationStart> begun;
  if (trigger == MigrationTrigger::kFragmented) begun.swap(evacuation_starts_);
  // Only moves still in flight (a job may have ended, or its move switched over, since).
  std::erase_if(begun, [this](const MigrationStart& st) {
    const MigrationMove* m = moves_.InFlight(st.move.job);
    return m == nullptr || !(m->to == st.move.to);
  });
  // Where jobs are turned away, a pass runs only while one more move fits the budget (§13).
  if (!MoveBudgetAllows(1)) {
    if (trigger == MigrationTrigger::kFragmented) fragmented_.clear();
    return begun;
  }
  MigrationContext ctx;
  ctx.trigger = trigger;
  ctx.options = &options_;
  ctx.now_s = now_s_;
  ctx.rights = [&](JobId id) {
    if (can_move && !can_move(id)) return MoveRights::kNone;
    return RightsOf(id);
  };
  ctx.job = [&](JobId id) -> const Job* {
    auto it = running_jobs_.find(id);
    return it == running_jobs_.end() ? nullptr : &it->second;
  };
  ctx.expected_end_s = [&](JobId id) { return ExpectedEnd(id); };
  ctx.reservations = scan_.all();
  ctx.reservations.insert(ctx.reservations.end(), evac_holds_.placements().begin(),
                          evac_holds_.placements().end());
  if (trigger == MigrationTrigger::kFragmented) {
    for (const Job& j : fragmented_) ctx.fragmented.push_back(&j);
  }
  scan_.SetFlags(true, evac_holds_);
  StatusOr<std::vector<MigrationStart>> starts = planner_->RunPass(cluster_, ctx);
  scan_.SetFlags(false, evac_holds_);
  if (trigger == MigrationTrigger::kFragmented) fragmented_.clear();
  if (!starts.ok()) return starts.status();
  for (const MigrationStart& st : *starts) {
    if (!moves_.Begin(st.move, now_s_)) {
      return InternalError(fmt::format(
          "migration planner began a second move of job {} (one move in flight per job)",
          st.move.job));
    }
    idle_.Track(st.plan, now_s_);
  }
  begun.insert(begun.end(), std::make_move_iterator(starts->begin()),
               std::make_move_iterator(starts->end()));
  return begun;
}

StatusOr<Plan> Scheduler::FinishMigration(JobId id) {
  const MigrationMove* in_flight = moves_.InFlight(id);
  if (in_flight == nullptr) {
    return NotFoundError(fmt::format("job {} has no move in flight", id));
  }
  const MigrationMove mv = *in_flight;
  // The source is left idle, as a completed job's instances are (§6), unless
  // its GPU is kept for a waiting job (an evacuation's hold or this scan's
  // reservation): that job's placement will destroy it, and destroying it now
  // keeps the destroy off that job's start.
  const bool reserved = std::any_of(scan_.all().begin(), scan_.all().end(),
                                    [&](const Reservation& r) { return r.gpu == mv.from.gpu; });
  const bool keep_source =
      policy_->KeepIdleInstances() && !reserved && !evac_holds_.HeldForOther(mv.from.gpu, kNoJob);
  Plan plan = MigrationEndPlan(mv, keep_source);
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  auto job = running_jobs_.find(id);
  const bool restarted =
      job != running_jobs_.end() && job->second.migratable == Migratable::kRestart;
  RETURN_IF_ERROR(moves_.Finish(id, now_s_, restarted).status());
  for (InstanceRef& in : running_[id]) {
    if (in == mv.from) in = mv.to;
  }
  idle_.Track(plan, now_s_);
  return plan;
}

const MigrationMove* Scheduler::MigrationOf(JobId id) const { return moves_.InFlight(id); }

bool Scheduler::RemoveFromQueue(JobId id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id == id) {
      queue_.erase(it);
      if (!running_.count(id)) cluster_->SetJobAnchored(id, false);
      held_back_.erase(id);
      evac_holds_.Drop(id);
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
  ASSIGN_OR_RETURN(Plan plan, ApplyPins(cluster_, holder, id, where, existing));
  idle_.Track(plan, now_s_);
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
  NoteAnchor(id, job, where);
  return Decision{id, std::move(plan), where};
}

StatusOr<Decision> Scheduler::Adopt(JobId id, const Job& job,
                                    const std::vector<InstanceRef>& where) {
  if (running_.count(id)) return AlreadyExistsError(fmt::format("job {} is already running", id));
  if (where.empty()) return InvalidArgumentError(fmt::format("job {}: no instance to adopt", id));
  ASSIGN_OR_RETURN(Plan plan, PinPlan(Holder::kJob, id, where, /*existing=*/true));
  running_[id] = where;
  running_jobs_[id] = job;
  NoteAnchor(id, job, where);
  return Decision{id, std::move(plan), where};
}

StatusOr<Plan> Scheduler::Hold(Holder holder, JobId id, const std::vector<InstanceRef>& where,
                               bool existing) {
  if (holder == Holder::kJob)
    return InvalidArgumentError("Hold is for reservations and placeholders");
  if (where.empty())
    return InvalidArgumentError(fmt::format("{} {}: nothing to hold", HolderName(holder), id));
  if (holds_.Find(holder, id) != nullptr) {
    return AlreadyExistsError(fmt::format("{} {} already holds instances", HolderName(holder), id));
  }
  ASSIGN_OR_RETURN(Plan plan, PinPlan(holder, id, where, existing));
  holds_.Add(holder, id, where);
  return plan;
}

StatusOr<Plan> Scheduler::ReleaseHold(Holder holder, JobId id, bool destroy) {
  const std::vector<InstanceRef>* held = holds_.Find(holder, id);
  if (held == nullptr) {
    return NotFoundError(fmt::format("no {} {} holds instances", HolderName(holder), id));
  }
  Plan plan;
  for (const InstanceRef& in : *held) {
    Step release{StepKind::kRelease, in.gpu, in.profile, in.start, id};
    release.holder = holder;
    plan.steps.push_back(release);
    if (destroy || !policy_->KeepIdleInstances()) {
      plan.steps.push_back({StepKind::kDestroy, in.gpu, in.profile, in.start, kNoJob});
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  holds_.End(holder, id);
  idle_.Track(plan, now_s_);
  return plan;
}

StatusOr<Decision> Scheduler::BindHold(Holder holder, JobId hold_id, JobId job_id, const Job& job,
                                       const std::vector<InstanceRef>& which) {
  if (holds_.Find(holder, hold_id) == nullptr) {
    return NotFoundError(fmt::format("no {} {} holds instances", HolderName(holder), hold_id));
  }
  if (running_.count(job_id)) {
    return AlreadyExistsError(fmt::format("job {} is already running", job_id));
  }
  ASSIGN_OR_RETURN(std::vector<InstanceRef> take, holds_.Select(holder, hold_id, which, *cluster_));
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
  holds_.Take(holder, hold_id, take);
  running_[job_id] = take;
  running_jobs_[job_id] = job;
  NoteAnchor(job_id, job, take);
  limit_model_.Started(job_id, now_s_);
  return d;
}

const std::vector<InstanceRef>* Scheduler::HeldBy(Holder holder, JobId id) const {
  return holds_.Find(holder, id);
}

StatusOr<Plan> Scheduler::AbandonMigration(JobId id) {
  const MigrationMove* in_flight = moves_.InFlight(id);
  if (in_flight == nullptr) {
    return NotFoundError(fmt::format("job {} has no move in flight", id));
  }
  const MigrationMove mv = *in_flight;
  Plan plan{{{StepKind::kMigrateAbort, mv.to.gpu, mv.to.profile, mv.to.start, id, mv.from.gpu,
              mv.from.start}}};
  if (!policy_->KeepIdleInstances()) {
    plan.steps.push_back({StepKind::kDestroy, mv.to.gpu, mv.to.profile, mv.to.start, kNoJob});
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  RETURN_IF_ERROR(moves_.Abandon(id).status());
  idle_.Track(plan, now_s_);
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
  idle_.Track(plan, now_s_);
  return Status();
}

std::optional<double> Scheduler::EnqueuedAt(JobId id) const {
  for (const Queued& q : queue_) {
    if (q.id == id) return q.enqueued_s;
  }
  return std::nullopt;
}

}  // namespace migsched
