// Cluster: an ordered set of GPUs (index 0..n-1), each a model and a GpuState.
//
// Cluster specs are written "4xA100-40GB,8xH100-80GB" (a count, 'x', any name
// the catalog knows); GPUs are numbered in the order written.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_CORE_CLUSTER_H_
#define MIGSCHED_CORE_CLUSTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/status.h"

namespace migsched {

// Parses "4xA100-40GB,8xH100-80GB" into one model pointer per GPU.
// Errors (kInvalidArgument / kNotFound) quote the offending part.
StatusOr<std::vector<const GpuModel*>> ParseClusterSpec(std::string_view spec, const Catalog& catalog);

class Cluster {
 public:
  // `tables` must outlive the cluster; models must outlive it too.
  Cluster(const std::vector<const GpuModel*>& models, ConfigTableCache* tables);

  int size() const { return static_cast<int>(gpus_.size()); }
  const GpuState& gpu(int i) const { return gpus_[i]; }
  GpuState& mutable_gpu(int i) { return gpus_[i]; }

  // Cluster fragmentation rate: mean FragCost over all GPUs (§2).
  double FragmentationRate() const;
  // Busy compute slices over all compute slices, in [0, 1].
  double Utilization() const;
  int total_compute_slices() const { return total_compute_slices_; }
  int busy_compute_slices() const;

  // Distinct models, in order of first appearance.
  std::vector<const GpuModel*> models() const;
  // "4xA100 40GB" style summary.
  std::string Describe() const;

 private:
  std::vector<GpuState> gpus_;
  int total_compute_slices_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CLUSTER_H_
