// The daemon's metrics: cumulative counters and histograms (Prometheus
// needs counts that only grow: a histogram is counted since the daemon
// started, never rebuilt from recent samples), and their text exposition
// (format 0.0.4) for GET /metrics, checked with `promtool check metrics`
// in the tests.
//
// Families (docs/api.md "Metrics"):
//   migsched_jobs{state=...} (gauge, every state), migsched_queue_length,
//   migsched_queue_oldest_wait_seconds, migsched_queue_limit_power and
//   migsched_queue_limit_power_runs (spec 5: the power limits are weighed with among equal
//   requests, and the ended runs it was learned from), migsched_scheduler_paused,
//   migsched_store_degraded (1 while the job store cannot be written),
//   migsched_reservations (gauge), migsched_control_loop_last_tick_timestamp_seconds,
//   migsched_jobs_ended_total{kind=...,outcome=...} (counter),
//   migsched_reconfigurations_total (counter), migsched_reconfiguration_seconds
//   (histogram), migsched_migrations_total{kind="intra"|"inter"} (counter),
//   migsched_decision_seconds (histogram), migsched_internal_errors_total (counter:
//   scheduler decisions refused on an internal error); per GPU, labelled as DCGM exporter
//   labels its series (gpu, UUID, Hostname; its modelName as model_name):
//   migsched_gpu_utilisation, migsched_gpu_fragcost, migsched_gpu_draining,
//   migsched_gpu_needs_reset (1 while the driver says the GPU needs a reset before MIG works),
//   migsched_gpu_refusing_changes (1 while its MIG creates/destroys keep failing),
//   migsched_gpu_pcie_tx_bytes_per_second and _rx_ (only GPUs whose backend
//   measures PCIe); per GPU and MIG profile (+ GPU_I_PROFILE):
//   migsched_mig_instances{state="idle"|"busy"|"reserved"|"destroying"},
//   migsched_mig_free_instances; per MIG instance (+ GPU_I_PROFILE, GPU_I_ID):
//   migsched_mig_instance_busy, migsched_mig_instance_busy_seconds_total.
//
// Thread-safety: Histogram, DaemonCounters and BusyTime are thread-safe
// (atomics and one small mutex each); the snapshot structs are values.
#ifndef MIGSCHED_DAEMON_METRICS_H_
#define MIGSCHED_DAEMON_METRICS_H_

#include <atomic>
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mig_backend.h"
#include "nodeapi/api_types.h"

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

// Ended jobs and allocations, by (kind, outcome): "job"/"allocation" and a
// terminal state's name ("succeeded", "timeout", ...).
class OutcomeCounts {
 public:
  void Count(const std::string& kind, const std::string& outcome);
  std::map<std::pair<std::string, std::string>, int64_t> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> counts_;
};

// One MIG instance as the busy-time counter knows it.
struct InstanceKey {
  NvmlIndex gpu;
  unsigned int gi_id = 0;
  std::string profile;
  auto operator<=>(const InstanceKey&) const = default;
};

// Seconds each MIG instance has been busy since the daemon started or the
// instance was created (a new instance is a new series). Sampled by the
// control loop: Sample(now, busy) credits every instance that was busy at the
// previous sample with the time since (at most kMaxStepS, so that a stalled
// loop does not credit a long gap); instances no longer present are forgotten.
class BusyTime {
 public:
  static constexpr double kMaxStepS = 60;
  // `present`: every instance now and whether it is busy.
  void Sample(double now_s, const std::map<InstanceKey, bool>& present);
  double Seconds(const InstanceKey& key) const;  // 0 for an unknown instance

 private:
  struct Entry {
    double seconds = 0;
    bool busy = false;  // at the previous sample
  };
  mutable std::mutex mu_;
  double last_s_ = -1;
  std::map<InstanceKey, Entry> entries_;
};

// What the daemon counts as it runs.
struct DaemonCounters {
  std::atomic<int64_t> reconfigurations{0};  // GI creates + destroys done on the backend
  std::atomic<int64_t> migrations_intra{0};
  std::atomic<int64_t> migrations_inter{0};
  Histogram reconfig_seconds{ReconfigurationBuckets()};
  Histogram decision_seconds{DecisionBuckets()};
  std::atomic<int64_t> internal_errors{0};  // decisions refused on an internal error (a bug)
  OutcomeCounts ended;                      // every job and allocation that became terminal
  BusyTime busy_time;                       // per MIG instance
  std::atomic<double> last_tick_unix{0};    // Unix seconds of the control loop's last tick
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
  std::vector<GpuView> gpus;  // utilisation, FragCost, PCIe, instances per GPU
  std::string hostname;       // the Hostname label: node_name or the host's name
  double oldest_wait_s = 0;   // the longest wait of a queued job so far (0: none queued)
  // §5 limits weighed by what they predict: Scheduler::LimitPower() (1: the ratio's own order)
  // and the runs in the LimitModel's window.
  double limit_power = 1;
  int64_t limit_power_runs = 0;
  double last_tick_unix = 0;  // Unix seconds of the control loop's last tick
  std::map<std::pair<std::string, std::string>, int64_t> ended;  // (kind, outcome) → count
  std::map<InstanceKey, double> busy_seconds;                    // per present instance
};

// Escapes a label value for the text exposition (backslash, quote, newline).
std::string EscapeLabelValue(std::string_view v);

std::string RenderPrometheus(const DaemonMetrics& m);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_METRICS_H_
