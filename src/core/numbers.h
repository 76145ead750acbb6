#pragma once

// Numeric constants and checks that the core, the scheduler and the simulator share, so that each
// has one definition (and a unity build, which compiles several sources as one, sees one).
// Pure; thread-safe.

#include <cmath>
#include <limits>

namespace migsched {

// +infinity: "never" for an expected time, "no bound" for a best-so-far search.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A quiet NaN: "no value" in metrics and summaries (written as JSON null).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Tolerance when comparing scores that are sums of doubles (FragCost changes, placement and
// move scores): differences at or below it count as ties.
inline constexpr double kEps = 1e-9;

// Whether v is a finite fraction in [0, 1] (a generator's share or probability option).
inline bool InUnit(double v) { return std::isfinite(v) && v >= 0 && v <= 1; }

}  // namespace migsched
