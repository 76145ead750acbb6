// Daemon: runs real jobs on a node's MIG instances with the same scheduler
// core as the simulator (docs/algorithms.md §4–§7). It owns the Cluster
// model of the managed GPUs, the Scheduler (placement, FIFO queue with
// backfill, migration), a MigBackend (fake | nvml), the JobStore (SQLite,
// WAL) and the ProcessRunner.
//
// Control loop (Tick, every config.tick_ms on the daemon's worker thread, or
// called directly by tests): reap ended processes (exit codes → states,
// Release → plans), run the queue (ScheduleQueue; unless paused), apply every
// plan's kCreate/kDestroy steps to the backend (destroys retried with
// back-off on "in use", the instance kept idle meanwhile), launch processes
// with CUDA_VISIBLE_DEVICES=<MIG UUID>, run migration passes (completion,
// periodic, fragmented) and carry out their moves (restart: SIGTERM, grace,
// relaunch with MIGSCHED_RESTARTED=1 on the target; checkpoint: the
// configured checkpoint/restore commands, make-before-break; none: never),
// expire --max-wait, and write every state change to the store before it is
// visible through the API.
//
// Durability: Submit returns only after the job's record is committed. At
// start the daemon loads the store: queued jobs are queued again (same
// order), jobs whose processes survived are re-adopted (pid alive; exit code
// read from the job's exit file when it ends), the others are marked failed
// ("process lost while the daemon was down"), and instances are reconciled
// with MigBackend::ListInstances (a job's instance that vanished fails the
// job; unknown instances are adopted as idle and reported).
//
// Thread-safety: every public method is thread-safe (one internal mutex);
// the HTTP server calls them from its worker threads.
#ifndef MIGSCHED_DAEMON_DAEMON_H_
#define MIGSCHED_DAEMON_DAEMON_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/status.h"
#include "daemon/config.h"
#include "daemon/job_record.h"
#include "daemon/mig_backend.h"

namespace migsched {

// One instance in GET /v1/gpus.
struct InstanceView {
  std::string profile;
  int start = 0;  // placement units
  int size = 0;   // placement units
  std::string mig_uuid;
  bool busy = false;
  DaemonJobId job = 0;  // 0 when idle
};

// One GPU in GET /v1/gpus.
struct GpuView {
  int index = -1;  // NVML index
  std::string uuid;
  std::string model;        // catalog name, e.g. "A100 40GB"
  int placement_units = 0;  // width of the slot map
  std::vector<InstanceView> instances;
  double utilisation = 0;  // busy compute slices / compute slices, [0, 1]
  double frag_cost = 0;    // FragCost (§2) of the GPU's current state
  bool lazy = false;       // util < threshold (§3)
  bool draining = false;   // no new placements; empty when its jobs end
  std::optional<PcieThroughput> pcie;
};

// POST /v1/plan: what a hypothetical job would get now; nothing applied.
struct PlanPreview {
  bool fits_now = false;
  std::vector<JobInstance> instances;  // where it would run (empty unless fits_now)
  std::vector<std::string> steps;      // the plan's steps, e.g. "create 2g.10gb@4 on GPU 0"
  std::string reason;                  // why not (never fits / would queue behind N jobs)
};

// Counters and samples for GET /metrics (Prometheus text is rendered by the HTTP layer).
struct DaemonMetrics {
  std::map<std::string, int64_t> jobs_by_state;  // every JobStateName, 0 included
  int64_t queue_length = 0;
  int64_t reconfigurations = 0;          // GI creates + destroys done on the backend
  std::vector<double> reconfig_seconds;  // latency of each (seconds), most recent 10,000
  int64_t migrations_intra = 0;
  int64_t migrations_inter = 0;
  std::vector<double> decision_seconds;  // scheduler decision latency, most recent 10,000
  std::vector<GpuView> gpus;             // utilisation, FragCost, PCIe per GPU
};

class Daemon {
 public:
  // Discovers the node through `backend`, opens (or creates) the store in
  // config.state_dir, recovers (see above). Does not start the worker thread.
  // Errors: kFailedPrecondition (a GPU without MIG, an unusable state dir),
  // kInvalidArgument (config), kUnavailable (backend).
  static StatusOr<std::unique_ptr<Daemon>> Create(const DaemonConfig& config,
                                                  std::unique_ptr<MigBackend> backend,
                                                  const Catalog* catalog);
  ~Daemon();  // Stop()s

  // Starts / stops the worker thread that calls Tick every config.tick_ms.
  // Stop applies config.on_shutdown ("leave": processes keep running and are
  // re-adopted at the next start; "drain": queued jobs stay queued, running
  // ones are waited for).
  void StartWorker();
  void Stop();
  // One iteration of the control loop (tests call it directly).
  Status Tick();

  // ---- API (docs/api.md) ----
  // kInvalidArgument: an unknown profile / fraction out of range / empty
  // command / bad count (nothing stored). A job that can never run on this
  // node is stored as rejected with the reason and returned.
  StatusOr<DaemonJobRecord> Submit(const JobRequest& request);
  std::vector<DaemonJobRecord> ListJobs() const;
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const;  // kNotFound
  // Queued: cancelled at once. Running: SIGTERM, SIGKILL after kill_grace_s,
  // then cancelled. Terminal: kFailedPrecondition.
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id);
  std::vector<GpuView> Gpus() const;
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const;
  void Pause();  // the queue is not scanned; running jobs go on
  void Resume();
  bool paused() const;
  Status Drain(int gpu);  // kNotFound for an unmanaged index
  // Ends a drain: the GPU takes new placements again (a GPU the backend lost is
  // drained again by the next failed call). kNotFound for an unmanaged index.
  Status Undrain(int gpu);
  DaemonMetrics Metrics() const;
  // The combined stdout+stderr log file of a job (may not exist yet).
  std::filesystem::path LogPath(DaemonJobId id) const;
  const DaemonConfig& config() const;

 private:
  class Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DAEMON_H_
