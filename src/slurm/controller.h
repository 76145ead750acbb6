// The Slurm controller (`migsched slurm controller`, docs/slurm.md): beside
// slurmctld, every tick it reads Slurm's queue and nodes and every node
// daemon's state, plans all MIG placements of the cluster with the scheduler
// core (cluster/planner.h), and makes Slurm follow the plan:
//
//   1. rooms: each placement planned for a waiting job is reserved on its
//      node's daemon (key slurm-room:<gpu>:<profile>:<start>, renewed every
//      tick); rooms no waiting job needs are unpublished first and released
//      at the next tick if still untaken;
//   2. counts: each node's GRES counts are set (`scontrol update NodeName=
//      Gres=`) to the instances of Slurm's running jobs plus the rooms held
//      there, never above what its GPUs hold at once: Slurm can start a job
//      only where a room of its profile waits at an exact placement;
//   3. the gate: the MIG partition is DOWN in slurm.conf and set UP only
//      after the counts are published and read back; when Slurm shows
//      other counts than published (scontrol reconfigure, a slurmctld
//      restart) or the partition DOWN, or a node daemon is lost, the gate is
//      closed, the counts published again, and reopened;
//   4. reclaim: allocations of Slurm jobs that no longer hold the node are
//      released after reclaim_grace_s;
//   5. migration: jobs marked migratable=restart are requeued (AdminComment
//      says for which job) when that opens room a waiting job needs; the
//      moved job's Slurm BeginTime keeps it off the room until that job has
//      started, then the controller lets it start (StartTime=now);
//   6. reasons: a job that can never run is held (`scontrol hold`) with the
//      reason in its AdminComment; a waiting job's AdminComment says why
//      (at most 32 such writes a tick, a job's at most every 30 s once set);
//   7. lost allocations: a job Slurm shows running whose allocation on a
//      node is gone (round.h ActiveCounts::lost) gets no room claimed for
//      it; once lost for reclaim_grace_s it is logged (once), counted in
//      the status and the metrics.
// Snapshot() is a snapshot of the last tick for `migsched slurm status`,
// /metrics and /healthz (controller_status.h).
// Rules: docs/algorithms-cluster.md §14. Its state is Slurm's and the
// daemons': a restarted controller closes and reopens the gate once and goes on
// (what it keeps in memory: when each room was first seen, which nodes are
// avoided after a room time-out, rooms marked for release; lost on restart,
// which only delays those time-outs).
//
// Thread-safety: Tick and RecordTickError are called by one thread; node
// daemons are asked in parallel inside Tick; Status may be called from any
// thread (status_mu_ guards status_).
#ifndef MIGSCHED_SLURM_CONTROLLER_H_
#define MIGSCHED_SLURM_CONTROLLER_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cluster/node_daemons.h"
#include "core/catalog.h"
#include "core/config_table.h"
#include "sched/policy.h"
#include "slurm/controller_config.h"
#include "slurm/controller_status.h"
#include "slurm/slurm_client.h"

namespace migsched::slurm {

// What one tick did, for logs and tests.
struct TickReport {
  bool gate_cycled = false;  // closed, published, reopened
  bool gate_open = false;    // the partition is UP after the tick
  int waiting = 0;
  int placed = 0;  // waiting jobs with rooms now
  int rooms_created = 0;
  int rooms_released = 0;
  int published_nodes = 0;  // nodes whose counts were set
  int reclaimed = 0;
  int requeued = 0;
  int held = 0;
  int internal_errors = 0;  // decisions the core refused on an internal error (a bug; logged)
  std::vector<std::string> unusable_nodes;  // "n2 (connection refused)"
  int lost = 0;  // jobs running in Slurm whose allocation is gone (past the grace)
};

class SlurmController {
 public:
  // All pointers must outlive the controller.
  static StatusOr<std::unique_ptr<SlurmController>> Create(const ControllerConfig& config,
                                                           SlurmClient* slurm, NodeDaemons* nodes,
                                                           const Catalog* catalog);

  // One round at Unix time `now_s`. kUnavailable (nothing changed) when
  // Slurm cannot be read; node daemons that cannot be read are not usable
  // (their counts drop to what Slurm's running jobs hold there) and do not
  // fail the tick.
  StatusOr<TickReport> Tick(double now_s);

  // Fault drill: while `fails(job key)` is true ("slurm:<id>"), the core fails every placement
  // decision for that job with an internal error (PlannerOptions::fault). Empty: none.
  void InjectSchedulerFaultForTesting(std::function<bool(const std::string&)> fails) {
    fault_ = std::move(fails);
  }

  // A tick that failed at `now_s` (Tick's error): counted, shown by Status.
  void RecordTickError(double now_s, const std::string& error);

  // The last tick's snapshot (thread-safe copy).
  ControllerStatus Snapshot() const;

  // On a clean stop at `now_s`: every job the last tick saw waiting (not
  // held) that still waits gets the AdminComment "migsched: waiting: the
  // migsched controller is not running (stopped at ...)", so that `scontrol
  // show job` says why nothing starts; the next controller's ticks write the
  // real reasons again. A job Slurm has started since keeps its binding.
  void SayStopped(double now_s);

 private:
  SlurmController(const ControllerConfig& config, SlurmClient* slurm, NodeDaemons* nodes,
                  const Catalog* catalog);

  // Every node's state (ReadNodeStates), kNodeReadsAtOnce daemons asked at once.
  std::vector<NodeInput> FetchNodes();
  static constexpr int kNodeReadsAtOnce = 16;

  // The steps of one tick, in the order Tick calls them; each reads what the
  // steps before it put into the frame (defined in controller.cc). A step that
  // returns an error ends the tick (RecordTickError).
  struct TickFrame;
  Status Read(TickFrame& f, TickReport* rep);               // Slurm, then the daemons
  void Classify(TickFrame& f, TickReport* rep);             // waiting, active, invalid
  void TrackLost(const TickFrame& f, TickReport* rep);      // running, allocation gone
  void TrackRooms(TickFrame& f);                            // first seen, time-outs
  Status MakePlan(TickFrame& f, TickReport* rep);           // cluster/planner.h
  void HoldRooms(TickFrame& f, TickReport* rep);            // reserve and renew (1.)
  Status Publish(TickFrame& f, TickReport* rep);            // counts and gate (2., 3.)
  void ReleaseRooms(const TickFrame& f, TickReport* rep);   // (1.)
  void Reclaim(const TickFrame& f, TickReport* rep);        // (4.)
  void Requeue(const TickFrame& f, TickReport* rep);        // (5.)
  void HoldOrExplain(const TickFrame& f, TickReport* rep);  // (6.)
  void SaveStatus(const TickFrame& f, const TickReport& rep);

  ControllerConfig config_;
  SlurmClient* slurm_;
  NodeDaemons* nodes_;
  const Catalog* catalog_;
  ConfigTableCache tables_;

  std::map<std::string, std::vector<GresCount>> published_;  // node -> MIG counts last set
  std::set<std::string> usable_;                             // nodes usable last tick
  std::map<std::string, double> room_first_seen_;
  std::map<std::pair<std::string, std::string>, double> avoid_until_;  // (node, profile)
  std::string reservation_holder_;  // §13 keeping: the last plan's ClusterPlan::reservation_holder
  std::set<std::pair<std::string, std::string>> pending_release_;  // (node, room key)
  // (node, room key) -> the daemon's refusal last logged: a refusal is logged when it first
  // comes or changes, not at every tick that asks again.
  std::map<std::pair<std::string, std::string>, std::string> refusal_logged_;
  std::map<std::pair<std::string, int64_t>, double> orphan_since_;  // (node, allocation id)
  std::map<int64_t, double> reason_written_;  // job id -> when its waiting reason was set
  static constexpr int kReasonsPerTick = 32;
  static constexpr double kReasonEveryS = 30;
  std::function<bool(const std::string&)> fault_;
  bool started_ = false;
  bool gate_closed_ = false;  // the gate was closed (by us) when the last tick ended
  double settle_until_ = 0;   // after Slurm reverted the counts: no publishing before (Unix s)
  std::map<std::pair<std::string, std::string>, double> lost_since_;  // (job key, node)
  std::set<std::pair<std::string, std::string>> lost_reported_;       // logged already

  mutable std::mutex status_mu_;
  ControllerStatus status_;  // guarded by status_mu_
};

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_CONTROLLER_H_
