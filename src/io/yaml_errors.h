// Messages about a YAML config file's nodes, shared by the readers of config files
// (daemon/config.h, io/scheduler_options_yaml.h, slurm/controller_config.h, k8s/config.h).
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_IO_YAML_ERRORS_H_
#define MIGSCHED_IO_YAML_ERRORS_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// kInvalidArgument "<origin>:<line>: <what>", the line of `node` (1-based; omitted when yaml-cpp
// does not know it).
Status YamlErrorAt(const std::string& origin, const YAML::Node& node, const std::string& what);

// What `node` is, for "must be X, got <kind>": "nothing (null)", "a scalar", "a list",
// "a mapping", "an undefined node".
std::string_view YamlKindName(const YAML::Node& node);

// OK, or kInvalidArgument for the first key of the mapping `map` written twice, at the second:
// "<origin>:<line>: key '<prefix>.<key>' is given twice (lines A and B); keep one" ("(both on
// line A)" in a flow mapping; omitted when yaml-cpp does not know the lines). yaml-cpp accepts a
// repeated key and keeps both entries; a reader that walks the entries would take the last, a
// lookup the first, so which one counts would be a guess: each reader of a mapping of config keys
// calls this first. Keys are compared as written; a reader with other spellings of one key
// (scheduler_options_yaml.h) checks those itself. `map` must be a mapping of scalar keys (others
// are skipped).
Status CheckNoRepeatedKey(const std::string& origin, const YAML::Node& map,
                          const std::string& prefix);

}  // namespace migsched

#endif  // MIGSCHED_IO_YAML_ERRORS_H_
