// The daemon's metrics: cumulative counters and histograms (Prometheus
// needs counts that only grow: a histogram is counted since the daemon
// started, never rebuilt from recent samples), and their text exposition
// (format 0.0.4) for GET /metrics, checked with `promtool check metrics`
// in the tests.
//
// Families (docs/api.md):
//   migsched_jobs{state=...} (gauge, every state), migsched_queue_length,
//   migsched_scheduler_paused, migsched_store_degraded (1 while the job store
//   cannot be written), migsched_reservations (gauge), migsched_gpu_utilisation,
//   migsched_gpu_fragcost, migsched_gpu_draining {gpu=...} (gauges),
//   migsched_reconfigurations_total (counter), migsched_reconfiguration_seconds
//   (histogram), migsched_migrations_total{kind="intra"|"inter"} (counter),
//   migsched_decision_seconds (histogram), migsched_internal_errors_total (counter:
//   scheduler decisions refused on an internal error), migsched_gpu_pcie_tx_bytes_per_second
//   and _rx_ {gpu=...} (gauges, only GPUs whose backend measures PCIe).
//
// Thread-safety: Histogram and DaemonCounters are thread-safe (atomics and
// one small mutex per histogram); the snapshot structs are values.
#ifndef MIGSCHED_DAEMON_METRICS_H_
#define MIGSCHED_DAEMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/mig_backend.h"

namespace migsched {

// A histogram's state: bounds ascending (seconds), counts[i] = observations
// <= bounds[i] (cumulative), count and sum over every observation.
struct HistogramSnapshot {
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative;
  uint64_t count = 0;
  double sum = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  HistogramSnapshot Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Buckets (upper bounds, seconds) of the two histograms.
const std::vector<double>& ReconfigurationBuckets();
const std::vector<double>& DecisionBuckets();

// What the daemon counts as it runs.
struct DaemonCounters {
  std::atomic<int64_t> reconfigurations{0};  // GI creates + destroys done on the backend
  std::atomic<int64_t> migrations_intra{0};
  std::atomic<int64_t> migrations_inter{0};
  Histogram reconfig_seconds{ReconfigurationBuckets()};
  Histogram decision_seconds{DecisionBuckets()};
  std::atomic<int64_t> internal_errors{0};  // decisions refused on an internal error (a bug)
};

// One GPU in GET /v1/gpus and in the metrics.
struct InstanceView {
  std::string profile;
  int start = 0;         // placement units
  int size = 0;          // placement units
  std::string mig_uuid;  // empty while it is being created
  bool busy = false;
  std::string holder;     // "job", "allocation", "reservation", "placeholder"; empty when idle
  int64_t job = 0;        // a job's or allocation's id (0 otherwise)
  std::string owner;      // an allocation's or reservation's owner key
  double expires_at = 0;  // a reservation's expiry (Unix seconds)
};

struct GpuView {
  int index = -1;  // NVML index
  std::string uuid;
  std::string model;        // catalog name, e.g. "A100 40GB"
  int placement_units = 0;  // width of the slot map
  std::vector<InstanceView> instances;
  double utilisation = 0;   // busy compute slices / compute slices, [0, 1]
  double frag_cost = 0;     // FragCost (§2) of the GPU's current state
  bool lazy = false;        // util < threshold (§3)
  bool draining = false;    // no new placements; empty when its jobs end
  std::string unreachable;  // why the backend cannot reach it ("" when it can)
  std::optional<PcieThroughput> pcie;
};

// Everything GET /metrics shows, taken at one time.
struct DaemonMetrics {
  std::map<std::string, int64_t> jobs_by_state;  // every JobStateName, 0 included
  int64_t queue_length = 0;
  bool paused = false;
  bool store_degraded = false;
  int64_t reservations = 0;
  int64_t reconfigurations = 0;
  HistogramSnapshot reconfig_seconds;
  int64_t migrations_intra = 0;
  int64_t migrations_inter = 0;
  HistogramSnapshot decision_seconds;
  int64_t internal_errors = 0;
  std::vector<GpuView> gpus;  // utilisation, FragCost, PCIe per GPU
};

std::string RenderPrometheus(const DaemonMetrics& m);

// PCIe KB/s as NVML reports it → bytes per second (1 KB = 1024 bytes).
inline double PcieBytesPerSecond(int64_t kbps) { return static_cast<double>(kbps) * 1024.0; }

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_METRICS_H_
