// A deliberately naive reference for §1 and §2 of docs/algorithms.md, written
// from the text without the ConfigTable machinery: validity by checking every
// pair of instances, feasible_m by trying every subset of m's placements,
// ideal_m by trying every arrangement (every choice of starts) of the
// multiset of busy instances. Exponential; for tests only.
#ifndef MIGSCHED_TESTS_TESTING_BRUTE_FORCE_H_
#define MIGSCHED_TESTS_TESTING_BRUTE_FORCE_H_

#include <map>
#include <vector>

#include "core/gpu_model.h"

namespace migsched::testing {

struct BruteInstance {
  int base;   // base profile index on the model
  int start;  // placement units
  int size;   // placement units
  int cs;     // compute slices
};

// §1: placements valid (assumed), no shared unit, compute within the model,
// at most max_instances per profile.
bool BruteValid(const GpuModel& m, const std::vector<BruteInstance>& set);

// feasible_m for base profile `base` given the busy instances.
int BruteFeasible(const GpuModel& m, const std::vector<BruteInstance>& busy, int base);

class BruteFragCost {
 public:
  explicit BruteFragCost(const GpuModel& m) : m_(m) {}
  // FragCost (§2) of the busy instances; ideal_m memoised per multiset.
  double FragCost(const std::vector<BruteInstance>& busy);
  // ideal_m for every base profile, in GpuModel::base_profiles() order.
  const std::vector<int>& Ideal(const std::vector<BruteInstance>& busy);

 private:
  const GpuModel& m_;
  std::map<std::vector<int>, std::vector<int>> memo_;
};

// Converts (profile, start) pairs (variants allowed) to BruteInstances.
BruteInstance MakeBruteInstance(const GpuModel& m, int profile, int start);

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_TESTING_BRUTE_FORCE_H_
