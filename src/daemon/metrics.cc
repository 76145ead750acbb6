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

}  // namespace

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
  Header(&out, "migsched_queue_length", "gauge", "Jobs waiting in the queue.");
  out += fmt::format("migsched_queue_length {}\n", m.queue_length);
  Header(&out, "migsched_scheduler_paused", "gauge", "1 while the queue is paused.");
  out += fmt::format("migsched_scheduler_paused {}\n", m.paused ? 1 : 0);
  Header(&out, "migsched_store_degraded", "gauge",
         "1 while the job store cannot be written (new submissions are refused).");
  out += fmt::format("migsched_store_degraded {}\n", m.store_degraded ? 1 : 0);
  Header(&out, "migsched_reservations", "gauge", "Reservations held for cluster controllers.");
  out += fmt::format("migsched_reservations {}\n", m.reservations);
  Header(&out, "migsched_gpu_utilisation", "gauge",
         "Busy compute slices over compute slices per GPU, 0 to 1.");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_utilisation{{gpu=\"{}\"}} {}\n", g.index, g.utilisation);
  }
  Header(&out, "migsched_gpu_fragcost", "gauge", "FragCost of each GPU's current state (spec 2).");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_fragcost{{gpu=\"{}\"}} {}\n", g.index, g.frag_cost);
  }
  Header(&out, "migsched_gpu_draining", "gauge", "1 while the GPU is drained.");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_draining{{gpu=\"{}\"}} {}\n", g.index, g.draining ? 1 : 0);
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
      out += fmt::format("{}{{gpu=\"{}\"}} {}\n", name, g.index, PcieBytesPerSecond(kbps));
    }
  }
  return out;
}

}  // namespace migsched
