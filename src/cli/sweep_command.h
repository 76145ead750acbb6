// `migsched sweep` (sweep_command.cc): parsing of the values of --param.
#ifndef MIGSCHED_CLI_SWEEP_COMMAND_H_
#define MIGSCHED_CLI_SWEEP_COMMAND_H_

#include <string_view>
#include <vector>

#include "core/status.h"

namespace migsched::cli {

// The values of a sweep: "FROM:TO:STEP" gives FROM, FROM+STEP, ... up to TO
// (included within 1e-9 of a step; each value rounded to 12 significant
// digits, so 0.2:0.6:0.05 gives 0.2, 0.25, ..., 0.6 exactly as written);
// "V1,V2,..." gives the values as listed; "V" one value. At most 1,000 values.
// kInvalidArgument naming the problem: not a number, STEP <= 0, TO < FROM,
// not three parts, too many values.
StatusOr<std::vector<double>> ParseSweepValues(std::string_view spec);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_SWEEP_COMMAND_H_
