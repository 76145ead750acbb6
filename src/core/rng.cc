#include "core/rng.h"

#include <cmath>
#include <limits>

namespace migsched {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += kGolden);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  SplitMix64 sm(seed);
  for (uint64_t& s : s_) s = sm.Next();
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform01() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

int64_t Rng::UniformInt(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  // Width of the range minus one, computed in unsigned arithmetic (no overflow).
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == std::numeric_limits<uint64_t>::max()) return static_cast<int64_t>(Next());
  const uint64_t range = span + 1;
  // Accept x only below the largest multiple of `range` that fits in 2^64.
  const uint64_t accept_max = std::numeric_limits<uint64_t>::max() -
                              (std::numeric_limits<uint64_t>::max() % range + 1) % range;
  uint64_t x;
  do {
    x = Next();
  } while (x > accept_max);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % range);
}

double Rng::Exponential(double mean) {
  if (!(mean > 0) || !std::isfinite(mean)) return 0;
  // 1 - u is in (0, 1], so the log is finite.
  return -mean * std::log(1.0 - Uniform01());
}

int Rng::Choice(const std::vector<double>& weights) {
  double total = 0;
  int last_positive = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!std::isfinite(w) || w < 0) return -1;
    if (w > 0) last_positive = static_cast<int>(i);
    total += w;
  }
  if (!(total > 0) || !std::isfinite(total)) return -1;
  const double r = Uniform01() * total;
  double cumulative = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0) continue;
    cumulative += weights[i];
    if (r < cumulative) return static_cast<int>(i);
  }
  // Rounding can leave r == total; the draw then belongs to the last bucket.
  return last_positive;
}

uint64_t Rng::DeriveSeed(uint64_t seed, uint64_t stream) {
  return SplitMix64(seed + stream * kGolden).Next();
}

}  // namespace migsched
