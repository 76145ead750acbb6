#include "daemon/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace migsched {
namespace {

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void RenderHistogram(std::string* out, std::string_view name, std::string_view help,
                     const HistogramSnapshot& h) {
  Header(out, name, "histogram", help);
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    *out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], h.cumulative[i]);
  }
  *out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, h.count);
  *out += fmt::format("{}_sum {}\n{}_count {}\n", name, h.sum, name, h.count);
}

// The labels DCGM exporter gives a GPU's series: gpu, UUID, Hostname, and its modelName as
// model_name (Prometheus' snake_case, which promtool check metrics enforces).
std::string GpuLabels(const GpuView& g, const std::string& host) {
  return fmt::format("gpu=\"{}\",UUID=\"{}\",model_name=\"{}\",Hostname=\"{}\"", g.index,
                     EscapeLabelValue(g.uuid), EscapeLabelValue(g.model), EscapeLabelValue(host));
}

// An instance's state for migsched_mig_instances.
std::string_view InstanceState(const InstanceView& i) {
  if (!i.busy) return "idle";
  if (i.holder == HolderKind::kReservation) return "reserved";
  if (i.holder == HolderKind::kPlaceholder) return "destroying";
  return "busy";
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void OutcomeCounts::Count(const std::string& kind, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{kind, outcome}];
}

std::map<std::pair<std::string, std::string>, int64_t> OutcomeCounts::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void BusyTime::Sample(double now_s, const std::map<InstanceKey, bool>& present) {
  std::lock_guard<std::mutex> lock(mu_);
  const double step = last_s_ < 0 ? 0 : std::clamp(now_s - last_s_, 0.0, kMaxStepS);
  std::map<InstanceKey, Entry> next;
  for (const auto& [key, busy] : present) {
    Entry e;
    if (auto it = entries_.find(key); it != entries_.end()) {
      e.seconds = it->second.seconds + (it->second.busy ? step : 0);
    }
    e.busy = busy;
    next.emplace(key, e);
  }
  entries_ = std::move(next);
  last_s_ = now_s;
}

double BusyTime::Seconds(const InstanceKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.seconds;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::Observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  if (i < counts_.size()) ++counts_[i];  // le is inclusive: value <= bounds_[i]
  ++count_;
  sum_ += value;
}

HistogramSnapshot Histogram::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  HistogramSnapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = count_;
  s.sum = sum_;
  return s;
}

const std::vector<double>& ReconfigurationBuckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return b;
}

const std::vector<double>& DecisionBuckets() {
  static const std::vector<double> b = {1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3,
                                        0.01, 0.05, 0.1,  0.5,  1};
  return b;
}

std::string RenderPrometheus(const DaemonMetrics& m) {
  std::string out;
  Header(&out, "migsched_jobs", "gauge", "Jobs and allocations by state.");
  for (const auto& [state, n] : m.jobs_by_state) {
    out += fmt::format("migsched_jobs{{state=\"{}\"}} {}\n", state, n);
  }
  Header(&out, "migsched_jobs_ended_total", "counter",
         "Jobs and allocations that ended since the daemon started, by kind and outcome.");
  for (const auto& [key, n] : m.ended) {
    out += fmt::format("migsched_jobs_ended_total{{kind=\"{}\",outcome=\"{}\"}} {}\n", key.first,
                       key.second, n);
  }
  Header(&out, "migsched_queue_length", "gauge", "Jobs waiting in the queue.");
  out += fmt::format("migsched_queue_length {}\n", m.queue_length);
  Header(&out, "migsched_queue_oldest_wait_seconds", "gauge",
         "How long the longest-waiting queued job has waited so far (0 when none waits).");
  out += fmt::format("migsched_queue_oldest_wait_seconds {}\n", m.oldest_wait_s);
  Header(&out, "migsched_queue_limit_power", "gauge",
         "The power time limits are weighed with among the waiting jobs of one request (spec 5: "
         "1 = as given, 0 = arrival order; learned from the runs that ended).");
  out += fmt::format("migsched_queue_limit_power {}\n", m.limit_power);
  Header(&out, "migsched_queue_limit_power_runs", "gauge",
         "Runs with a time limit that ended, in the window the limit power is learned from.");
  out += fmt::format("migsched_queue_limit_power_runs {}\n", m.limit_power_runs);
  Header(&out, "migsched_scheduler_paused", "gauge", "1 while the queue is paused.");
  out += fmt::format("migsched_scheduler_paused {}\n", m.paused ? 1 : 0);
  Header(&out, "migsched_store_degraded", "gauge",
         "1 while the job store cannot be written (new submissions are refused).");
  out += fmt::format("migsched_store_degraded {}\n", m.store_degraded ? 1 : 0);
  Header(&out, "migsched_reservations", "gauge", "Reservations held for cluster controllers.");
  out += fmt::format("migsched_reservations {}\n", m.reservations);
  Header(&out, "migsched_control_loop_last_tick_timestamp_seconds", "gauge",
         "Unix time of the control loop's last tick.");
  out += fmt::format("migsched_control_loop_last_tick_timestamp_seconds {}\n", m.last_tick_unix);
  Header(&out, "migsched_gpu_utilisation", "gauge",
         "Busy compute slices over compute slices per GPU, 0 to 1.");
  for (const GpuView& g : m.gpus) {
    out +=
        fmt::format("migsched_gpu_utilisation{{{}}} {}\n", GpuLabels(g, m.hostname), g.utilisation);
  }
  Header(&out, "migsched_gpu_fragcost", "gauge", "FragCost of each GPU's current state (spec 2).");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_fragcost{{{}}} {}\n", GpuLabels(g, m.hostname), g.frag_cost);
  }
  Header(&out, "migsched_gpu_draining", "gauge", "1 while the GPU is drained.");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_draining{{{}}} {}\n", GpuLabels(g, m.hostname),
                       g.draining ? 1 : 0);
  }
  Header(&out, "migsched_gpu_needs_reset", "gauge",
         "1 while the driver says the GPU needs a reset before MIG works (the operator resets "
         "it; migsched never does).");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_needs_reset{{{}}} {}\n", GpuLabels(g, m.hostname),
                       g.needs_reset ? 1 : 0);
  }
  Header(&out, "migsched_gpu_refusing_changes", "gauge",
         "1 while the GPU's MIG creates and destroys keep failing (the log and /healthz say why).");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_refusing_changes{{{}}} {}\n", GpuLabels(g, m.hostname),
                       g.refusing.empty() ? 0 : 1);
  }
  Header(&out, "migsched_mig_instances", "gauge",
         "MIG instances per GPU, profile and state (idle, busy, reserved, destroying).");
  for (const GpuView& g : m.gpus) {
    std::map<std::pair<std::string, std::string_view>, int> n;
    for (const InstanceView& i : g.instances) ++n[{i.profile, InstanceState(i)}];
    for (const auto& [key, count] : n) {
      out += fmt::format("migsched_mig_instances{{{},GPU_I_PROFILE=\"{}\",state=\"{}\"}} {}\n",
                         GpuLabels(g, m.hostname), EscapeLabelValue(key.first), key.second, count);
    }
  }
  Header(&out, "migsched_mig_free_instances", "gauge",
         "More instances of each profile that fit in the GPU's free placement units now.");
  for (const GpuView& g : m.gpus) {
    for (const auto& [profile, count] : g.free_instances) {
      out += fmt::format("migsched_mig_free_instances{{{},GPU_I_PROFILE=\"{}\"}} {}\n",
                         GpuLabels(g, m.hostname), EscapeLabelValue(profile), count);
    }
  }
  Header(&out, "migsched_mig_instance_busy", "gauge",
         "1 while the MIG instance is held by a job, an allocation or a reservation.");
  for (const GpuView& g : m.gpus) {
    for (const InstanceView& i : g.instances) {
      if (i.gi_id == 0 && i.mig_uuid.empty()) continue;  // being created: no id yet
      out += fmt::format(
          "migsched_mig_instance_busy{{{},GPU_I_PROFILE=\"{}\",GPU_I_ID=\"{}\"}} {}\n",
          GpuLabels(g, m.hostname), EscapeLabelValue(i.profile), i.gi_id, i.busy ? 1 : 0);
    }
  }
  Header(&out, "migsched_mig_instance_busy_seconds_total", "counter",
         "Seconds the MIG instance has been busy since it was created or the daemon started.");
  for (const GpuView& g : m.gpus) {
    for (const InstanceView& i : g.instances) {
      if (i.gi_id == 0 && i.mig_uuid.empty()) continue;
      auto it = m.busy_seconds.find(InstanceKey{g.index, i.gi_id, i.profile});
      out += fmt::format(
          "migsched_mig_instance_busy_seconds_total{{{},GPU_I_PROFILE=\"{}\",GPU_I_ID=\"{}\"}} "
          "{}\n",
          GpuLabels(g, m.hostname), EscapeLabelValue(i.profile), i.gi_id,
          it == m.busy_seconds.end() ? 0.0 : it->second);
    }
  }
  Header(&out, "migsched_reconfigurations_total", "counter",
         "MIG GPU-instance creates and destroys done on the backend.");
  out += fmt::format("migsched_reconfigurations_total {}\n", m.reconfigurations);
  RenderHistogram(&out, "migsched_reconfiguration_seconds",
                  "Latency of MIG creates and destroys since the daemon started.",
                  m.reconfig_seconds);
  Header(&out, "migsched_migrations_total", "counter", "Job migrations by kind (spec 6).");
  out += fmt::format("migsched_migrations_total{{kind=\"intra\"}} {}\n", m.migrations_intra);
  out += fmt::format("migsched_migrations_total{{kind=\"inter\"}} {}\n", m.migrations_inter);
  RenderHistogram(&out, "migsched_decision_seconds",
                  "Scheduler decision latency since the daemon started.", m.decision_seconds);
  Header(&out, "migsched_internal_errors_total", "counter",
         "Scheduler decisions refused because the core reported an internal error (a bug: the "
         "log names the job and the GPUs' state).");
  out += fmt::format("migsched_internal_errors_total {}\n", m.internal_errors);
  for (const char* dir : {"tx", "rx"}) {
    const std::string name = fmt::format("migsched_gpu_pcie_{}_bytes_per_second", dir);
    Header(&out, name, "gauge",
           fmt::format("PCIe {} throughput per GPU (NVML, 20 ms window).",
                       std::string_view(dir) == "tx" ? "transmit" : "receive"));
    for (const GpuView& g : m.gpus) {
      if (!g.pcie) continue;
      const int64_t kbps = std::string_view(dir) == "tx" ? g.pcie->tx_kbps : g.pcie->rx_kbps;
      out += fmt::format("{}{{{}}} {}\n", name, GpuLabels(g, m.hostname), PcieBytesPerSecond(kbps));
    }
  }
  return out;
}

}  // namespace migsched
