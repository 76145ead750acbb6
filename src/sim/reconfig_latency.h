// Reconfiguration latency of the simulator: how long one MIG create or destroy takes (§4 step 5
// of docs/algorithms.md), as a distribution instead of one fixed figure (`--reconfig-latency`;
// `--reconfig-ms MS` is `fixed:MS` for both).
//
// A distribution is written as a SPEC:
//   fixed:MS                 every operation takes MS milliseconds (0 to kMaxLatencyMs);
//   lognormal:MEDIAN,SIGMA   exp(N(ln MEDIAN, SIGMA^2)) milliseconds: 0 < MEDIAN <= kMaxLatencyMs,
//   0 <= SIGMA
//                            <= kMaxLognormalSigma (a larger spread draws infinite times)
//                            (the standard deviation of the log; 0 is fixed:MEDIAN drawn);
//   empirical:FILE           a measured sample, each draw one of its values (ms, 0 to
//   kMaxLatencyMs)
//                            with equal probability; FILE is a JSON list of numbers or one
//                            number per line (blank lines and lines starting with '#' skipped;
//                            a UTF-8 byte-order mark at its start is skipped, core/text.h);
//   field                    the preset of docs/mig-hardware.md §9 (FieldCreateLatency and
//                            FieldDestroyLatency below).
// `--reconfig-latency` takes SPEC (creates and destroys), or create=SPEC / destroy=SPEC for one
// kind (ParseReconfigLatency).
//
// Draws (ReconfigLatencySampler): every random draw uses exactly one Uniform01() of the run's
// own stream (core/rng.h, seeded from the run's seed: deterministic per seed and replica, and
// independent of the workload's draws), by inverse CDF: lognormal through
// Rng::StandardNormalQuantile, empirical as the sorted sample's floor(u * n)-th value. A fixed
// distribution draws nothing. So when both kinds draw, the k-th operation of a run gets the k-th
// uniform whatever its kind, and two policies run with one seed see the same sequence of uniforms
// (common random numbers by operation index).
//
// Thread-safety: ReconfigLatency is an immutable value once built (share it between runs); a
// sampler belongs to one run.
#ifndef MIGSCHED_SIM_RECONFIG_LATENCY_H_
#define MIGSCHED_SIM_RECONFIG_LATENCY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/status.h"

namespace migsched {

// The longest fixed time, lognormal median or measurement taken, ms (an hour): measured MIG
// operations take 23 ms to seconds (docs/mig-hardware.md §9); values near the largest double
// would make every time of a run infinite.
inline constexpr double kMaxLatencyMs = 3600000;

// The largest lognormal sigma taken: e^10 = 22026 times the median per standard deviation. Beyond
// about 30, draws and the mean (median x e^(sigma^2 / 2)) overflow to infinity.
inline constexpr double kMaxLognormalSigma = 10;

struct LatencyDistribution {
  enum class Kind { kFixed, kLognormal, kEmpirical };
  Kind kind = Kind::kFixed;
  double fixed_ms = 23;            // kFixed
  double median_ms = 0;            // kLognormal: > 0
  double sigma = 0;                // kLognormal: in [0, kMaxLognormalSigma]
  std::vector<double> samples_ms;  // kEmpirical: sorted ascending, non-empty
  std::string file;                // kEmpirical: where the sample came from (for ToString)

  static LatencyDistribution Fixed(double ms);
  static LatencyDistribution Lognormal(double median_ms, double sigma);

  // kInvalidArgument naming the bad parameter.
  Status Validate() const;
  // One draw, milliseconds, from one Uniform01() of `rng` (none for kFixed).
  double DrawMs(Rng& rng) const;
  // The expected value, ms (lognormal: median × exp(sigma² / 2); empirical: the sample mean).
  double MeanMs() const;
  // The SPEC that reads back as this distribution: "fixed:23", "lognormal:250,1",
  // "empirical:FILE".
  std::string ToString() const;
  bool operator==(const LatencyDistribution& o) const;
};

// The `field` preset (docs/mig-hardware.md §9): heavy-tailed, for a node under load, not fitted
// to a measurement. Creates: median 250 ms, sigma 1 (5% below 48 ms, near the 23 ms of an idle
// A100 PCIe create; 1% above 2.6 s). Destroys: median 1 s, sigma 0.7 (1% above 5.1 s, one in
// 10^4 above 13.5 s: the DRA driver's 10 s NVML lock timeout under stress).
LatencyDistribution FieldCreateLatency();
LatencyDistribution FieldDestroyLatency();

// One SPEC (see the file comment), without a create=/destroy= prefix; `field` is not a
// single distribution (ParseReconfigLatency resolves it). An empirical FILE is read here.
// kInvalidArgument "<what SPEC must be>, got 'SPEC'" (an empirical file's errors:
// "empirical: FILE:LINE: <reason>"); kNotFound when the file cannot be opened. The messages
// name no flag: callers prefix their own (`--reconfig-latency: ...`).
StatusOr<LatencyDistribution> ParseLatencySpec(std::string_view spec);

struct ReconfigLatency {
  LatencyDistribution create = LatencyDistribution::Fixed(23);
  LatencyDistribution destroy = LatencyDistribution::Fixed(23);

  // Both fixed at the same value: the run is the one of `--reconfig-ms` that value.
  bool IsFixedUniform() const {
    return create.kind == LatencyDistribution::Kind::kFixed && create == destroy;
  }
  Status Validate() const;  // both distributions; errors say which
  // "create lognormal:250,1, destroy lognormal:1000,0.7" or "fixed:23" when both are equal.
  std::string ToString() const;
  // The values of --reconfig-latency that give back this (ParseReconfigLatency): one SPEC when
  // both are equal, else create=SPEC and destroy=SPEC.
  std::vector<std::string> ToSpecs() const;
};

// The values of `--reconfig-latency` (given once or more): each is SPEC (creates and destroys),
// `create=SPEC` or `destroy=SPEC`, SPEC being one of ParseLatencySpec's or `field` (the preset's
// create and destroy distributions for a bare `field`, its create or destroy one after a prefix).
// A prefixed value overrides a bare one for its kind whatever their order; one kind set twice
// by the same form is an error. `values` empty: kInvalidArgument.
StatusOr<ReconfigLatency> ParseReconfigLatency(const std::vector<std::string>& values);

// The draws of one run: the operations' latencies in seconds.
class ReconfigLatencySampler {
 public:
  // The stream is Rng::DeriveSeed(seed, kStream): the run's seed (SimOptions::reconfig_seed).
  static constexpr uint64_t kStream = 0x7265636f6e666731;  // "reconfg1"
  ReconfigLatencySampler(const ReconfigLatency& latency, uint64_t seed)
      : latency_(latency), rng_(Rng::DeriveSeed(seed, kStream)) {}
  double CreateSeconds() { return latency_.create.DrawMs(rng_) / 1000.0; }
  double DestroySeconds() { return latency_.destroy.DrawMs(rng_) / 1000.0; }

 private:
  const ReconfigLatency& latency_;
  Rng rng_;
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_RECONFIG_LATENCY_H_
