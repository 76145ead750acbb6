// What the Slurm controller shows of itself (docs/slurm.md "Status and
// metrics"): a snapshot of its last tick (nodes, their GPUs and layouts, the
// rooms, the waiting jobs with their reasons, Slurm jobs whose allocations are
// gone) and its health, as JSON (`GET /v1/status`, `migsched slurm status
// --json`), as a human table (`migsched slurm status`) and as Prometheus text
// (`GET /metrics`, families migsched_slurm_*); and the HTTP server that serves
// them with `GET /healthz`.
//
// Thread-safety: the snapshot structs are values; StatusServer calls its
// callback on httplib's threads (the callback must be thread-safe).
#ifndef MIGSCHED_SLURM_CONTROLLER_STATUS_H_
#define MIGSCHED_SLURM_CONTROLLER_STATUS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace migsched::slurm {

struct StatusInstance {
  std::string profile;
  int start = 0;
  std::string holder;  // idle | job | allocation | reservation | placeholder
  std::string owner;   // "slurm:12", "slurm-room:0:3g.20gb:4", a daemon job id; "" when idle
};

struct StatusGpu {
  int index = 0;
  std::string model;
  std::vector<StatusInstance> instances;  // its layout, by start
};

struct StatusNode {
  std::string name;
  bool usable = false;
  std::string error;        // why not usable
  std::string slurm_state;  // sinfo's state and flags, e.g. "mixed" or "idle+DRAIN"
  std::string gres;         // the MIG counts Slurm has now, e.g. "mig:3g.20gb:1,..."
  std::vector<StatusGpu> gpus;
};

struct StatusRoom {
  std::string node;
  int gpu = 0;
  std::string profile;
  int start = 0;
  std::string for_job;  // "slurm:12", or "slurm-started:n2:3g.20gb" (a started job's claim)
};

struct StatusWaiting {
  int64_t job = 0;
  std::string request;  // "3g.20gb:1" (per node), "1g.5gb:2,3g.20gb:1 x2 nodes"
  std::string reason;   // "room on n2 GPU 0 (3g.20gb@4)", or why it waits or is held
  std::string spec;     // how scontrol addresses it (SlurmJob::Spec): "48_2" for an array's task
};

// A job Slurm shows RUNNING whose binding on a node has no allocation at the
// node's daemon any more (slurm/round.h ActiveCounts::lost), for at least
// reclaim_grace_s.
struct StatusLost {
  int64_t job = 0;
  std::string node;
  double since_s = 0;  // Unix seconds
};

// Counts since the controller started.
struct StatusCounters {
  uint64_t ticks = 0;
  uint64_t tick_errors = 0;
  uint64_t gate_cycles = 0;
  uint64_t rooms_created = 0;
  uint64_t rooms_released = 0;
  uint64_t publishes = 0;  // nodes whose counts were set
  uint64_t reclaimed = 0;
  uint64_t requeued = 0;
  uint64_t held = 0;
};

struct ControllerStatus {
  std::string partition;
  std::string policy;
  double started_s = 0;        // Unix seconds
  double last_tick_s = 0;      // the last tick that completed (0: none yet)
  double last_attempt_s = 0;   // the last tick tried
  std::string last_error;      // of the last tick tried, "" when it completed
  double tick_interval_s = 1;  // controller.tick_ms
  bool gate_open = false;
  std::vector<StatusNode> nodes;
  std::vector<StatusRoom> rooms;
  std::vector<StatusWaiting> waiting;
  std::vector<StatusLost> lost;
  StatusCounters counters;

  // "" when healthy at Unix time `now_s`: a tick completed within the last
  // max(10 s, 5 ticks); otherwise why not (shown by /healthz with a 503).
  std::string Unhealthy(double now_s) const;
};

nlohmann::json ToJson(const ControllerStatus& s, double now_s);
// The human view of ToJson's document (`migsched slurm status`): the
// controller's health, one line per node, GPU layouts, rooms, waiting jobs,
// lost allocations. kInvalidArgument for a document that is not one.
StatusOr<std::string> FormatStatusTable(const nlohmann::json& doc);
// Prometheus text exposition (format 0.0.4) of `s` at `now_s`.
std::string MetricsText(const ControllerStatus& s, double now_s);

// GET /healthz (200 {"status":"ok"}, or 503 with the reason), /metrics and
// /v1/status, from `snapshot` at each request.
class StatusServer {
 public:
  explicit StatusServer(std::function<ControllerStatus()> snapshot);
  ~StatusServer();  // Stop()
  // Binds host:port (port 0: the kernel picks) and serves on a thread; the
  // port. kUnavailable when the address cannot be bound.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();

 private:
  std::function<ControllerStatus()> snapshot_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

// Unix time now, seconds.
double UnixNow();

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_CONTROLLER_STATUS_H_
