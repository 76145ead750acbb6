#include "testing/brute_force.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace migsched::testing {

bool BruteValid(const GpuModel& m, const std::vector<BruteInstance>& set) {
  int cs = 0;
  std::map<int, int> count;
  for (size_t i = 0; i < set.size(); ++i) {
    cs += set[i].cs;
    if (++count[set[i].base] > m.profile(set[i].base).max_instances) return false;
    for (size_t j = i + 1; j < set.size(); ++j) {
      const bool disjoint =
          set[i].start + set[i].size <= set[j].start || set[j].start + set[j].size <= set[i].start;
      if (!disjoint) return false;
    }
  }
  return cs <= m.compute_slices();
}

int BruteFeasible(const GpuModel& m, const std::vector<BruteInstance>& busy, int base) {
  const Profile& p = m.profile(base);
  const int n = static_cast<int>(p.placements.size());
  int best = 0;
  for (int subset = 0; subset < (1 << n); ++subset) {
    std::vector<BruteInstance> set = busy;
    for (int i = 0; i < n; ++i) {
      if (subset & (1 << i)) {
        set.push_back({base, p.placements[i].start, p.placements[i].size, p.compute_slices});
      }
    }
    if (BruteValid(m, set)) best = std::max(best, std::popcount(static_cast<unsigned>(subset)));
  }
  return best;
}

namespace {

void Arrangements(const GpuModel& m, const std::vector<int>& bases, size_t i,
                  std::vector<BruteInstance>& cur,
                  const std::function<void(const std::vector<BruteInstance>&)>& fn) {
  if (i == bases.size()) {
    fn(cur);
    return;
  }
  const Profile& p = m.profile(bases[i]);
  for (const Placement& pl : p.placements) {
    // Identical profiles take ascending starts (arrangements, not orderings).
    if (i > 0 && bases[i - 1] == bases[i] && pl.start <= cur.back().start) continue;
    cur.push_back({bases[i], pl.start, pl.size, p.compute_slices});
    if (BruteValid(m, cur)) Arrangements(m, bases, i + 1, cur, fn);
    cur.pop_back();
  }
}

}  // namespace

const std::vector<int>& BruteFragCost::Ideal(const std::vector<BruteInstance>& busy) {
  std::vector<int> bases;
  for (const BruteInstance& b : busy) bases.push_back(b.base);
  std::sort(bases.begin(), bases.end());
  auto it = memo_.find(bases);
  if (it != memo_.end()) return it->second;
  std::vector<int> ideal(m_.base_profiles().size(), 0);
  std::vector<BruteInstance> cur;
  Arrangements(m_, bases, 0, cur, [&](const std::vector<BruteInstance>& arr) {
    for (size_t t = 0; t < ideal.size(); ++t) {
      ideal[t] = std::max(ideal[t], BruteFeasible(m_, arr, m_.base_profiles()[t]));
    }
  });
  return memo_.emplace(bases, ideal).first->second;
}

double BruteFragCost::FragCost(const std::vector<BruteInstance>& busy) {
  const std::vector<int> ideal = Ideal(busy);
  double sum = 0;
  int mprime = 0;
  for (size_t t = 0; t < ideal.size(); ++t) {
    if (ideal[t] == 0) continue;
    ++mprime;
    sum += static_cast<double>(BruteFeasible(m_, busy, m_.base_profiles()[t])) / ideal[t];
  }
  return mprime == 0 ? 0.0 : 1.0 - sum / mprime;
}

BruteInstance MakeBruteInstance(const GpuModel& m, int profile, int start) {
  const Profile& p = m.profile(profile);
  return {m.BaseOf(profile), start, p.size(), p.compute_slices};
}

}  // namespace migsched::testing
