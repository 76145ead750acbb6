// A small deterministic random number generator for workload generation.
//
// Every generator in migsched that draws random numbers (paper-mix, Poisson
// arrivals, §10 of docs/algorithms.md: "every generator takes a seed and is
// deterministic") uses this class, never std::*_distribution, whose output is
// not specified by the C++ standard and differs between standard libraries.
//
// Algorithm: xoshiro256** 1.0 (Blackman & Vigna, "Scrambled linear pseudorandom
// number generators", 2018; reference code xoshiro256starstar.c), its 256-bit
// state filled from the 64-bit seed by SplitMix64 (Steele, Lea & Flood 2014;
// reference code splitmix64.c), as the xoshiro authors recommend.
//
// Reproducibility contract: for a given seed, Next(), Uniform01(),
// UniformInt() and Choice() return bit-identical sequences on every platform
// and compiler (integer arithmetic and exactly rounded double operations
// only). Exponential() and StandardNormal() additionally call std::log (and
// std::sqrt, exact), which glibc rounds correctly; other C libraries may
// differ in the last bit.
//
// Thread-safety: an Rng is a plain value; use one per thread.
#ifndef MIGSCHED_CORE_RNG_H_
#define MIGSCHED_CORE_RNG_H_

#include <cstdint>
#include <vector>

namespace migsched {

// SplitMix64: a 64-bit counter-based generator. Used to seed Rng and to
// derive independent sub-seeds. Next() advances the state by the golden-ratio
// increment 0x9E3779B97F4A7C15 and returns the mixed value.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();

 private:
  uint64_t state_;
};

class Rng {
 public:
  // Seeds the xoshiro256** state with four SplitMix64(seed) outputs (never all
  // zero, so every seed is valid, including 0).
  explicit Rng(uint64_t seed);

  // The next raw 64-bit output of xoshiro256**.
  uint64_t Next();

  // A double uniform in [0, 1): the top 53 bits of Next() times 2^-53.
  double Uniform01();

  // An integer uniform in [lo, hi] (both inclusive), without modulo bias
  // (rejection of the incomplete top block of the 2^64 range).
  // Returns lo when hi <= lo.
  int64_t UniformInt(int64_t lo, int64_t hi);

  // An exponential variate with the given mean (> 0) by inverse CDF:
  // -mean * log(1 - Uniform01()). One draw of Next(). Returns 0 when mean <= 0
  // or is not finite.
  double Exponential(double mean);

  // A standard normal variate by inverse CDF: StandardNormalQuantile of one
  // Uniform01() draw moved into (0, 1) (u + 2^-54, so never 0 or 1). Exactly one
  // draw of Next(), so a stream of them stays aligned with any other use of
  // one Uniform01() per item (e.g. quantile coupling of two distributions).
  double StandardNormal();

  // The standard normal quantile Phi^-1(p) for p in (0, 1): Wichura's
  // algorithm AS 241 (PPND16, Applied Statistics 37(3), 1988), accurate to
  // about 1e-16 relative. Returns -inf / +inf for p <= 0 / p >= 1 and NaN for
  // NaN. Pure function.
  static double StandardNormalQuantile(double p);

  // An index i with probability weights[i] / sum(weights), by one Uniform01()
  // draw scaled by the sum and a scan of the running sums. Weights must be
  // finite and >= 0 with a positive sum; otherwise returns -1 (and draws
  // nothing). Indices with weight 0 are never returned.
  int Choice(const std::vector<double>& weights);

  // A seed for an independent stream `stream` derived from `seed` (the
  // SplitMix64 output of seed + stream * golden ratio), so that e.g. a
  // generator's job draws and its arrival draws do not share a sequence.
  static uint64_t DeriveSeed(uint64_t seed, uint64_t stream);

 private:
  uint64_t s_[4];
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_RNG_H_
