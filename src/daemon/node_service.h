// NodeService: the part of the node API that cluster controllers use
// (docs/api.md): the node view (GET /v1/node, /v1/gpus), reservations
// (placements held for a controller, ReservationTable) and allocations
// (instances bound to a controller's job without a process of ours).
//
// It owns the reservations. It uses the daemon's other parts through their
// interfaces: the NodeModel (Cluster, Scheduler, drains), InstanceSync (the
// backend side of every plan), JobService's JobTable and IdempotencyKeys
// gate, which JobService owns and shares with it (an allocation is a record
// there, beside the daemon's jobs, so that ids, idempotency keys and listings
// are one), and the NodeServiceHost (store writes and whether changes are
// accepted now, from the daemon; job ids and ending a record, which the
// daemon hands to JobService).
//
// Locks. One lock, the daemon's *state lock* (passed in; state_lock.h),
// guards everything here: reservations_ and whatever is reached through the
// model, the sync and the job table.
//   * The API calls take it themselves (MIGSCHED_EXCLUDES(kStateLock)); the
//     others require it held (MIGSCHED_REQUIRES(kStateLock): the daemon's
//     control loop and node view call them).
//   * Nothing slow runs under it: instance creates and destroys are queued
//     on InstanceSync's thread, store writes on StoreWriter's; a call that
//     must wait for them (Reserve, ReleaseReservation, Allocate,
//     ReleaseAllocation) waits for its commit with the lock released, at
//     most kCommitWaitS (commit_wait.h); callbacks of the sync and the writer
//     run with the state lock held.
//   * Lock order: the state lock, then the sync's or the writer's queue lock.
// Errors are those of NodeApi (node_api.h).
#ifndef MIGSCHED_DAEMON_NODE_SERVICE_H_
#define MIGSCHED_DAEMON_NODE_SERVICE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "daemon/config.h"
#include "daemon/idempotency_keys.h"
#include "daemon/instance_sync.h"
#include "daemon/job_store.h"
#include "daemon/job_table.h"
#include "daemon/node_api.h"
#include "daemon/node_model.h"
#include "daemon/reservation_table.h"
#include "daemon/service_host.h"
#include "daemon/state_lock.h"

namespace migsched {

// What the node service needs from the daemon besides ServiceHost's accept
// gate, store and wake-up. Every method requires the state lock held and
// must not block.
class NodeServiceHost : public ServiceHost {
 public:
  // A new record id (shared by jobs and allocations; never reused).
  virtual DaemonJobId NextJobId() MIGSCHED_REQUIRES(kStateLock) = 0;
  // Ends record `r` (terminal `state`): its instances are released and the
  // change is stored.
  virtual void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                         std::string reason) MIGSCHED_REQUIRES(kStateLock) = 0;
  // Releases the instances record `id` holds in the scheduler (no store write).
  virtual void ReleaseInstances(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) = 0;
};

class NodeService {
 public:
  // Nothing is owned; everything must outlive the service. `state_mu` is the
  // daemon's state lock.
  NodeService(NodeModel* model, InstanceSync* sync, JobTable* jobs, IdempotencyKeys* keys,
              const DaemonConfig* config, Clock* clock, StateMutex* state_mu, NodeServiceHost* host)
      : model_(model),
        sync_(sync),
        jobs_(jobs),
        keys_(keys),
        config_(config),
        clock_(clock),
        state_mu_(state_mu),
        host_(host) {}
  NodeService(const NodeService&) = delete;
  NodeService& operator=(const NodeService&) = delete;

  // ---- the API (each takes the state lock) ----
  std::vector<GpuView> Gpus() const MIGSCHED_EXCLUDES(kStateLock);
  StatusOr<ReserveResult> Reserve(const ReservationRequest& request) MIGSCHED_EXCLUDES(kStateLock);
  std::vector<ReservationView> ListReservations(const std::string& prefix) const
      MIGSCHED_EXCLUDES(kStateLock);
  StatusOr<ReservationView> GetReservation(const std::string& owner) const
      MIGSCHED_EXCLUDES(kStateLock);
  Status ReleaseReservation(const std::string& owner) MIGSCHED_EXCLUDES(kStateLock);
  StatusOr<SubmitResult> Allocate(const AllocationRequest& request, const std::string& key)
      MIGSCHED_EXCLUDES(kStateLock);
  StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id) MIGSCHED_EXCLUDES(kStateLock);
  StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner)
      MIGSCHED_EXCLUDES(kStateLock);

  // ---- the state lock held ----
  // The node view's parts this service owns: boot id, generation, policy and
  // options, the GPUs and the reservations (the caller fills the rest).
  void FillNode(NodeView* n) const MIGSCHED_REQUIRES(kStateLock);
  // Drops the reservations whose time is up (the control loop).
  void ExpireReservations() MIGSCHED_REQUIRES(kStateLock);
  size_t reservation_count() const MIGSCHED_REQUIRES(kStateLock) { return reservations_.size(); }
  // The table recovery fills before the daemon serves anything (recovery
  // holds the pointer MIGSCHED_PT_GUARDED_BY(kStateLock)).
  ReservationTable* reservations_for_recovery() { return &reservations_; }

 private:
  double Unix() const { return clock_->UnixSeconds(); }
  GpuView GpuViewOf(int g) const MIGSCHED_REQUIRES(kStateLock);
  JobInstance InstanceAt(const InstanceRef& ref) const MIGSCHED_REQUIRES(kStateLock);
  std::vector<JobInstance> InstancesOf(DaemonJobId id) const MIGSCHED_REQUIRES(kStateLock);
  // The daemon's instance of each placement; kInvalidArgument naming the
  // placement (its position) that is not one of the node or overlaps another.
  StatusOr<std::vector<InstanceRef>> ResolvePlacements(
      const std::vector<PlacementRef>& placements) const MIGSCHED_REQUIRES(kStateLock);
  // Why `ref` cannot be held for a new holder (OK: it can), in the API's words.
  Status Conflict(const InstanceRef& ref) const MIGSCHED_REQUIRES(kStateLock);
  ReservationView ViewOf(const HeldReservation& r) const MIGSCHED_REQUIRES(kStateLock);
  void DropReservation(const std::string& owner, const std::string& why)
      MIGSCHED_REQUIRES(kStateLock);
  // The visible record `id` (takes the state lock).
  StatusOr<DaemonJobRecord> VisibleRecord(DaemonJobId id) const MIGSCHED_EXCLUDES(kStateLock);

  NodeModel* model_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  InstanceSync* sync_;
  JobTable* jobs_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  IdempotencyKeys* keys_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  const DaemonConfig* config_;
  Clock* clock_;
  StateMutex* state_mu_;
  NodeServiceHost* host_;

  ReservationTable reservations_ MIGSCHED_GUARDED_BY(kStateLock);
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_NODE_SERVICE_H_
