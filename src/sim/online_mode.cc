#include "sim/online_mode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/numbers.h"
#include "sched/migration_planner.h"
#include "sim/contention.h"
#include "sim/energy.h"
#include "sim/event_queue.h"
#include "sim/knowledge.h"
#include "sim/reconfig_latency.h"
#include "sim/request_shape.h"

namespace migsched {
namespace {

// The scheduler's own notion of "the same request" (core/job.h).
RequestKey KeyOf(const Job& j) { return RequestKeyOf(j); }

class OnlineSimulator {
 public:
  OnlineSimulator(const std::vector<WorkloadJob>& jobs, const SimOptions& options,
                  Scheduler* scheduler, ClusterTracker* tracker, Clock* clock)
      : jobs_(jobs),
        opts_(options),
        cluster_(&scheduler->cluster()),
        sched_(scheduler),
        tracker_(tracker),
        clock_(clock),
        contention_(BandwidthPerGpu(scheduler->cluster()), options.contention),
        reconfig_s_(ReconfigSeconds(options)),
        free_at_(scheduler->cluster().size(), 0.0),
        runs_(jobs.size()),
        models_(scheduler->cluster().models()),
        sopts_(scheduler->options()),
        migrates_(scheduler->options().migration.enabled),
        energy_(scheduler->cluster()) {
    if (options.record_jobs) instance_text_.resize(jobs.size());
    if (options.reconfig_latency != nullptr && !options.reconfig_latency->IsFixedUniform()) {
      latency_.emplace(*options.reconfig_latency, options.reconfig_seed);
    }
  }

  Status Run(SimResult* result);

 private:
  enum class Phase { kPending, kQueued, kPlaced, kRunning, kDone, kRejected };
  struct JobRun {
    Phase phase = Phase::kPending;
    double placed_s = kNaN, start_s = kNaN, end_s = kNaN;
    double remaining = 0;  // work left, seconds at rate 1, as of `last`
    double rate = 1;       // effective: 0 while paused
    double last = 0;
    uint32_t generation = 0;
    const Status* rejection = nullptr;  // into can_run_ (std::map nodes are stable)
    // §6 migration.
    bool paused = false;  // switch-over in progress: no progress
    bool moving = false;  // a move begun and not ended (one in flight per job)
    double pause_end = 0;
    uint32_t move_generation = 0;
    int64_t migrations = 0;        // moves completed
    double ckpt_origin = 0;        // checkpoints at ckpt_origin + k * checkpoint_interval_s
    double remaining_at_ckpt = 0;  // work left at the last checkpoint
    bool timed_out = false;        // ended at its time limit (kDone)
    // When its time limit ends it: the start of its current run plus the limit (after a move, the
    // relaunch on the target, as the daemon and Slurm's requeue count it); infinity without one.
    double limit_at = std::numeric_limits<double>::infinity();
  };

  // The one fixed latency of every create and destroy, seconds (unused when latency_ draws).
  static double ReconfigSeconds(const SimOptions& o) {
    if (o.reconfig_latency != nullptr && o.reconfig_latency->IsFixedUniform()) {
      return o.reconfig_latency->create.fixed_ms / 1000.0;
    }
    return o.reconfig_ms / 1000.0;
  }

  static std::vector<double> BandwidthPerGpu(const Cluster& c) {
    std::vector<double> out;
    for (int g = 0; g < c.size(); ++g) out.push_back(c.gpu(g).model().pcie_max_gbps());
    return out;
  }

  const RequestShape& Shape(JobId id) {
    const WorkloadJob& job = jobs_[id];
    auto it = shapes_.find(KeyOf(job));
    if (it == shapes_.end())
      it = shapes_.emplace(KeyOf(job), ShapeOnFirstModel(models_, job)).first;
    return it->second;
  }
  const std::string& ShapeKey(JobId id) { return Shape(id).key; }
  // What a rejected job would have used: its compute slices x true duration, hours.
  double RejectedSliceHours(JobId id) {
    return Shape(id).compute_slices * jobs_[id].duration_s / 3600.0;
  }

  void Arrive(JobId id);
  Status Place(const Decision& d);
  void StartJob(JobId id);
  Status Complete(JobId id);
  Status ReachLimit(JobId id);
  void UpdateRate(JobId id);
  void Advance(JobRun& r);
  void NoteExpectedEnd(JobId id);
  void ApplyRunPlan(const Plan& plan);
  Status BeginMove(const MigrationStart& st);
  void SwitchOver(JobId id);
  // A run of job `id` starts now (its start, or its relaunch after a move): its time limit, if it
  // has one, ends at now + the limit (JobRun::limit_at; an earlier limit event goes stale).
  void StartRunLimit(JobId id) {
    const double limit = jobs_[id].time_limit_s;
    if (limit <= 0) return;
    runs_[id].limit_at = now_ + limit;
    events_.Push(runs_[id].limit_at, EventKind::kTimeLimit, id, 0);
  }
  Status EndMove(JobId id);
  void RejectWaiting(JobId id);
  // The scheduler's instant (Scheduler::RunInstant) with what happened at this event time, then
  // the next idle-expiry timer.
  Status RunInstant();
  class InstantAdapter;
  void AddReconfigOps(const Plan& plan, double* done_at);
  void PushNextTick(bool idle);
  void Sample();
  Status SelfCheck() const;
  std::string QueuedJobsText() const;

  const std::vector<WorkloadJob>& jobs_;
  const SimOptions& opts_;
  // §5 --max-wait rejections share one reason.
  const Status max_wait_reason_ = FailedPreconditionError("waited longer than --max-wait");
  const Cluster* cluster_;
  Scheduler* sched_;
  ClusterTracker* tracker_;
  Clock* clock_;
  ContentionModel contention_;
  const double reconfig_s_;
  // Set when SimOptions::reconfig_latency draws (not one fixed value for both kinds).
  std::optional<ReconfigLatencySampler> latency_;
  EventQueue events_;
  std::vector<double> free_at_;  // per GPU: when its queued MIG operations end
  std::vector<JobRun> runs_;
  std::vector<const GpuModel*> models_;
  const SchedulerOptions& sopts_;
  const bool migrates_;
  bool completed_in_batch_ = false;
  bool tick_in_batch_ = false;
  double last_move_begun_ = -std::numeric_limits<double>::infinity();
  int64_t moves_in_flight_ = 0;  // jobs with `moving` set
  bool timer_in_batch_ = false;
  std::set<double> idle_timers_;  // idle-retention timer times pushed and not yet fired
  std::map<RequestKey, Status> can_run_;
  std::map<RequestKey, RequestShape> shapes_;
  std::vector<JobId> affected_;
  std::vector<std::string> instance_text_;  // per job, when record_jobs

  double now_ = 0;
  size_t next_arrival_ = 0;  // the next job of the workload to arrive
  double last_completion_ = 0;
  int64_t holding_ = 0;   // placed and not completed
  int64_t finished_ = 0;  // completed + rejected
  bool scan_needed_ = false;
  Metrics* metrics_ = nullptr;
  TimeIntegrals integrals_;
  EnergyMeter energy_;  // busy compute slices per model over time (sim/energy.h)
  JobStats stats_;
  int64_t completed_ = 0;  // jobs completed so far (not timed out)
  // The arrival window (first to last arrival), closed after the last arrival's instant: the
  // busy compute-slice-seconds, per-model usage and completed jobs up to then.
  bool window_closed_ = false;
  double window_busy_area_ = 0;
  std::vector<ModelUsage> window_usage_;
  int64_t window_completed_ = 0;
  std::vector<TimelineSample>* timeline_ = nullptr;
  // SimOptions::snapshot_times ascending, the next one to take, and the
  // fragmentation-peak snapshot so far.
  std::vector<double> snapshot_times_;
  size_t next_snapshot_ = 0;
  ClusterSnapshot peak_snapshot_;
  bool has_peak_snapshot_ = false;
};

void OnlineSimulator::Arrive(JobId id) {
  const WorkloadJob& job = jobs_[id];
  auto it = can_run_.find(KeyOf(job));
  if (it == can_run_.end()) {
    it =
        can_run_
            .emplace(KeyOf(job), sched_->CheckCanEverRun(SchedulerVisibleJob(job, opts_.knowledge)))
            .first;
  }
  JobRun& r = runs_[id];
  if (!it->second.ok()) {
    r.phase = Phase::kRejected;
    r.rejection = &it->second;
    stats_.AddRejected(ShapeKey(id), it->second.message(), RejectedSliceHours(id));
    ++finished_;
    return;
  }
  r.phase = Phase::kQueued;
  sched_->Enqueue(id, SchedulerVisibleJob(job, opts_.knowledge));
  tracker_->AddDemand(job, +1);
  scan_needed_ = true;
  if (sopts_.max_wait_s >= 0) events_.Push(now_ + sopts_.max_wait_s, EventKind::kTimer, id, 0);
}

// §5 --max-wait: `id` left the queue without running.
void OnlineSimulator::RejectWaiting(JobId id) {
  JobRun& r = runs_[id];
  r.phase = Phase::kRejected;
  r.rejection = &max_wait_reason_;
  tracker_->AddDemand(jobs_[id], -1);
  stats_.AddRejected(ShapeKey(id), max_wait_reason_.message(), RejectedSliceHours(id));
  ++finished_;
}

// Bookkeeping of a plan the scheduler applied outside a placement (release,
// migration, retention): metrics, tracker, the GPUs' operation queues.
void OnlineSimulator::ApplyRunPlan(const Plan& plan) {
  tracker_->Refresh(plan);
  CountPlan(plan, metrics_);
  double unused = now_;
  AddReconfigOps(plan, &unused);
}

// Queues the plan's creates and destroys on their GPUs' operation queues;
// `done_at` becomes the latest end of those operations (unchanged if none).
// With drawn latencies, every operation gets one draw, in the plan's step order.
void OnlineSimulator::AddReconfigOps(const Plan& plan, double* done_at) {
  // Plans list a GPU's steps together; count per GPU in order of appearance.
  struct GpuOps {
    int gpu;
    int n;
    double drawn_s;  // the sum of the operations' drawn latencies (latency_ only)
  };
  std::vector<GpuOps> ops;
  for (const Step& s : plan.steps) {
    if (s.kind != StepKind::kCreate && s.kind != StepKind::kDestroy) continue;
    auto it = std::find_if(ops.begin(), ops.end(), [&](const GpuOps& o) { return o.gpu == s.gpu; });
    if (it == ops.end()) it = ops.insert(ops.end(), GpuOps{s.gpu, 0, 0.0});
    ++it->n;
    if (latency_) {
      it->drawn_s +=
          s.kind == StepKind::kCreate ? latency_->CreateSeconds() : latency_->DestroySeconds();
    }
  }
  for (const GpuOps& o : ops) {
    // n * reconfig_s_ exactly as with one fixed latency (not a sum of n terms).
    free_at_[o.gpu] = std::max(now_, free_at_[o.gpu]) + (latency_ ? o.drawn_s : o.n * reconfig_s_);
    *done_at = std::max(*done_at, free_at_[o.gpu]);
  }
}

Status OnlineSimulator::Place(const Decision& d) {
  const JobId id = d.job;
  if (id < 0 || id >= static_cast<JobId>(runs_.size()) || runs_[id].phase != Phase::kQueued) {
    return InternalError(fmt::format("the scheduler started job {}, which is not queued", id));
  }
  tracker_->AddDemand(jobs_[id], -1);
  tracker_->Refresh(d.plan);
  CountPlan(d.plan, metrics_);
  JobRun& r = runs_[id];
  r.phase = Phase::kPlaced;
  r.placed_s = now_;
  ++holding_;
  if (opts_.record_jobs) instance_text_[id] = DescribeInstances(*cluster_, d.instances);
  double start = now_;
  AddReconfigOps(d.plan, &start);
  if (start <= now_) {
    StartJob(id);
  } else {
    events_.Push(start, EventKind::kStart, id, r.generation);
  }
  return Status();
}

void OnlineSimulator::StartJob(JobId id) {
  const WorkloadJob& job = jobs_[id];
  JobRun& r = runs_[id];
  r.phase = Phase::kRunning;
  r.start_s = now_;
  r.remaining = job.duration_s;
  r.last = now_;
  r.ckpt_origin = now_;
  r.remaining_at_ckpt = job.duration_s;
  std::vector<int> gpus;
  for (const InstanceRef& in : *sched_->InstancesOf(id)) gpus.push_back(in.gpu);
  affected_.clear();
  contention_.Add(id, job.pcie_gbps, job.alpha, gpus, &affected_);
  r.rate = contention_.Rate(id);
  ++r.generation;
  events_.Push(now_ + r.remaining / r.rate, EventKind::kCompletion, id, r.generation);
  StartRunLimit(id);
  NoteExpectedEnd(id);
  const std::vector<JobId> affected = affected_;
  for (JobId k : affected) {
    if (k != id) UpdateRate(k);
  }
}

// Progress of `r` from r.last to now at its rate; records the work left at
// the last checkpoint boundary crossed (restart jobs, §6).
void OnlineSimulator::Advance(JobRun& r) {
  const double interval = sopts_.migration.checkpoint_interval_s;
  const double boundary = r.ckpt_origin + std::floor((now_ - r.ckpt_origin) / interval) * interval;
  if (boundary > r.last && boundary <= now_) {
    r.remaining_at_ckpt = std::max(0.0, r.remaining - (boundary - r.last) * r.rate);
  }
  r.remaining = std::max(0.0, r.remaining - (now_ - r.last) * r.rate);
  r.last = now_;
}

// What the scheduler is told of a running job's end (SimOptions::knowledge): limits: the start of
// its current run + limit (JobRun::limit_at); known (oracle): the end its remaining work and rate
// give, capped there;
// unknown, or no limit under limits: nothing (the job counts as never ending).
void OnlineSimulator::NoteExpectedEnd(JobId id) {
  const JobRun& r = runs_[id];
  const double limit = jobs_[id].time_limit_s;
  const double limit_end = r.limit_at;  // infinity without a limit
  switch (opts_.knowledge) {
    case Knowledge::kUnknown:
      return;
    case Knowledge::kLimits:
      if (limit > 0) sched_->SetExpectedEnd(id, limit_end);
      return;
    case Knowledge::kKnown: {
      const double rate = r.paused ? contention_.Rate(id) : r.rate;
      sched_->SetExpectedEnd(
          id, std::min(limit_end, (r.paused ? r.pause_end : now_) + r.remaining / rate));
      return;
    }
  }
}

void OnlineSimulator::UpdateRate(JobId id) {
  JobRun& r = runs_[id];
  const double rate = r.paused ? 0.0 : contention_.Rate(id);
  if (rate == r.rate) return;
  Advance(r);
  r.rate = rate;
  ++r.generation;
  if (rate > 0) events_.Push(now_ + r.remaining / rate, EventKind::kCompletion, id, r.generation);
  NoteExpectedEnd(id);
}

Status OnlineSimulator::Complete(JobId id) {
  JobRun& r = runs_[id];
  r.phase = Phase::kDone;
  r.end_s = now_;
  r.remaining = 0;
  if (r.moving) {  // Release abandons the move
    r.moving = false;
    --moves_in_flight_;
  }
  last_completion_ = now_;
  --holding_;
  ++finished_;
  if (r.timed_out) {
    stats_.AddTimedOut(ShapeKey(id));
  } else {
    ++completed_;
    stats_.AddCompleted(ShapeKey(id), jobs_[id].arrival_s, r.start_s, r.end_s,
                        jobs_[id].duration_s);
  }
  affected_.clear();
  contention_.Remove(id, &affected_);
  const std::vector<JobId> affected = affected_;
  for (JobId k : affected) UpdateRate(k);
  ASSIGN_OR_RETURN(Plan plan, sched_->Release(id));
  ApplyRunPlan(plan);
  scan_needed_ = true;
  completed_in_batch_ = true;
  return Status();
}

// A running job reaches its time limit: ended there (outcome timeout) as Slurm does, unless its
// work is done at this very instant (its completion event is due now: it completes).
Status OnlineSimulator::ReachLimit(JobId id) {
  JobRun& r = runs_[id];
  Advance(r);
  if (r.remaining <= 1e-9 * jobs_[id].duration_s) return Status();
  r.timed_out = true;
  ++r.generation;  // its completion event is stale
  return Complete(id);
}

// ---- §6 migration: make-before-break ----

// The target is created (reconfiguration, on the target GPU's operation
// queue); then a checkpoint job's state is copied (fixed_s + memory_gb /
// gbps) while it keeps running, and the switch-over begins; a restart job
// switches over as soon as its target exists.
Status OnlineSimulator::BeginMove(const MigrationStart& st) {
  const JobId id = st.move.job;
  if (id < 0 || id >= static_cast<JobId>(runs_.size()) || runs_[id].phase != Phase::kRunning) {
    return InternalError(
        fmt::format("the scheduler began a move of job {}, which is not running", id));
  }
  if (runs_[id].moving) {
    return InternalError(fmt::format(
        "the scheduler began a second move of job {} while one is in flight (one move in flight "
        "per job)",
        id));
  }
  runs_[id].moving = true;
  ++moves_in_flight_;
  last_move_begun_ = now_;
  tracker_->Refresh(st.plan);
  CountPlan(st.plan, metrics_);
  double ready = now_;
  AddReconfigOps(st.plan, &ready);
  JobRun& r = runs_[st.move.job];
  ++r.move_generation;
  double at = ready;
  if (jobs_[st.move.job].migratable == Migratable::kCheckpoint) {
    const GpuModel& m = cluster_->gpu(st.move.from.gpu).model();
    at += MigrationCopySeconds(static_cast<double>(m.profile(st.move.from.profile).memory_mib),
                               sopts_.migration);
  }
  events_.Push(at, EventKind::kMigrationSwitch, st.move.job, r.move_generation);
  return Status();
}

// Switch-over: the job pauses for switch_s (a restart job also loses the
// work done since its last checkpoint).
void OnlineSimulator::SwitchOver(JobId id) {
  JobRun& r = runs_[id];
  const MigrationMove* mv = sched_->MigrationOf(id);
  Advance(r);
  if (jobs_[id].migratable == Migratable::kRestart) {
    const double lost = std::max(0.0, r.remaining_at_ckpt - r.remaining);
    metrics_->migration_work_lost_s += lost;
    r.remaining = r.remaining_at_ckpt;
  } else {
    const GpuModel& m = cluster_->gpu(mv->from.gpu).model();
    metrics_->migration_bytes_gb +=
        static_cast<double>(m.profile(mv->from.profile).memory_mib) / 1024.0;
  }
  r.paused = true;
  r.pause_end = now_ + sopts_.migration.switch_s;
  r.rate = 0;
  ++r.generation;  // no completion while paused
  NoteExpectedEnd(id);
  events_.Push(r.pause_end, EventKind::kMigrationEnd, id, r.move_generation);
}

Status OnlineSimulator::EndMove(JobId id) {
  JobRun& r = runs_[id];
  const MigrationMove mv = *sched_->MigrationOf(id);
  ASSIGN_OR_RETURN(Plan plan, sched_->FinishMigration(id));
  ApplyRunPlan(plan);
  ++metrics_->migrations;
  ++(mv.inter() ? metrics_->migrations_inter : metrics_->migrations_intra);
  metrics_->migration_pause_s += sopts_.migration.switch_s;
  ++r.migrations;
  r.paused = false;
  r.moving = false;
  --moves_in_flight_;
  r.last = now_;
  if (jobs_[id].migratable == Migratable::kRestart) {
    r.ckpt_origin = now_;
    r.remaining_at_ckpt = r.remaining;
  }
  // The relaunch on the target is a new run: its time limit counts from now, as the daemon's
  // relaunch and Slurm's requeue count it (a move never costs a job its limit; regression:
  // a_moved_job_is_not_ended_by_the_limit_of_its_first_run).
  StartRunLimit(id);
  affected_.clear();
  if (mv.inter()) {
    // The job now shares another GPU's PCIe bandwidth (§8).
    std::vector<JobId> affected;
    contention_.Remove(id, &affected);
    std::vector<int> gpus;
    for (const InstanceRef& in : *sched_->InstancesOf(id)) gpus.push_back(in.gpu);
    contention_.Add(id, jobs_[id].pcie_gbps, jobs_[id].alpha, gpus, &affected);
    affected_ = affected;
  }
  r.rate = contention_.Rate(id);
  ++r.generation;
  events_.Push(now_ + r.remaining / r.rate, EventKind::kCompletion, id, r.generation);
  NoteExpectedEnd(id);
  const std::vector<JobId> affected = affected_;
  for (JobId k : affected) {
    if (k != id) UpdateRate(k);
  }
  scan_needed_ = true;
  return Status();
}

// The simulator's side of an instant: each decision as this simulator carries it out.
class OnlineSimulator::InstantAdapter : public InstantDriver {
 public:
  explicit InstantAdapter(OnlineSimulator* sim) : sim_(sim) {}
  bool MayMove(JobId id) override {
    return sim_->runs_[id].phase == Phase::kRunning && !sim_->runs_[id].paused;
  }
  Status Placed(const Decision& d) override { return sim_->Place(d); }
  Status MovesBegun(const std::vector<MigrationStart>& starts) override {
    for (const MigrationStart& st : starts) RETURN_IF_ERROR(sim_->BeginMove(st));
    moves_ += starts.size();
    return Status();
  }
  void Rejected(JobId id) override { sim_->RejectWaiting(id); }
  Status IdleExpired(const Plan& plan) override {
    if (!plan.steps.empty()) idle_changed_ = true;
    sim_->ApplyRunPlan(plan);
    return Status();
  }
  // Whether the instant changed the cluster by a move or an idle expiry (PushNextTick).
  bool changed() const { return moves_ > 0 || idle_changed_; }

 private:
  OnlineSimulator* sim_;
  size_t moves_ = 0;
  bool idle_changed_ = false;
};

Status OnlineSimulator::RunInstant() {
  InstantEvents ev;
  ev.completed = completed_in_batch_;
  ev.tick = tick_in_batch_;
  ev.timer = timer_in_batch_;
  ev.scan = scan_needed_;
  InstantAdapter adapter(this);
  RETURN_IF_ERROR(sched_->RunInstant(ev, &adapter));
  scan_needed_ = false;
  const std::optional<double> due = sched_->NextIdleExpiry();
  if (due && idle_timers_.insert(*due).second) events_.Push(*due, EventKind::kTimer, kNoJob, 0);
  // A periodic pass that changed nothing (no completion with it, no move, no idle expiry).
  if (tick_in_batch_) PushNextTick(!completed_in_batch_ && !adapter.changed());
  completed_in_batch_ = tick_in_batch_ = timer_in_batch_ = false;
  return Status();
}

// The periodic pass (§6) every defrag_interval_s: the next tick at now + the interval. After an
// idle tick (its pass began no move, nothing changed the cluster after it) when no cool-down is
// running, a pass finds nothing to move until the next event or arrival: the cluster, the
// rights and the reservations it reads change only at events, and the only time it reads, the
// expected end of the blockers it would wait for instead (MigrationPlanner, `now` raising
// end_rest), only makes a move less worth it as time passes. So when that next event is more
// than kIdleTicks intervals away, the ticks in between are skipped: the next tick is the first
// one at or after it. Without this a run stepped through every interval of a huge span (a
// duration of 1e12 s: 3e9 passes); with it the ticks are at most kIdleTicks + 1 per event.
// A tick never stays at its own time (an arrival of 1e308 s plus 300 s is 1e308 s).
void OnlineSimulator::PushNextTick(bool idle) {
  constexpr double kIdleTicks = 64;
  const double interval = sopts_.migration.defrag_interval_s;
  double next = now_ + interval;
  if (idle && now_ >= last_move_begun_ + sopts_.migration.cooldown_s) {
    // The earliest time anything happens (a stale event on top is earlier: safe).
    double until = std::numeric_limits<double>::infinity();
    if (!events_.empty()) until = events_.Top().time_s;
    if (next_arrival_ < jobs_.size()) until = std::min(until, jobs_[next_arrival_].arrival_s);
    if (until == std::numeric_limits<double>::infinity()) return;  // nothing left to move
    const double gap = until - now_;
    if (gap > kIdleTicks * interval) next = now_ + std::ceil(gap / interval) * interval;
  }
  if (!(next > now_)) next = std::nextafter(now_, std::numeric_limits<double>::infinity());
  events_.Push(next, EventKind::kTick, kNoJob, 0);
}

void OnlineSimulator::Sample() {
  const double util = tracker_->utilization();
  const double frag = tracker_->fragmentation_rate();
  const double stranded = tracker_->stranded();
  if (opts_.snapshot_peak_frag && (!has_peak_snapshot_ || frag > peak_snapshot_.frag_rate)) {
    peak_snapshot_ = SnapshotCluster(*cluster_, now_);
    peak_snapshot_.peak_fragmentation = true;
    peak_snapshot_.frag_rate = frag;
    has_peak_snapshot_ = true;
  }
  energy_.Sample(now_, tracker_->busy_compute_slices_by_model());
  integrals_.Sample(
      now_, ClusterSample{static_cast<double>(tracker_->busy_compute_slices()), frag, stranded,
                          static_cast<double>(tracker_->stranded_compute_slices())});
  if (!opts_.record_timeline) return;
  TimelineSample s{now_,    static_cast<int64_t>(sched_->queue_size()), holding_, util, frag,
                   stranded};
  if (!timeline_->empty() && timeline_->back().time_s == now_) {
    timeline_->back() = s;
  } else {
    timeline_->push_back(s);
  }
}

Status OnlineSimulator::SelfCheck() const {
  std::unordered_map<JobId, int> held;
  for (int g = 0; g < cluster_->size(); ++g) {
    const GpuState& gs = cluster_->gpu(g);
    RETURN_IF_ERROR(gs.CheckInvariants());
    if (gs.busy_compute_slices() > gs.model().compute_slices()) {
      return InternalError(fmt::format("GPU {} has {} busy compute slices of {}", g,
                                       gs.busy_compute_slices(), gs.model().compute_slices()));
    }
    for (const Instance& in : gs.instances()) {
      if (!in.busy()) continue;
      ++held[in.job];
      const auto* refs = sched_->InstancesOf(in.job);
      const InstanceRef ref{g, in.profile, in.start};
      const MigrationMove* mv = sched_->MigrationOf(in.job);
      if (mv != nullptr && mv->to == ref) continue;  // the target of a move in flight
      if (refs == nullptr || std::find(refs->begin(), refs->end(), ref) == refs->end()) {
        return InternalError(
            fmt::format("GPU {} instance {}@{} runs job {}, which the scheduler "
                        "does not place there",
                        g, gs.model().profile(in.profile).name, in.start, in.job));
      }
    }
  }
  for (auto& [job, n] : held) {
    if (sched_->MigrationOf(job) != nullptr) --n;  // its move's target is counted too
  }
  if (static_cast<int64_t>(held.size()) != holding_) {
    return InternalError(fmt::format("{} jobs hold instances, {} expected", held.size(), holding_));
  }
  int64_t moving = 0;
  for (const auto& [job, n] : held) {
    const Phase p = runs_[job].phase;
    if (p != Phase::kPlaced && p != Phase::kRunning) {
      return InternalError(fmt::format("job {} holds instances but is not placed", job));
    }
    if (n != jobs_[job].count) {
      return InternalError(
          fmt::format("job {} holds {} instances, asked for {}", job, n, jobs_[job].count));
    }
    // No instance held twice: the scheduler's list of the job's instances names `count`
    // distinct instances, each busy with this job (the loop above checked the converse).
    const std::vector<InstanceRef>* refs = sched_->InstancesOf(job);
    if (refs == nullptr || static_cast<int>(refs->size()) != jobs_[job].count) {
      return InternalError(fmt::format("the scheduler lists {} instances of job {}, asked for {}",
                                       refs == nullptr ? 0 : refs->size(), job, jobs_[job].count));
    }
    // `id`, not the structured binding itself: clang before 16 cannot capture one (the fuzz build).
    auto busy_with_job = [&, id = job](const InstanceRef& ref) {
      for (const Instance& in : cluster_->gpu(ref.gpu).instances()) {
        if (in.profile == ref.profile && in.start == ref.start)
          return in.runs_job() && in.job == id;
      }
      return false;
    };
    for (size_t i = 0; i < refs->size(); ++i) {
      const InstanceRef& ref = (*refs)[i];
      if (ref.gpu < 0 || ref.gpu >= cluster_->size() || !busy_with_job(ref)) {
        return InternalError(
            fmt::format("the scheduler places job {} on GPU {} {}@{}, which is not busy with it",
                        job, ref.gpu, ref.profile, ref.start));
      }
      if (std::find(refs->begin(), refs->begin() + static_cast<std::ptrdiff_t>(i), ref) !=
          refs->begin() + static_cast<std::ptrdiff_t>(i)) {
        return InternalError(fmt::format("job {} holds GPU {} instance {}@{} twice", job, ref.gpu,
                                         cluster_->gpu(ref.gpu).model().profile(ref.profile).name,
                                         ref.start));
      }
    }
    // One move in flight per job: the scheduler's move is the one the simulator began, from one
    // of the job's instances to another instance busy with it.
    const MigrationMove* mv = sched_->MigrationOf(job);
    if ((mv != nullptr) != runs_[job].moving) {
      return InternalError(fmt::format(
          "job {}: the scheduler {} a move in flight, the simulator {}", job,
          mv != nullptr ? "has" : "has no", runs_[job].moving ? "began one" : "began none"));
    }
    if (mv != nullptr) {
      ++moving;
      if (std::find(refs->begin(), refs->end(), mv->from) == refs->end() ||
          std::find(refs->begin(), refs->end(), mv->to) != refs->end() || !busy_with_job(mv->to)) {
        return InternalError(fmt::format(
            "job {}'s move from GPU {} to GPU {} is not from one of its instances to a target "
            "held for it",
            job, mv->from.gpu, mv->to.gpu));
      }
    }
  }
  if (moving != moves_in_flight_) {
    return InternalError(fmt::format("{} jobs hold a move in flight, {} moves begun and not ended",
                                     moving, moves_in_flight_));
  }
  return tracker_->CrossCheck();
}

std::string OnlineSimulator::QueuedJobsText() const {
  std::string out;
  const std::vector<JobId> q = sched_->QueuedJobs();
  for (size_t i = 0; i < q.size() && i < 10; ++i) {
    out += fmt::format("{}job {} ('{}', {})", i ? ", " : "", q[i], jobs_[q[i]].name,
                       jobs_[q[i]].RequestString());
  }
  if (q.size() > 10) out += fmt::format(" and {} more", q.size() - 10);
  return out;
}

Status OnlineSimulator::Run(SimResult* result) {
  metrics_ = &result->metrics;
  timeline_ = &result->timeline;
  snapshot_times_ = opts_.snapshot_times;
  std::sort(snapshot_times_.begin(), snapshot_times_.end());
  const size_t n = jobs_.size();
  int64_t batches = 0;
  int64_t last_progress_ns = clock_->NowNanos();
  auto report = [&] {
    if (opts_.progress) opts_.progress(SimProgress{finished_, static_cast<int64_t>(n), now_});
  };
  // Only running jobs move (not while created, not during a switch-over),
  // also inside a queue scan (§13 evacuation).
  sched_->SetMoveFilter(
      [this](JobId id) { return runs_[id].phase == Phase::kRunning && !runs_[id].paused; });
  if (migrates_ && sopts_.migration.defrag_interval_s > 0) {
    events_.Push(jobs_.front().arrival_s + sopts_.migration.defrag_interval_s, EventKind::kTick,
                 kNoJob, 0);
  }
  // An event that no longer means anything: a completion made stale by a rate
  // change, a move made stale by the job's end, a --max-wait timer of a job
  // that left the queue, a tick when nothing runs and nothing will arrive.
  auto stale = [&](const Event& e) {
    switch (e.kind) {
      case EventKind::kCompletion:
        return e.generation != runs_[e.job].generation;
      case EventKind::kMigrationSwitch:
      case EventKind::kMigrationEnd:
        return runs_[e.job].phase != Phase::kRunning ||
               e.generation != runs_[e.job].move_generation ||
               sched_->MigrationOf(e.job) == nullptr;
      case EventKind::kTimer:
        return e.job != kNoJob && runs_[e.job].phase != Phase::kQueued;
      case EventKind::kTimeLimit:  // or the limit of a run before a move
        return runs_[e.job].phase != Phase::kRunning || e.time_s < runs_[e.job].limit_at;
      case EventKind::kTick:
        return holding_ == 0 && next_arrival_ >= n;
      case EventKind::kStart:
        return false;
    }
    return false;
  };
  int64_t steps = 0;  // event times handled
  // The last event time at which a job arrived, started, ended or reached its limit, and its time
  // (SimOptions::stall_event_times).
  int64_t last_job_step = 0;
  double last_job_t = 0;
  while (true) {
    while (!events_.empty() && stale(events_.Top())) events_.Pop();
    const bool has_event = !events_.empty();
    const bool has_arrival = next_arrival_ < n;
    if (!has_event && !has_arrival) break;
    double t = has_event ? events_.Top().time_s : jobs_[next_arrival_].arrival_s;
    if (has_arrival) t = std::min(t, jobs_[next_arrival_].arrival_s);
    // Snapshots of instants before t: the state since the previous event time.
    while (next_snapshot_ < snapshot_times_.size() && snapshot_times_[next_snapshot_] < t) {
      result->snapshots.push_back(SnapshotCluster(*cluster_, snapshot_times_[next_snapshot_++]));
    }
    now_ = t;
    sched_->SetNow(t);
    // One step: the events at t, the arrivals, the scan. An error names the step and the time
    // (an internal error is a bug: the simulator fails loudly with where it happened).
    bool job_event = false;
    auto step = [&]() -> Status {
      while (!events_.empty() && events_.Top().time_s == t) {
        const Event e = events_.Top();
        events_.Pop();
        if (stale(e)) continue;
        job_event = job_event || e.kind == EventKind::kStart || e.kind == EventKind::kCompletion ||
                    e.kind == EventKind::kTimeLimit;
        switch (e.kind) {
          case EventKind::kStart:
            StartJob(e.job);
            break;
          case EventKind::kCompletion:
            RETURN_IF_ERROR(Complete(e.job));
            break;
          case EventKind::kMigrationSwitch:
            SwitchOver(e.job);
            break;
          case EventKind::kMigrationEnd:
            RETURN_IF_ERROR(EndMove(e.job));
            break;
          case EventKind::kTick:
            tick_in_batch_ = true;  // the next tick is pushed after the pass (PushNextTick)
            break;
          case EventKind::kTimer:
            timer_in_batch_ = true;
            if (e.job == kNoJob) idle_timers_.erase(t);
            break;
          case EventKind::kTimeLimit:
            RETURN_IF_ERROR(ReachLimit(e.job));
            break;
        }
      }
      while (next_arrival_ < n && jobs_[next_arrival_].arrival_s == t) {
        Arrive(static_cast<JobId>(next_arrival_++));
        job_event = true;
      }
      RETURN_IF_ERROR(RunInstant());
      return Status();
    };
    ++steps;
    if (Status st = step(); !st.ok()) {
      return st.WithPrefix(fmt::format("step {} (t={} s)", steps, t));
    }
    if (job_event) {
      last_job_step = steps;
      last_job_t = t;
    } else if (opts_.stall_event_times > 0 && steps - last_job_step >= opts_.stall_event_times) {
      return InternalError(fmt::format(
          "no job arrived, started, ended or reached its time limit in {} event times (t={} s "
          "to {} s), with {} job(s) queued and {} move(s) in flight: a livelock (a bug): {}",
          steps - last_job_step, last_job_t, t, sched_->queue_size(), moves_in_flight_,
          QueuedJobsText()));
    }
    Sample();
    if (!window_closed_ && next_arrival_ >= n) {
      // Every interval up to now (the last arrival's instant) is closed by Sample.
      window_closed_ = true;
      window_busy_area_ = integrals_.busy_area();
      window_usage_ = energy_.usage();
      window_completed_ = completed_;
    }
    if (opts_.self_check) {
      Status st = SelfCheck();
      if (!st.ok()) return st.WithPrefix(fmt::format("self-check at t={} s", now_));
    }
    if (opts_.progress && ++batches % 1024 == 0) {
      const int64_t ns = clock_->NowNanos();
      if (ns - last_progress_ns >= static_cast<int64_t>(opts_.progress_interval_s * 1e9)) {
        last_progress_ns = ns;
        report();
      }
    }
  }
  result->event_times = steps;
  while (next_snapshot_ < snapshot_times_.size()) {
    result->snapshots.push_back(SnapshotCluster(*cluster_, snapshot_times_[next_snapshot_++]));
  }
  if (has_peak_snapshot_) result->snapshots.push_back(std::move(peak_snapshot_));
  if (sched_->queue_size() > 0) {
    return InternalError(fmt::format(
        "simulation ended with {} job(s) still queued and nothing left to happen (a bug): {}",
        sched_->queue_size(), QueuedJobsText()));
  }
  report();

  Metrics& m = *metrics_;
  stats_.Fill(&m);  // after the run: m.migrations is final
  m.jobs_total = static_cast<int64_t>(n);
  const double first_arrival = jobs_.front().arrival_s;
  // Over every job that ran to its end, a time limit's included (regression:
  // all_jobs_timed_out_gave_a_makespan_of_zero: utilisation and energy were then 0 as well).
  m.makespan_s = m.jobs_completed + m.jobs_timeout > 0 ? last_completion_ - first_arrival : 0;
  integrals_.Finish(last_completion_);
  if (m.makespan_s > 0) {
    m.utilization = integrals_.busy_area() / (tracker_->total_compute_slices() * m.makespan_s);
    m.frag_mean = integrals_.frag_area() / m.makespan_s;
    m.stranded_share_mean = integrals_.stranded_area() / m.makespan_s;
    m.stranded_capacity_mean =
        integrals_.stranded_slices_area() / (tracker_->total_compute_slices() * m.makespan_s);
    m.jobs_per_day = m.jobs_completed / (m.makespan_s / 86400.0);
  }
  m.frag_peak = integrals_.frag_peak();
  m.reconfigurations_saved_by_retention = 2 * sched_->kept_instance_reuses();
  m.idle_expirations = sched_->idle_expirations();
  if (const JointPlacer::Stats* js = sched_->joint_stats()) m.joint_starts = js->placed;
  m.evacuations = sched_->evacuations_begun();
  m.limit_power = sched_->LimitPower();
  energy_.Finish(last_completion_);
  const EnergyEstimate energy = energy_.Estimate(m.makespan_s, m.jobs_completed);
  m.energy_kwh = energy.energy_kwh;
  m.jobs_per_kwh = energy.jobs_per_kwh;
  // The arrival window: what the cluster did while jobs arrived (long jobs that outlast it set
  // the makespan and dilute the figures over it).
  m.arrival_window_s = jobs_.back().arrival_s - first_arrival;
  if (m.arrival_window_s > 0) {
    m.utilization_arrival_window =
        window_busy_area_ / (tracker_->total_compute_slices() * m.arrival_window_s);
    m.jobs_per_day_arrival_window = window_completed_ / (m.arrival_window_s / 86400.0);
    m.energy_kwh_arrival_window =
        EstimateEnergy(window_usage_, m.arrival_window_s, window_completed_).energy_kwh;
  }

  if (opts_.record_jobs) {
    result->jobs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const JobRun& r = runs_[i];
      const WorkloadJob& job = jobs_[i];
      JobRecord rec;
      rec.id = static_cast<JobId>(i);
      rec.name = job.name;
      rec.request = job.RequestString();
      rec.arrival_s = job.arrival_s;
      rec.placed_s = r.placed_s;
      rec.start_s = r.start_s;
      rec.end_s = r.end_s;
      rec.wait_s = r.start_s - job.arrival_s;
      rec.jct_s = r.end_s - job.arrival_s;
      rec.outcome = r.phase == Phase::kRejected ? JobOutcome::kRejected
                    : r.timed_out               ? JobOutcome::kTimeout
                                                : JobOutcome::kCompleted;
      if (r.rejection != nullptr) rec.reason = r.rejection->message();
      rec.instances = std::move(instance_text_[i]);
      rec.migrations = r.migrations;
      rec.duration_s = job.duration_s;
      rec.time_limit_s = job.time_limit_s > 0 ? job.time_limit_s : kNaN;
      result->jobs.push_back(std::move(rec));
    }
  }
  return Status();
}

}  // namespace

Status RunOnlineMode(const std::vector<WorkloadJob>& jobs, const SimOptions& options,
                     Scheduler* scheduler, ClusterTracker* tracker, SimResult* result) {
  Clock* clock = options.clock != nullptr ? options.clock : SteadyClock();
  OnlineSimulator sim(jobs, options, scheduler, tracker, clock);
  return sim.Run(result);
}

}  // namespace migsched
