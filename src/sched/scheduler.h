// Scheduler: the online placement loop shared by the simulator and (later)
// the daemon: admission, FIFO queue with backfill (§5), gang placement, and
// releases. Every change goes through ApplyPlan (core/plan.h); the plans are
// returned so that the driver can time reconfigurations and start jobs.
//
// Decision time: each TryPlace is timed with the given Clock (wall-clock
// nanoseconds, §9 "the scheduler's own decision time").
//
// Migration (§6): with options.migration.enabled (`full`'s default), the
// driver calls RunMigrationPass after completions, on the periodic tick and
// when an arrival found only fragmented room; moves are plans of the same
// kind (kMigrateBegin / kMigrateEnd steps), ended by FinishMigration.
//
// Joint placement (§12, options.joint_placement): a queue scan places a job
// that does not fit on its own together with the jobs the scan placed before
// it (sched/joint_placement.h); the decisions are returned when the scan ends.
//
// Time: the driver tells the scheduler its clock with SetNow (virtual seconds
// in the simulator). The queue options (§5: starvation guard, max wait), the
// cool-down and idle-instance retention read it.
//
// Thread-safety: thread-compatible; one driver thread owns a Scheduler.
#ifndef MIGSCHED_SCHED_SCHEDULER_H_
#define MIGSCHED_SCHED_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"
#include "sched/decision.h"
#include "sched/evacuation.h"
#include "sched/evacuation_holds.h"
#include "sched/idle_retention.h"
#include "sched/joint_placement.h"
#include "sched/limit_model.h"
#include "sched/migration.h"
#include "sched/options.h"
#include "sched/pins.h"
#include "sched/policy.h"
#include "sched/reservation.h"
#include "sched/scan_reservations.h"

namespace migsched {

struct EvacuationPlan;  // sched/evacuation.h

// ---- One scheduling instant -------------------------------------------------

// What a driver saw happen since its last instant (Scheduler::RunInstant).
struct InstantEvents {
  bool completed = false;  // some job ended (its instances were released)
  bool tick = false;       // the periodic migration pass is due (§6 defrag_interval_s)
  bool timer = true;       // a --max-wait limit may have passed (a driver that cannot tell: true)
  bool scan = true;        // scan the queue (false: the driver is paused, or nothing changed)
  bool migrate = true;     // run migration passes (false: the driver is stopping)
};

// The driver's side of an instant: it carries out each decision the instant makes.
class InstantDriver {
 public:
  virtual ~InstantDriver() = default;
  // Whether running job `id` may move now, in the driver's view (RunMigrationPass's can_move).
  virtual bool MayMove(JobId id) = 0;
  virtual Status Placed(const Decision& d) = 0;                         // start the job
  virtual Status MovesBegun(const std::vector<MigrationStart>& s) = 0;  // carry out the moves
  virtual void Rejected(JobId id) = 0;                                  // waited past --max-wait
  virtual Status IdleExpired(const Plan& plan) = 0;  // destroy idle instances past --idle-ttl
  // After the queue scan, before the waits expire (the daemon words its waiting reasons).
  virtual void Scanned() {}
  // An error of one step ("queue scan", "migration pass", "idle expiry"): returned, it ends the
  // instant with it (the simulator, which fails loudly); OK goes on with the next step (a driver
  // that serves jobs: it logs the error).
  virtual Status StepFailed(std::string_view step, const Status& error) {
    (void)step;
    return error;
  }
};

class Scheduler {
 public:
  // `cluster` and `clock` must outlive the scheduler.
  Scheduler(Cluster* cluster, std::unique_ptr<PlacementPolicy> policy, SchedulerOptions options,
            Clock* clock);

  const PlacementPolicy& policy() const { return *policy_; }
  const Cluster& cluster() const { return *cluster_; }
  const SchedulerOptions& options() const { return options_; }

  // Applies the policy's setup plan (static layouts). Call once, first.
  StatusOr<Plan> Setup();

  // OK if `job` could run on this cluster when it is otherwise empty;
  // kFailedPrecondition with the reason if it never can: a profile no GPU
  // offers, a static layout without it, a gang larger than the cluster.
  Status CheckCanEverRun(const Job& job) const;

  // Places all `job.count` instances now (a gang: all or none) and applies
  // the plan; nullopt when it does not fit now. kInternal if a plan is rejected.
  // A single instance whose request (its profile on each model) found no
  // placement before is answered from the GPUs changed since then when the
  // policy allows it (PlacementPolicy::FeasibilityIsPerGpu, grouping on):
  // the same answer, O(changed GPUs × placements) instead of a full choice.
  StatusOr<std::optional<Decision>> TryPlace(JobId id, const Job& job);

  // The job ended: releases its instances (kept idle or destroyed as the
  // policy says; mid-copy, the target of its move too, and the move is
  // abandoned), applies and returns the plan. kNotFound for an unknown job.
  StatusOr<Plan> Release(JobId id);

  // The queue with backfill (§5). Enqueue takes an arriving job: it tells the
  // policy (ObserveArrival) and appends the job (the enqueue time is now());
  // ScheduleQueue scans the queue once, in the order of options.queue_order
  // (arrival order, or by response ratio: the queue is re-sorted at the start
  // of each scan, and QueuedJobs() then lists it in that order), and starts every job
  // that fits (a job that does not fit does not block later ones, except
  // through the starvation guard below), returning the decisions made, in
  // queue order. With options.joint_placement (§12), a job that does not fit
  // on its own is placed jointly with the jobs this scan placed before it
  // (JointPlacer): it starts when some placement of all of them exists, and
  // their decisions are those of that placement. Not for a policy whose setup
  // laid out instances (`static`: it never reconfigures, and with only reuse
  // of exact instances the one-at-a-time scan already starts the most jobs).
  void Enqueue(JobId id, const Job& job);
  // The same for a job that began waiting at `enqueued_s` (<= now(); clamped), appended at the
  // end all the same: a driver that rebuilds its queue each round in its engine's order (the
  // cluster planner), so that the waits the §5/§13 options read are the engine's.
  void Enqueue(JobId id, const Job& job, double enqueued_s);
  // Tells the policy about an arrival without queueing it
  // (PlacementPolicy::ObserveArrival): for drivers that place arrivals
  // directly with TryPlace (fill mode) and to seed the demand window of the
  // demand-weighted metric (§2) before the first arrival.
  // It also feeds the window of the sizes an evacuation keeps room for (§13,
  // options.evacuation_keeps_room).
  void ObserveArrival(const Job& job) {
    policy_->ObserveArrival(*cluster_, job);
    if (joint_) joint_->ObserveArrival(*cluster_, job);
    arrival_sizes_.Observe(InstanceComputeSlicesOf(job));
  }
  StatusOr<std::vector<Decision>> ScheduleQueue();
  // Removes a queued job (e.g. rejected after --max-wait), and its hold. False if absent.
  bool RemoveFromQueue(JobId id);
  size_t queue_size() const { return queue_.size(); }
  // Queued jobs, in arrival order.
  std::vector<JobId> QueuedJobs() const;
  // Instances of a running job (empty if not running).
  const std::vector<InstanceRef>* InstancesOf(JobId id) const;

  // Wall-clock duration of every TryPlace call so far, in microseconds (exact
  // mean and p99 for the driver; 8 bytes per call: 1,000,000 jobs with a few
  // retries each stay in the tens of MB). A queue scan's attempt of one job is
  // one decision, its joint search (§12) included.
  const std::vector<double>& decision_us() const { return decision_us_; }
  // Moves out the decision times recorded since the last call (a driver that
  // runs for months, the daemon, keeps a histogram instead of every sample).
  std::vector<double> TakeDecisionTimes() { return std::exchange(decision_us_, {}); }
  // Counters of joint placement (§12); nullptr when it is off.
  const JointPlacer::Stats* joint_stats() const { return joint_ ? &joint_->stats() : nullptr; }
  // §5 what the limits of the jobs that ended said about their run times (sched/limit_model.h):
  // started by Commit and BindHold, ended by Release.
  const LimitModel& limit_model() const { return limit_model_; }
  // For a driver that tells the runs itself (the daemon, from its job records): ForgetRun(id)
  // before Release(id) keeps that release from counting as a run; RecordEndedRun counts one
  // (limit and end - first start, seconds; in the order runs ended; `job` the job that ran, for
  // its request: RequestKeyOf).
  void ForgetRun(JobId id) { limit_model_.Forget(id); }
  void RecordEndedRun(double limit_s, double run_s, const Job& job) {
    limit_model_.Add(limit_s, run_s, RequestKeyOf(job));
  }
  // The power the response-ratio order weighs limits with among the jobs of one request now:
  // options().limit_power, or the learned one (LimitModel::Power) with kLimitPowerLearned.
  // 1 where the queue is not ordered by response ratio (the power orders nothing there).
  double LimitPower() const {
    if (options_.queue_order != QueueOrder::kResponseRatio) return 1;
    return options_.limit_power == kLimitPowerLearned ? limit_model_.Power() : options_.limit_power;
  }

  // ---- Time and the queue options (§5) ----

  // The driver's current time, seconds; non-decreasing. Default 0.
  void SetNow(double now_s) { now_s_ = now_s; }
  double now() const { return now_s_; }
  // When a running job is expected to end (driver time, seconds), for the
  // starvation guard's "GPU that would free its placement soonest". A job
  // with no estimate counts as never ending.
  void SetExpectedEnd(JobId id, double end_s) { expected_end_[id] = end_s; }

  // Look-ahead reservation (§5 starvation guard, §13; options.max_skip_seconds
  // >= 0), applied by every ScheduleQueue scan: the *head* is the oldest job
  // still waiting after the scan tried it (every older job started). Once the
  // head has waited longer than max_skip_seconds and does not fit, it gets a
  // reservation per instance: the (GPU, placement) whose blocking busy
  // instances are expected to end soonest (the instances overlapping the
  // placement, plus, while the compute slices do not suffice, the
  // soonest-ending others; ties: fewer busy compute slices to wait for, lower
  // GPU index, lower start), one GPU per instance of a gang, on GPUs no other
  // job holds or reserves. Its expected start (Reservation::start_s) is the
  // latest free_at_s of them: a gang starts when all its placements are
  // free. When that start is unknown (a blocker without an expected end)
  // and options.reservation_needs_ends is set, the job gets no reservation. With
  // ReservationMode::kConservative each of the first reservation_depth overdue waiting jobs that do
  // not fit gets its own reservations, in queue order. For the rest of the scan another job is
  // placed on a reserved GPU only (a) when it is expected to end (now +
  // Job::time_limit_s, limit known) no later than that reservation's
  // start_s: it cannot delay that job (EASY backfilling; the policy then
  // chooses among every GPU whose reservations all start later), or (b) a
  // single instance beside the reservation: a placement that keeps the
  // reserved one valid with every instance expected to be running at its
  // start_s (ends unknown: running), chosen by the least FragCost change of
  // that future configuration, then reuse, fewer idle instances destroyed,
  // lower GPU index, higher start (a gang: each instance where the policy places
  // it on the open GPUs, else beside). Jobs on other GPUs start as usual. The
  // reservations of the last scan (empty when nothing is overdue) are kept
  // for the migration planner: reserved GPUs are never move targets, and the
  // latest-ending blockers of a reserved placement are moved off it first
  // (§13 draining).
  const std::vector<Reservation>& reservations() const { return scan_.all(); }
  // §13 reservation keeping (options.reservation_keep): the job given the easy reservation in the
  // last scan (kNoJob: none), which the next scan reserves for first. A driver that makes a
  // fresh Scheduler per round (the cluster planner) carries it across rounds with these.
  JobId reservation_holder() const { return reservation_holder_; }
  void SetReservationHolder(JobId id) { reservation_holder_ = id; }

  // options.max_wait_s >= 0: removes the queued jobs whose wait (now -
  // enqueue time, less the time the queue was held: HoldWaits) has reached
  // max_wait_s and returns them, oldest first (the driver rejects them: "waited
  // longer than --max-wait"). Call after the queue scan of that instant, so that
  // a job that can start then does.
  std::vector<JobId> ExpireWaits();
  // The queue was held (no scan: the daemon was paused by its operator) from
  // `from_s` to `to_s` (the driver's clock, seconds): that time does not count
  // against --max-wait for the jobs queued now (each counts the part of it
  // after its enqueue time). The order of the queue is unchanged. The daemon
  // calls it at a resume, and runs no --max-wait expiry while paused.
  void HoldWaits(double from_s, double to_s);

  // ---- Idle-instance retention ----
  //
  // options.idle_ttl_s >= 0 and a policy that keeps idle instances and has
  // no setup layout: an instance idle for idle_ttl_s is destroyed (one
  // reconfiguration). ExpireIdleInstances applies and returns the plan of
  // the instances whose time is up (empty plan if none); NextIdleExpiry says
  // when the next one is due (nullopt: none, or retention off).
  StatusOr<Plan> ExpireIdleInstances();
  std::optional<double> NextIdleExpiry() const;
  // Instances given to a job that a previous job had left idle (kept rather
  // than destroyed at its end). Each saved one destroy and one create against
  // destroying every instance when its job ends.
  int64_t kept_instance_reuses() const { return idle_.kept_reuses(); }
  // Idle instances destroyed because their idle_ttl_s ran out.
  int64_t idle_expirations() const { return idle_.expirations(); }

  // ---- Migration (§6) ----

  // Runs one pass of the planner when the policy migrates (nothing otherwise)
  // and returns the moves begun (already applied). `can_move` is the
  // driver's say (e.g. the simulator moves only jobs that are running). A job
  // may move when migratable != none, it has no move in flight, its last move
  // began at least cooldown_s ago, and `can_move`; latency-sensitive jobs
  // only within their GPU. kFragmented aims at the requests of the last
  // ScheduleQueue that found only fragmented room at their first try (then
  // forgotten); a pass without any does nothing. A kFragmented pass returns
  // first the §13 evacuation moves begun by the scans since the previous one
  // that are still in flight (MigrationStart::for_job set; already applied).
  // One scheduling instant, in the one order every driver follows (docs/algorithms.md §13 "Order
  // of an instant"): (1) with `migration-order before-scan`, the completion pass; (2) the queue
  // scan; (3) expiry of waits past --max-wait; (4) the pass for requests that found only
  // fragmented room, then the completion pass (unless done in 1) or else the periodic pass;
  // (5) expiry of idle instances. Each decision goes to `driver` as it is made. The simulator and
  // the node daemon call it; errors as InstantDriver::StepFailed says.
  Status RunInstant(const InstantEvents& events, InstantDriver* driver);

  StatusOr<std::vector<MigrationStart>> RunMigrationPass(
      MigrationTrigger trigger, const std::function<bool(JobId)>& can_move);
  // Whether the last ScheduleQueue left requests for a kFragmented pass
  // (fragmented room, §4 step 6, or evacuations, §13).
  bool has_fragmented_requests() const {
    return !fragmented_.empty() || !evacuation_starts_.empty();
  }

  // ---- Evacuation (§13) ----
  //
  // options.evacuation != kOff and migration on: a waiting job that
  // the scan could not place (the head only for kHead; any for kQueue), that
  // has waited at least evacuation_min_wait_s and asks for at least
  // evacuation_min_slices compute slices, for which moving running jobs
  // would open a placement now (sched/evacuation.h PlanEvacuation, on GPUs no
  // other job holds or reserves and that the scan has not placed on) sooner
  // than the blockers' latest expected end (copy + switch-over, §6), has
  // those moves begun at once, inside the scan (so that the jobs the scan
  // places after it cannot take their targets), and gets a *hold* on the
  // placement's GPU: for the rest of the scan and every later one no other
  // job is placed there nor moved there, so that backfill cannot take the
  // room the moves free. The moves are returned by the next kFragmented pass
  // (RunMigrationPass; already applied, with MigrationStart::for_job set). A
  // hold ends when its job starts, when it leaves the queue, or at the end of
  // a scan once none of its moves is in flight. One hold per job and per GPU.
  // Holds now, in the order made:
  const std::vector<Reservation>& evacuation_holds() const { return evac_holds_.placements(); }
  // The driver's say on which running jobs may move inside a scan (the
  // evacuation's moves; RunMigrationPass has its own `can_move`). Default:
  // every running job the §6 rules allow.
  void SetMoveFilter(std::function<bool(JobId)> filter) { move_filter_ = std::move(filter); }
  // Evacuations begun so far (moves counted in MigrationStart::for_job too).
  int64_t evacuations_begun() const { return evacuations_begun_; }
  // Switch-over of the move in flight of `id`: applies and returns the end
  // plan (kMigrateEnd; then kDestroy of the source when the policy does not
  // keep idle instances or the source's GPU is held or reserved for a waiting
  // job, §6; otherwise the source stays idle); the job's instance is now the
  // target. kNotFound when the job has no move in flight.
  StatusOr<Plan> FinishMigration(JobId id);
  // The move in flight of `id`, or nullptr.
  const MigrationMove* MigrationOf(JobId id) const;
  // Replaces the planner (tests). Never null.
  void SetMigrationPlanner(std::unique_ptr<MigrationPlanner> planner) {
    planner_ = std::move(planner);
  }
  // The move of `id` cannot be carried out (its target could not be made on
  // the hardware): the job stays on its source alone, the target is released
  // (kept idle or destroyed as the policy says), and the job counts as moved
  // for the cool-down. Applies and returns the plan (kMigrateAbort). kNotFound
  // when the job has no move in flight.
  StatusOr<Plan> AbandonMigration(JobId id);

  // ---- Pins, holds and binds (the daemon, cluster controllers) ----
  //
  // The queue chooses placements itself; these place at placements chosen
  // elsewhere: a cluster controller that planned every GPU of a cluster with
  // this same core, a daemon finding its jobs again after a restart. A
  // placement (gpu, profile, start) is *free* when its GPU accepts placements
  // (Cluster::accepts_placements: neither drained nor reserved), `start` is a
  // placement of the profile, and no busy instance (a job's or a hold's)
  // overlaps it, counting the other placements of the same call; idle
  // instances in the way are destroyed and an idle instance of exactly that
  // profile and start is reused (the plan of PlacementPlan, §4 step 5).
  // Errors, with nothing applied: kInvalidArgument for a malformed placement
  // (unknown GPU or profile, a start that is not a placement of the profile),
  // kFailedPrecondition naming the first placement that is not free and why
  // ("GPU 1 is drained", "GPU 0: 3g.20gb@4 overlaps 1g.5gb@6 (job 7)"),
  // kAlreadyExists for an id already running or holding, kInternal for a
  // rejected plan (a bug). Messages name GPUs by Cluster::GpuName.

  // Places job `id` (where.size() == job.count) exactly on `where` and
  // applies the plan; it is then a running job like one the queue placed.
  // Each placement's profile must be the job's (ResolveProfile), unless the
  // job names neither a profile nor a fraction: then any profiles (an
  // allocation of given placements).
  StatusOr<Decision> PlaceAt(JobId id, const Job& job, const std::vector<InstanceRef>& where);
  // Starts job `id` on instances that exist, idle, at exactly `where` (a job
  // found running after a restart), whatever the GPUs' drain or reservation
  // flags: no reconfiguration. kFailedPrecondition when one is missing or busy.
  StatusOr<Decision> Adopt(JobId id, const Job& job, const std::vector<InstanceRef>& where);
  // Occupies `where` for a hold (`holder` is kReservation or kPlaceholder;
  // kInvalidArgument for kJob) with id `id`. `existing` false: the placements
  // must be free (as PlaceAt); true: they must be idle instances that exist
  // (as Adopt). A held instance is busy: no job is placed on it, it is never
  // destroyed or moved, FragCost and utilisation count it, and the §5 guard
  // treats it as never ending. Returns the plan applied.
  StatusOr<Plan> Hold(Holder holder, JobId id, const std::vector<InstanceRef>& where,
                      bool existing = false);
  // Ends a hold: its instances become idle, or are destroyed when `destroy`
  // (a placeholder whose instance the backend destroyed) or when the policy
  // keeps no idle instances. kNotFound for an unknown hold.
  StatusOr<Plan> ReleaseHold(Holder holder, JobId id, bool destroy = false);
  // Binds held instances to job `job_id`: `which` (each one of the hold's
  // instances; all of them when empty) pass from the hold to the job, whose
  // count must equal their number; the hold keeps the others (and ends when
  // none is left). No reconfiguration. kNotFound (unknown hold), kInvalidArgument
  // (an instance of `which` the hold does not have, or a count mismatch).
  StatusOr<Decision> BindHold(Holder holder, JobId hold_id, JobId job_id, const Job& job,
                              const std::vector<InstanceRef>& which = {});
  // The instances of a hold, or nullptr.
  const std::vector<InstanceRef>* HeldBy(Holder holder, JobId id) const;
  // Puts job `id` back into the queue at the place its enqueue time gives it
  // (after every job enqueued no later), e.g. a placement the hardware could
  // not carry out; the policy is not told of a new arrival.
  void Requeue(JobId id, const Job& job, double enqueued_s);
  // When job `id` was enqueued (queued jobs only), or nullopt.
  std::optional<double> EnqueuedAt(JobId id) const;
  // Idle instances that appeared or vanished outside the scheduler's plans
  // (the daemon found them on, or missing from, the hardware): applies `plan`
  // (kCreate and kDestroy steps of idle instances only; kInvalidArgument for
  // any other step) and keeps idle-instance retention in step.
  Status ApplyExternal(const Plan& plan);

  // ---- Internal errors in a queue scan (drivers that serve jobs) ----
  //
  // An internal error (kInternal: a plan ApplyPlan would reject, a broken rule such as a second
  // move of one job) is a bug in migsched. By default ScheduleQueue returns it (the simulator
  // fails loudly: exit 1 with the job and the step). A driver that serves jobs (the daemon, the
  // cluster planner behind the Slurm controller and the Kubernetes extender) turns containment
  // on: a scan that hits one while deciding for job J refuses that one decision (J stays queued
  // and holds nothing new: every plan is checked before it is applied, ApplyPlan changes nothing
  // on a failure), records an InternalIncident, and goes on with the next job; J is not tried
  // again before `retry_after_s` of scheduler time (seconds, >= 0) has passed. The decisions the
  // scan made are returned as usual.
  struct InternalIncident {
    JobId job = kNoJob;
    std::string what;   // the error's message
    double at_s = 0;    // now() when it happened
    std::string state;  // the GPUs as they stood (Cluster::DebugString-style, one line per GPU)
  };
  void SetContainInternalErrors(bool on, double retry_after_s = 60);
  // The incidents recorded since the last call, in order.
  std::vector<InternalIncident> TakeIncidents();
  // When queued job `id` is tried again after an incident (nullopt when it is not held back).
  std::optional<double> HeldBackUntil(JobId id) const;
  // Fault drills and tests: while `fails` returns true for a job, every placement decision for
  // it (TryPlace, a queue scan's) fails with kInternal before anything is applied. Empty: none.
  void SetFaultInjector(std::function<bool(JobId, const Job&)> fails) { fault_ = std::move(fails); }

 private:
  // Containment (above): records the incident of `status` for job `id` and holds it back;
  // true when contained (the scan goes on), false when `status` must end the scan.
  bool Contain(JobId id, Status* status);
  // What moving running job `id` now costs it, seconds of its progress (§13 "Moves that pay for
  // themselves"): the switch-over pause, plus for a `restart` job the work since its last
  // checkpoint (checkpoints every checkpoint_interval_s from its start or its last restart).
  double MoveCostS(JobId id) const;
  // Compute slices of all instances of `job` on the first model that offers it (0: none).
  int ComputeSlicesOf(const Job& job) const;
  // Compute slices of one instance of `job` there (0: none).
  int InstanceComputeSlicesOf(const Job& job) const;

  // Whether the request `shape` (profile per model) of `req` failed before
  // and no GPU changed since offers it a candidate (then the failure's cursor
  // moves to now). False when unknown: ask the policy.
  bool StillNoRoom(const PlacementRequest& req, const std::vector<int>& shape);
  // TryPlace without the bookkeeping (Commit): chooses, applies the plan and
  // records the decision time. `round`: the GPUs are saved in the joint
  // placer's round before they change.
  StatusOr<std::optional<Decision>> Decide(JobId id, const Job& job, bool round);
  // A placement is final: the job runs on its instances (retention bookkeeping too).
  void Commit(JobId id, const Job& job, const Decision& d);
  // With anchored_together on, registers a job that can never leave its GPU (Job::anchors) as
  // anchored in the cluster (Cluster::SetJobAnchored): before its placement is applied, or, when
  // it already holds `held`, with those GPUs re-grouped. Forgotten at its release, or when it
  // leaves the queue without running.
  void NoteAnchor(JobId id, const Job& job, const std::vector<InstanceRef>& held = {});
  struct Queued {
    JobId id;
    Job job;
    double enqueued_s = 0;
    bool tried = false;  // tried by a scan at least once
    double held_s = 0;   // time the queue was held since its enqueue (HoldWaits)
  };
  // When --max-wait turns `q` away (options_.max_wait_s >= 0).
  double WaitDeadline(const Queued& q) const {
    return q.enqueued_s + q.held_s + options_.max_wait_s;
  }

  // §5: sorts queue_ by options_.queue_order at now_s_ (nothing for FIFO).
  // Then, with LimitPower() != 1, limits weighed by what they predict among the jobs of one
  // request (WeighLimitsWithinRequests), and with options_.overtake_guard >= 0, the §5
  // overtaking guard among them (GuardOvertaking).
  void WeighLimitsWithinRequests(double power);
  // §5 the expected run time E a waiting job is ordered by, seconds: its limit (a job without one
  // counts as kUnknownLimitForOrderS), times its request's learned factor
  // (LimitModel::RequestFactor) where the power is learned (kLimitPowerLearned) and it has a limit.
  double ExpectedRunForOrder(const Job& job) const;
  void GuardOvertaking();
  // Gives each request's places in queue_ (RequestKeyOf; the places its jobs hold now, in order)
  // to its jobs in the order `reorder` puts their queue_ indices in (it is handed them in the
  // order they have); jobs of other requests keep their places.
  void ReorderWithinRequests(const std::function<void(std::vector<size_t>* jobs)>& reorder);
  // Arrival order: enqueued_s, then job id.
  static bool ArrivedBefore(const Queued& a, const Queued& b);
  // One queue scan (ScheduleQueue), step by step; ScanFrame (scheduler.cc) is the state the
  // steps hand along. A step of a job's turn ends in one of these.
  struct ScanFrame;
  enum class TurnEnd {
    kStarted,    // the job started (its queue entry is erased, the iterator past it)
    kNotPlaced,  // not placed by this step: the turn's next step tries
    kNext,       // the turn is over without a start (also an error contained): the next job
    kStop,       // an error not contained (in ScanFrame::status): the scan stops
  };
  void BeginScan(ScanFrame& f);
  TurnEnd TakeTurn(ScanFrame& f, std::deque<Queued>::iterator& it);
  TurnEnd OwnTry(ScanFrame& f, std::deque<Queued>::iterator& it, bool first_try,
                 const RequestKey& key);
  TurnEnd BackfillOntoReserved(ScanFrame& f, std::deque<Queued>::iterator& it,
                               const RequestKey& key);
  TurnEnd PlaceBeside(ScanFrame& f, std::deque<Queued>::iterator& it, const RequestKey& key);
  // Starts the job at `it` on its own (through the joint round when on; `jointly`: with the
  // scan's earlier jobs too, never for the backfill onto reserved GPUs); true if it started.
  bool TryStart(ScanFrame& f, std::deque<Queued>::iterator& it, bool jointly);
  void ReserveIfOverdue(ScanFrame& f, const Queued& q);
  // At the start of a scan (the kept holder, the oldest overdue job): ReserveIfOverdue with the
  // GPUs held for other jobs' evacuations closed, as at a turn.
  void ReserveBeforeTurns(ScanFrame& f, const Queued& q);
  // Whether `q` has waited longer than max_skip_seconds (>= 0): the job a look-ahead reservation
  // serves (§5, §13); the room kept for small jobs no longer holds it back once a reservation
  // can be made for it (TryEvacuate).
  bool Overdue(const Queued& q) const;
  TurnEnd OnError(ScanFrame& f, JobId id);  // kNext when contained, else kStop
  void EvacuateAfterBackfill(ScanFrame& f);
  void EndScan(ScanFrame& f);
  void OrderQueue();
  // What a running job may do in a pass, the driver's say aside (§6).
  MoveRights RightsOf(JobId id) const;
  // §13 (b): places the job at `it` with its instances beside reservations of other jobs
  // (a gang's others where its own try would place them); applied like
  // a placement, all instances or none. False if none.
  StatusOr<bool> PlaceBesideReservations(std::deque<Queued>::iterator& it, bool round,
                                         std::vector<Decision>* out);
  // §13 (b): the best placement of one instance of `job` beside a reservation of another job
  // on the cluster as it is now (least FragCost change; ties: reuse, fewer destroys, lower GPU,
  // higher start); none if there is none.
  std::optional<Candidate> BestBeside(JobId id, const Job& job);
  // Places the `job.count` instances of `id` one at a time where `choose` says, on the cluster
  // as each earlier one left it (joint round: each GPU touched first); all or none (the GPUs
  // touched get their states back when `choose` finds none or a step fails).
  StatusOr<std::optional<Decision>> PlaceEach(
      JobId id, const Job& job, bool round,
      const std::function<std::optional<Candidate>()>& choose);
  // §13: whether waiting job `q` may trigger an evacuation now (`head`: it
  // is the first job of this scan that did not fit).
  bool MayEvacuateFor(const Queued& q, bool head) const;
  // Plans an evacuation for `q` on the GPUs open to it and begins it; false
  // when there is none. `joint`: the scan's joint round is on (§12).
  StatusOr<bool> TryEvacuate(const Queued& q, bool joint);
  // Begins `plan`'s moves for waiting job `id` and holds its placement.
  Status BeginEvacuation(JobId id, const EvacuationPlan& plan);
  // Whether some GPU has enough free compute slices and units for `job`'s
  // profile but no valid placement (§4 step 6).
  bool FragmentedRoomOnly(const Job& job) const;
  bool RetentionOn() const;
  double ExpectedEnd(JobId id) const;
  // Whether `moves` more moves fit the admission move budget now (always where no job is turned
  // away, or the budget is unbounded); the job they would admit counts as started.
  bool MoveBudgetAllows(int64_t moves) const;

  Cluster* cluster_;
  std::unique_ptr<PlacementPolicy> policy_;
  SchedulerOptions options_;
  Clock* clock_;
  std::deque<Queued> queue_;
  std::unordered_map<JobId, std::vector<InstanceRef>> running_;
  std::unordered_map<JobId, Job> running_jobs_;
  std::vector<double> decision_us_;
  // Requests that found no placement (by their profile on each model, in
  // models() order) and the cluster's change cursor then: a retry looks only
  // at the GPUs changed since (PlacementPolicy::FeasibilityIsPerGpu; single
  // instances, grouping on, no GPU reserved at the failure).
  std::map<std::vector<int>, Cluster::ChangeCursor> failed_at_;
  std::vector<int> changed_;  // scratch

  double now_s_ = 0;
  bool setup_layout_ = false;  // the policy's setup created instances (static layouts)
  std::unordered_map<JobId, double> expected_end_;
  // §5/§13 look-ahead reservations of the current scan, and the GPUs closed to the job tried.
  ScanReservations scan_{cluster_};
  EvacuationHolds evac_holds_;                     // §13 evacuation holds, persistent across scans
  std::vector<MigrationStart> evacuation_starts_;  // begun in scans, not yet returned
  std::function<bool(JobId)> move_filter_;
  int64_t evacuations_begun_ = 0;
  // §13 room kept for small jobs: the sizes of the last demand_window arrivals.
  RecentArrivalSizes arrival_sizes_{options_.demand_window};
  std::vector<Job> fragmented_;  // kFragmented requests of the last scan

  IdleRetention idle_;  // the books of every applied plan (sched/idle_retention.h)
  // §5: how much the limits of the jobs that ended said about their run times (the response
  // ratio's power with options_.limit_power == kLimitPowerLearned; learned in every case).
  LimitModel limit_model_;

  std::unique_ptr<JointPlacer> joint_;  // options_.joint_placement

  std::unique_ptr<MigrationPlanner> planner_;
  // Moves in flight, cool-downs, checkpoint origins, the admission move budget's counts (§6, §13).
  MoveBook moves_;

  // Pins and holds: ApplyPins (sched/pins.h), and idle retention told of the plan.
  StatusOr<Plan> PinPlan(Holder holder, JobId id, const std::vector<InstanceRef>& where,
                         bool existing);
  PinnedHolds holds_;  // the holds of reservations and placeholders (Hold)

  // Containment of internal errors (SetContainInternalErrors).
  bool contain_ = false;
  double retry_after_s_ = 60;
  std::vector<InternalIncident> incidents_;
  std::map<JobId, double> held_back_;  // queued job -> tried again from then on
  // §13 reservation keeping: the job given the easy reservation in the last scan (kNoJob: none).
  JobId reservation_holder_ = kNoJob;
  std::function<bool(JobId, const Job&)> fault_;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_SCHEDULER_H_
