// The cluster planner: one pure, deterministic function from what the
// controller knows now (every node's state as a ClusterView, the engine's
// waiting jobs in its priority order, its running jobs and the reservations
// it holds) to a ClusterPlan: which placements to hold for which job, which
// reservations to drop, why each other job waits or can never run, and which
// running jobs to requeue to open room. Rules: docs/algorithms-cluster.md §14.
//
// The scheduler core is the simulator's and the daemon's: the configured
// policy (sched/policy.h MakePolicy, with the defaults of OptionsForPolicy)
// chooses every instance. Runs of one-instance jobs between node-bound jobs
// go through one Scheduler queue scan (§5, with §12 joint placement when the
// options have it), as the simulator's waiting jobs do, but always in the
// engine's order (its priority: the options' queue_order is not applied); a job bound to one
// node (several instances, several nodes, node lists) is placed by the
// JobPlacer (cluster/job_placer.h) in its turn. The policy is made afresh
// each call, and what it learns from arrivals (the demand-weighted metric's
// window, §2) comes from the input: the recent arrivals, then the waiting
// jobs, so that the plan is a function of the input alone.
//
// Thread-safety: pure; calls may run concurrently.
#ifndef MIGSCHED_CLUSTER_PLANNER_H_
#define MIGSCHED_CLUSTER_PLANNER_H_

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_view.h"
#include "core/clock.h"
#include "core/job.h"
#include "core/status.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

struct ProfileCount {
  std::string profile;  // exact profile name, e.g. "3g.20gb"
  int count = 1;        // instances on each node, >= 1
  bool operator==(const ProfileCount&) const = default;
};

// A job of the engine: `num_nodes` distinct nodes, each holding every
// ProfileCount of `per_node` at once (all or nothing, across the nodes too).
struct ClusterJob {
  std::string key;  // the engine's unique id, e.g. "slurm:1234"; allocations carry it as owner
  int num_nodes = 1;
  std::vector<ProfileCount> per_node;
  std::vector<std::string> allowed_nodes;   // empty: any node
  std::vector<std::string> excluded_nodes;  // never these
  bool latency_sensitive = false;
  Migratable migratable = Migratable::kNone;
  double waiting_since_s = 0;  // when it became eligible (the engine's clock, seconds)
  // Its time limit, seconds (0: none): its expected run time, for the §13 look-ahead reservation's
  // backfill (Job::time_limit_s).
  double time_limit_s = 0;
  // "2x 3g.20gb", "1g.5gb + 3g.20gb on each of 2 nodes".
  std::string Describe() const;
  // Whether it can never leave the GPUs it is placed on (Job::anchors).
  bool anchors() const { return Anchors(migratable, latency_sensitive); }
};

// A running job of the engine whose instances are allocations owned by its key.
struct EngineRunningJob {
  ClusterJob job;
  bool may_move = false;  // the engine can requeue it now (migratable, cool-down over, ...)
  // When it is expected to end (the engine's clock, seconds; its start plus its time limit), for
  // the §13 look-ahead reservation; infinity: unknown (no limit), counted as never ending.
  double expected_end_s = std::numeric_limits<double>::infinity();
};

// A reservation the engine holds on a node.
struct EngineReservation {
  int node = -1;  // index into the view's nodes
  std::string key;
  std::vector<PlacementRef> placements;
  // Who may use it: "" = any waiting job whose per-node request its node's
  // pooled reservations cover (Slurm's rooms); otherwise only that job key.
  std::string owner;
  // Already taken by a job the engine has started (not yet bound): kept as it is.
  bool claimed = false;
  // Held for longer than the time-out without being taken: dropped, and its
  // node gets no new reservation for its profiles for a while (`avoid`).
  bool timed_out = false;
};

// A requeue the engine made to open room, not yet used.
struct InFlightMigration {
  std::string for_job;             // the waiting job the room is for
  std::vector<std::string> moved;  // the requeued jobs
};

struct PlannerInput {
  const ClusterView* view = nullptr;
  std::vector<ClusterJob> waiting;  // the engine's priority order
  std::vector<EngineRunningJob> running;
  std::vector<EngineReservation> reservations;
  std::vector<std::pair<std::string, std::string>> avoid;  // (node, profile): no new placements
  std::vector<InFlightMigration> in_flight;
  double now_s = 0;  // the engine's clock, seconds
  // Jobs that arrived before the waiting ones (running or ended, oldest
  // first), for the policy's arrival window (ObserveArrival). May be empty.
  std::vector<Job> recent;
  // §13 reservation keeping: the key of the job the last round's plan gave the look-ahead
  // reservation (ClusterPlan::reservation_holder); empty: none. Where it still waits among the
  // one-instance jobs of a scan, that scan reserves for it first (options.scheduler
  // reservation_keep), as the simulator's and the daemon's scheduler do from scan to scan.
  std::string reservation_holder;
};

struct PlannerOptions {
  std::string policy = std::string(kDefaultPolicy);  // a name MakePolicy knows
  SchedulerOptions scheduler;  // as the policy runs with them (OptionsForPolicy)
  // Requeue-migration (§14.5): the first waiting job that has waited at
  // least this long and fits nowhere may get room by requeueing at most
  // `max_moved_jobs` movable running jobs that all fit elsewhere.
  bool migrate = true;
  double migrate_after_s = 0;
  int max_moved_jobs = 2;
  // Fault drills and tests: while it returns true for a job key, the core fails every placement
  // decision for that job with an internal error (Scheduler::SetFaultInjector). Empty: none.
  std::function<bool(const std::string& job_key)> fault;
};

// A decision the core refused on an internal error (a bug in migsched): the job waits this
// round (its JobPlan says why) and the round goes on; the driver logs it with the state.
struct PlanIncident {
  std::string job;    // the job's key
  std::string what;   // the core's message
  std::string state;  // the GPUs as they stood, one line per GPU
};

// Where a job goes on one node.
struct NodePlacement {
  int node = -1;
  std::vector<PlacementRef> placements;
  bool operator==(const NodePlacement&) const = default;
};

enum class Outcome {
  kPlaced,     // placements chosen: hold them (existing reservations or new ones)
  kWaiting,    // no room now; `reason` says why
  kNever,      // can never run on this cluster; `reason` says why
  kMigrating,  // room is being opened for it by requeues (this plan's or in flight)
};
std::string_view OutcomeName(Outcome o);

struct JobPlan {
  std::string key;
  Outcome outcome = Outcome::kWaiting;
  std::vector<NodePlacement> placements;  // kPlaced: one per node, node order of choice
  std::vector<std::string> reservations;  // kPlaced: keys of held reservations it takes
  std::string reason;                     // kWaiting / kNever / kMigrating
};

// A placement to reserve on a node for a job.
struct NewReservation {
  int node = -1;
  std::string job;  // the job's key
  PlacementRef placement;
  bool operator==(const NewReservation&) const = default;
};

struct RequeueMove {
  std::string job;      // the running job to requeue
  std::string for_job;  // the waiting job that gets its room
  NodePlacement room;   // where the waiting job will go
  std::string reason;   // "requeued to open room for slurm:9 (7g.40gb on n2 GPU 1)"
};

struct ClusterPlan {
  std::vector<JobPlan> jobs;                         // one per waiting job, in the input's order
  std::vector<NewReservation> create;                // new placements to reserve, in job order
  std::vector<std::pair<int, std::string>> release;  // (node, key) held reservations to drop
  std::vector<RequeueMove> migrations;
  std::vector<PlanIncident> incidents;  // decisions refused on an internal error, in order
  // §13 reservation keeping: the job this round's last scan with a look-ahead reservation gave
  // it to (empty: none); the engine passes it as the next round's PlannerInput::
  // reservation_holder.
  std::string reservation_holder;
};

// Plans one round. kInvalidArgument for an input that names a node the view
// does not have or a job key twice; kNotFound / kInvalidArgument for an
// unknown policy or invalid options. An internal error of the core while deciding for one job
// (a bug) refuses that job's decision only: it waits, with the error as its reason, and the
// incident is in ClusterPlan::incidents; kInternal only for one outside a job's decision (the
// requeue search). Never changes the view.
StatusOr<ClusterPlan> PlanCluster(const PlannerInput& input, const PlannerOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_PLANNER_H_
