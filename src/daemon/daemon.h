// Daemon: runs real jobs, and holds instances for cluster controllers, on a
// node's MIG instances with the same scheduler core as the simulator
// (docs/algorithms.md §4–§7; docs/daemon.md says how it works inside).
//
// Its parts, each owning its state (the headers say more):
//   StateDir      the state directory's safety checks and lock  (state_dir.h)
//   JobStore      SQLite, WAL                                    (job_store.h)
//   StoreWriter   the thread that commits, in groups             (store_writer.h)
//   NodeModel     Cluster + Scheduler + drains                   (node_model.h)
//   InstanceSync  the thread that carries plans out on the backend (instance_sync.h)
//   JobService    the job API, the jobs' lives: records (JobTable),
//                 idempotency keys, runs, pending launches, moves
//                 (MoveExecutor)                              (job_service.h)
//   NodeService   node view, reservations, allocations (controllers) (node_service.h)
//   ProcessRunner forks, polls and signals job processes       (process_runner.h)
//   recovery      what a start finds in the store and on the hardware (recovery.h)
// The Daemon composes them, hands the job API to JobService and the
// controllers' calls to NodeService, and runs the control loop (Tick, every
// config.tick_ms on its worker thread, or called by tests), which drives the
// parts in order: reservations expire, runs are reaped, moves advance, the
// queue is scanned and its decisions placed, migrations begin, idle
// instances expire, old jobs are pruned, pending launches are carried out.
//
// Locks. One *state lock* guards the model and the tables (NodeModel,
// JobService's records, runs and moves, NodeService's reservations,
// InstanceSync's mirror of the backend) and the loop's own state. Nothing
// slow runs under it: backend calls run on InstanceSync's thread, commits on
// StoreWriter's thread, process launches and checkpoint helpers outside it; an API call that must
// wait for one of them waits without the lock. Lock order: the state lock, then the writer's or the
// sync's queue lock.
//
// Time: the injected Clock (NowNanos for the scheduler's clock, timeouts,
// kill grace, the destroy back-off, the migration steps and the 401 log's
// rate; UnixNanos for the records' times, reservation expiries and pruning).
// Real time only bounds waits for other threads or the disk, which a Clock
// cannot wait for: an API call's wait for its commit (commit_wait.h), the
// store writer's retry back-off and flush at stop, the HTTP threads' idle
// linger and log polling, and WaitIdle/Settle below (tests, shutdown).
//
// Thread-safety: every public method is thread-safe.
#ifndef MIGSCHED_DAEMON_DAEMON_H_
#define MIGSCHED_DAEMON_DAEMON_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/clock.h"
#include "core/status.h"
#include "daemon/config.h"
#include "daemon/mig_backend.h"
#include "daemon/node_api.h"

namespace migsched {

class Daemon : public NodeApi {
 public:
  // Checks and locks config.state_dir, discovers the node through
  // `backend`, opens (or creates) the store, recovers (docs/daemon.md).
  // Starts the store writer and the instance sync; not the worker thread.
  // `clock` (default: the real clocks) must outlive the daemon.
  // Errors: kFailedPrecondition (a GPU without MIG, an unusable or unsafe
  // state dir, an unknown job user), kInvalidArgument (config), kUnavailable
  // (backend).
  static StatusOr<std::unique_ptr<Daemon>> Create(const DaemonConfig& config,
                                                  std::unique_ptr<MigBackend> backend,
                                                  const Catalog* catalog,
                                                  Clock* clock = SteadyClock());
  ~Daemon() override;  // Stop()s

  // Starts / stops the worker thread that calls Tick every config.tick_ms
  // (and sooner when a commit or a backend step it waits for is done).
  // Stop applies config.on_shutdown ("leave": processes keep running and are
  // re-adopted at the next start; "drain": queued jobs stay queued, running
  // ones are waited for), then flushes the store writer.
  void StartWorker();
  void Stop();
  // One iteration of the control loop (tests call it directly).
  Status Tick();
  // Waits (up to `timeout_s` of real time: these wait for threads, whatever
  // the Clock says) until the store writer and the instance sync have
  // nothing left to do (tests).
  bool WaitIdle(double timeout_s = 5);
  // Ticks until nothing is in flight any more (no plan being carried out,
  // no write pending, no launch waiting), at most `timeout_s`: one step of
  // the control loop carried to its end (tests). kUnavailable on timeout.
  Status Settle(double timeout_s = 5);
  const DaemonConfig& config() const;

  // ---- NodeApi ----
  StatusOr<SubmitResult> Submit(const JobRequest& request,
                                const std::string& idempotency_key) override;
  // Submit without an idempotency key (tests, tools).
  StatusOr<DaemonJobRecord> Submit(const JobRequest& request);
  JobPage ListJobs(const JobQuery& query) const override;
  // Every job, ascending id (tests).
  std::vector<DaemonJobRecord> ListJobs() const;
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const override;
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id) override;
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const override;
  std::filesystem::path LogPath(DaemonJobId id) const override;
  std::vector<GpuView> Gpus() const override;
  NodeView Node() const override;
  Status Pause() override;
  Status Resume() override;
  bool paused() const override;
  Status Drain(NvmlIndex gpu) override;
  Status Undrain(NvmlIndex gpu) override;
  DaemonMetrics Metrics() const override;
  Status Health() const override;
  StatusOr<ReserveResult> Reserve(const ReservationRequest& request) override;
  std::vector<ReservationView> ListReservations(const std::string& prefix) const override;
  StatusOr<ReservationView> GetReservation(const std::string& owner) const override;
  Status ReleaseReservation(const std::string& owner) override;
  StatusOr<SubmitResult> Allocate(const AllocationRequest& request,
                                  const std::string& idempotency_key) override;
  StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id) override;
  StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner) override;

  // Test hook: the store writer (to inject write failures).
  class StoreWriter* store_writer_for_testing();
  // Fault drill: while `fails(job id)` is true, the scheduler core fails that job's placement
  // with an internal error (Scheduler::SetFaultInjector). Empty: none.
  void InjectSchedulerFaultForTesting(std::function<bool(DaemonJobId)> fails);

 private:
  class Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DAEMON_H_
