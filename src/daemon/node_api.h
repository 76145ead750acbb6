// NodeApi: what the node daemon offers its clients (the HTTP API of
// docs/api.md is a thin layer over it): jobs, the node's state,
// reservations and allocations for cluster controllers, drains, pause,
// metrics. The Daemon implements it; the HTTP server's tests use a stub.
//
// Every call is thread-safe. A call that changes state returns only once the
// change is durable in the job store (or fails with nothing changed), so
// what it returns is what a restart would find. Errors: kInvalidArgument
// (a malformed request), kNotFound (unknown id, key or GPU),
// kFailedPrecondition (valid but not possible now: a placement that is not
// free, a drained GPU, no room now for an allocation that names no
// placement, a terminal job, an idempotency key reused for another request),
// kUnavailable (the daemon is stopping, the job store cannot be written, or
// the backend failed, e.g. a failed bind: retry later).
#ifndef MIGSCHED_DAEMON_NODE_API_H_
#define MIGSCHED_DAEMON_NODE_API_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/metrics.h"
#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"
#include "sched/options.h"

namespace migsched {

class NodeApi {
 public:
  virtual ~NodeApi() = default;

  // ---- jobs ----
  // A job that can never run here is stored as rejected (with the reason)
  // and returned. `idempotency_key` (may be empty): a repeated call with the
  // same key and request returns the first call's job (replayed), with
  // another request kFailedPrecondition.
  virtual StatusOr<SubmitResult> Submit(const JobRequest& request,
                                        const std::string& idempotency_key) = 0;
  virtual JobPage ListJobs(const JobQuery& query) const = 0;
  virtual StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const = 0;
  // Queued: cancelled at once. Running: SIGTERM, SIGKILL after kill_grace_s,
  // then cancelled (a cancel survives a restart). An allocation: released.
  // Terminal: kFailedPrecondition.
  virtual StatusOr<DaemonJobRecord> Cancel(DaemonJobId id) = 0;
  virtual StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const = 0;
  // The combined stdout+stderr log file of a job (may not exist yet).
  virtual std::filesystem::path LogPath(DaemonJobId id) const = 0;

  // ---- the node ----
  virtual std::vector<GpuView> Gpus() const = 0;
  virtual NodeView Node() const = 0;
  // The queue is not scanned (Pause) or is again (Resume); running jobs go on. Stored, so a
  // restart keeps it; answered once committed. Errors: kUnavailable (not accepting changes: the
  // store cannot be written, the state dir is gone; or the commit failed, then it holds in memory
  // and the writer retries), as every change.
  virtual Status Pause() = 0;
  virtual Status Resume() = 0;
  virtual bool paused() const = 0;
  // No new placement on `gpu` (an NVML index); kept across restarts.
  // kNotFound for an unmanaged index.
  virtual Status Drain(NvmlIndex gpu) = 0;
  virtual Status Undrain(NvmlIndex gpu) = 0;
  virtual DaemonMetrics Metrics() const = 0;
  // OK, or why the daemon cannot take submissions now (store, state dir).
  virtual Status Health() const = 0;

  // ---- reservations (cluster controllers) ----
  virtual StatusOr<ReserveResult> Reserve(const ReservationRequest& request) = 0;
  // Owners starting with `prefix` ("" = all), by owner.
  virtual std::vector<ReservationView> ListReservations(const std::string& prefix) const = 0;
  virtual StatusOr<ReservationView> GetReservation(const std::string& owner) const = 0;
  virtual Status ReleaseReservation(const std::string& owner) = 0;

  // ---- allocations (a job without a process) ----
  virtual StatusOr<SubmitResult> Allocate(const AllocationRequest& request,
                                          const std::string& idempotency_key) = 0;
  // The allocation `id` is released (its instances kept idle or destroyed as
  // for jobs). kNotFound for an id that is not an allocation.
  virtual StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id) = 0;
  // Every live allocation of owner `owner` is released; returns them.
  virtual StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner) = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_NODE_API_H_
