// The daemon's HTTP JSON API (docs/api.md), on cpp-httplib.
//
// Routes (all but /healthz need `Authorization: Bearer <token>`):
//   POST   /v1/jobs                 submit (body: daemon/request_json.h) → 201 + the job record
//   GET    /v1/jobs                 {"jobs": [record...]}, ?state=NAME filters
//   GET    /v1/jobs/{id}            the record                         (404 unknown id)
//   DELETE /v1/jobs/{id}            cancel → the record                (409 already terminal)
//   GET    /v1/jobs/{id}/log        stdout+stderr so far (text/plain); ?follow=1 streams
//                                   (chunked) until the job is terminal and the log drained
//   GET    /v1/gpus                 {"gpus": [gpu...]}
//   POST   /v1/plan                 the plan a hypothetical job would get; nothing applied
//   POST   /v1/scheduler/pause      {"paused": true}
//   POST   /v1/scheduler/resume     {"paused": false}
//   POST   /v1/gpus/{index}/drain   {"gpu": index, "draining": true}   (404 unmanaged index)
//   POST   /v1/gpus/{index}/undrain {"gpu": index, "draining": false}  (404 unmanaged index)
//   GET    /healthz                 {"status": "ok"}, no token needed
//   GET    /metrics                 Prometheus text format 0.0.4 (RenderPrometheus)
// Errors: {"error": {"code": "<STATUS_CODE>", "message": "..."}} with the HTTP
// status of HttpStatusFor (request_json.h); 401 for a missing or wrong token
// (logged with the remote address and path, never the token); 413 for a body
// over max_body_bytes; 404 for unknown routes.
//
// Thread-safety: Bind/Serve from one thread; Stop from any thread (e.g. a
// signal watcher). Requests are served on a pool of worker threads that call
// the JobApi concurrently (the Daemon is thread-safe).
#ifndef MIGSCHED_DAEMON_HTTP_SERVER_H_
#define MIGSCHED_DAEMON_HTTP_SERVER_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/daemon.h"

namespace migsched {

// What the HTTP layer needs from the daemon: the API part of Daemon
// (daemon.h, same contracts). An interface so that the server can be tested
// without a running daemon.
class JobApi {
 public:
  virtual ~JobApi() = default;
  virtual StatusOr<DaemonJobRecord> Submit(const JobRequest& request) = 0;
  virtual std::vector<DaemonJobRecord> ListJobs() const = 0;
  virtual StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const = 0;
  virtual StatusOr<DaemonJobRecord> Cancel(DaemonJobId id) = 0;
  virtual std::vector<GpuView> Gpus() const = 0;
  virtual StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const = 0;
  virtual void Pause() = 0;
  virtual void Resume() = 0;
  virtual bool paused() const = 0;
  virtual Status Drain(int gpu) = 0;
  virtual Status Undrain(int gpu) = 0;
  virtual DaemonMetrics Metrics() const = 0;
  virtual std::filesystem::path LogPath(DaemonJobId id) const = 0;
};

// (cli/serve_command.cc adapts a Daemon to it.)

struct HttpServerOptions {
  std::string token;                // required bearer token (non-empty)
  size_t max_body_bytes = 1 << 20;  // larger bodies: 413
  int threads = 16;                 // worker threads (each follow stream holds one)
  int follow_poll_ms = 100;         // how often a ?follow=1 stream looks for new output
};

class HttpServer {
 public:
  // `api` is not owned and must outlive the server.
  HttpServer(JobApi* api, HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds to "HOST:PORT" (port 0: a free port; see port()). kInvalidArgument
  // for a malformed address or an empty token, kUnavailable when the address
  // cannot be bound (the message names it).
  Status Bind(const std::string& listen);
  int port() const;  // the bound port (after Bind)

  // Serves until Stop(); blocks. Requires a successful Bind.
  Status Serve();
  // Stops accepting, ends ?follow=1 streams, makes Serve return. Idempotent.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Prometheus text exposition (format 0.0.4) of `m` and `paused`:
//   migsched_jobs{state=...} (gauge, every state), migsched_queue_length,
//   migsched_scheduler_paused, migsched_gpu_utilisation{gpu=...} ([0, 1]),
//   migsched_gpu_fragcost{gpu=...}, migsched_gpu_draining{gpu=...},
//   migsched_reconfigurations_total (counter), migsched_reconfiguration_seconds
//   (histogram), migsched_migrations_total{kind="intra"|"inter"} (counter),
//   migsched_decision_seconds (histogram), migsched_gpu_pcie_tx_bytes_per_second
//   and _rx_ {gpu=...} (gauges, only GPUs whose backend measures PCIe).
// The histograms are computed from the daemon's most recent samples
// (DaemonMetrics keeps 10,000), so their _count is at most 10,000.
std::string RenderPrometheus(const DaemonMetrics& m, bool paused);

// Buckets (upper bounds, seconds) of the two histograms.
const std::vector<double>& ReconfigurationBuckets();
const std::vector<double>& DecisionBuckets();

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_HTTP_SERVER_H_
