// Job time limits in Slurm's notation (sbatch --time, squeue's TIME column),
// for `migsched submit --time-limit` and `migsched jobs`, and for the reason
// of a job stopped at its limit.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_DAEMON_TIME_LIMIT_H_
#define MIGSCHED_DAEMON_TIME_LIMIT_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// Parses a duration as sbatch --time does: "MM", "MM:SS", "HH:MM:SS",
// "D-HH", "D-HH:MM", "D-HH:MM:SS" (each field a non-negative integer; the
// first field may exceed its usual range, the others may not: minutes and
// seconds < 60, hours < 24 after a day). Returns seconds, > 0.
// Errors: kInvalidArgument naming the text and the accepted forms (also for
// a zero duration: "no limit" is leaving the option out).
StatusOr<double> ParseSlurmTime(std::string_view text);

// Formats seconds (>= 0, the fraction dropped) as squeue shows TIME:
// "M:SS" under an hour, "H:MM:SS" under a day, else "D-HH:MM:SS";
// "UNLIMITED" from 2^63 s on (a limit too large to count: the daemon takes
// any finite time_limit_s).
std::string FormatSlurmTime(double seconds);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_TIME_LIMIT_H_
