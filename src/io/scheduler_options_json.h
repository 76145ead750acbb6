// The scheduler options as JSON (GET /v1/node's `scheduler.options`, docs/api.md), one key per
// entry of the table of scheduler options (sched/option_table.h) in snake_case: "threshold",
// "max_skip_seconds", "evacuation", ... Numbers as numbers (a negative "off" value as null),
// integers as integers, on/off options as booleans, the others as strings.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_IO_SCHEDULER_OPTIONS_JSON_H_
#define MIGSCHED_IO_SCHEDULER_OPTIONS_JSON_H_

#include <nlohmann/json.hpp>

#include "sched/options.h"

namespace migsched {

nlohmann::ordered_json SchedulerOptionsToJson(const SchedulerOptions& o);

// The options of `j` (a SchedulerOptionsToJson object); a key that is missing, of another type
// or out of range keeps SchedulerOptions' default (a client reading another version's daemon).
SchedulerOptions SchedulerOptionsFromJson(const nlohmann::json& j);

}  // namespace migsched

#endif  // MIGSCHED_IO_SCHEDULER_OPTIONS_JSON_H_
