// largest-free-run (§11 baseline): every candidate (GPU, start) of the
// request is scored by the largest run of contiguous free placement units it
// leaves on its GPU (busy instances occupy units; idle ones count as free,
// they can be destroyed), against the run the GPU had before: the candidate
// that shortens its GPU's largest free run the least wins; ties to the fuller
// GPU (higher util, bin packing), then the lower GPU index, then the lower
// start. On one GPU this is the placement that leaves the largest free run.
// Destroys instances when jobs end. Our reading of HAMi's dynamic MIG
// placement (docs/policies.md says what we read and where).
#include <algorithm>
#include <vector>

#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {

int LargestFreeRun(uint64_t busy_units, int placement_units) {
  int best = 0, run = 0;
  for (int u = 0; u < placement_units; ++u) {
    run = (busy_units >> u & 1) != 0 ? 0 : run + 1;
    best = std::max(best, run);
  }
  return best;
}

namespace {

class LargestFreeRunPolicy : public PlacementPolicy {
 public:
  explicit LargestFreeRunPolicy(const SchedulerOptions& options)
      : reserve_full_(options.reserve_full) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "largest-free-run"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    CollectCandidates(cluster, req, {.reserve_full = reserve_full_}, &candidates_);
    std::optional<Candidate> best;
    int best_loss = 0;
    for (const Candidate& c : candidates_) {  // ascending GPU, then start
      const GpuState& g = cluster.gpu(c.gpu);
      const ConfigTable& t = g.table();
      const int units = g.model().placement_units();
      const int loss = LargestFreeRun(t.unit_mask(g.busy_config()), units) -
                       LargestFreeRun(t.unit_mask(c.busy_after), units);
      if (!best || loss < best_loss ||
          (loss == best_loss && c.gpu != best->gpu && Fuller(g, cluster.gpu(best->gpu)))) {
        best = c;
        best_loss = loss;
      }
    }
    return best;
  }

 private:
  // util(a) > util(b), compared exactly.
  static bool Fuller(const GpuState& a, const GpuState& b) {
    return a.busy_compute_slices() * b.model().compute_slices() >
           b.busy_compute_slices() * a.model().compute_slices();
  }

  int reserve_full_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewLargestFreeRunPolicy(const SchedulerOptions& options) {
  return std::make_unique<LargestFreeRunPolicy>(options);
}

}  // namespace migsched
