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

double Rng::StandardNormal() { return StandardNormalQuantile(Uniform01() + 0x1.0p-54); }

namespace {

// Wichura's AS 241 (PPND16) coefficients as published, lowest degree first; each denominator's
// constant term is 1. The paper's mantissa hash sums (A and B, C and D, E and F) are
// 55.8831928806149014439, 49.33206503301610289036 and 47.52583317549289671629.
constexpr double kA[8] = {3.3871328727963666080e0,  1.3314166789178437745e+2,
                          1.9715909503065514427e+3, 1.3731693765509461125e+4,
                          4.5921953931549871457e+4, 6.7265770927008700853e+4,
                          3.3430575583588128105e+4, 2.5090809287301226727e+3};
constexpr double kB[8] = {1.0,
                          4.2313330701600911252e+1,
                          6.8718700749205790830e+2,
                          5.3941960214247511077e+3,
                          2.1213794301586595867e+4,
                          3.9307895800092710610e+4,
                          2.8729085735721942674e+4,
                          5.2264952788528545610e+3};
constexpr double kC[8] = {1.42343711074968357734e0,  4.63033784615654529590e0,
                          5.76949722146069140550e0,  3.64784832476320460504e0,
                          1.27045825245236838258e0,  2.41780725177450611770e-1,
                          2.27238449892691845833e-2, 7.74545014278341407640e-4};
constexpr double kD[8] = {1.0,
                          2.05319162663775882187e0,
                          1.67638483018380384940e0,
                          6.89767334985100004550e-1,
                          1.48103976427480074590e-1,
                          1.51986665636164571966e-2,
                          5.47593808499534494600e-4,
                          1.05075007164441684324e-9};
constexpr double kE[8] = {6.65790464350110377720e0,  5.46378491116411436990e0,
                          1.78482653991729133580e0,  2.96560571828504891230e-1,
                          2.65321895265761230930e-2, 1.24266094738807843860e-3,
                          2.71155556874348757815e-5, 2.01033439929228813265e-7};
constexpr double kF[8] = {1.0,
                          5.99832206555887937690e-1,
                          1.36929880922735805310e-1,
                          1.48753612908506148525e-2,
                          7.86869131145613259100e-4,
                          1.84631831751005468180e-5,
                          1.42151175831644588870e-7,
                          2.04426310338993978564e-15};

// c[0] + c[1] r + ... + c[7] r^7 by Horner's rule (the evaluation order of the paper).
double Poly7(const double (&c)[8], double r) {
  double v = c[7];
  for (int i = 6; i >= 0; --i) v = v * r + c[i];
  return v;
}

}  // namespace

double Rng::StandardNormalQuantile(double p) {
  if (std::isnan(p)) return p;
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  // Three rational approximations by the distance of p from 0.5.
  const double q = p - 0.5;
  if (std::fabs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q * Poly7(kA, r) / Poly7(kB, r);
  }
  double r = std::sqrt(-std::log(q < 0 ? p : 1.0 - p));
  double z;
  if (r <= 5.0) {
    r -= 1.6;
    z = Poly7(kC, r) / Poly7(kD, r);
  } else {
    r -= 5.0;
    z = Poly7(kE, r) / Poly7(kF, r);
  }
  return q < 0 ? -z : z;
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
