// Messages about a YAML config file's nodes, shared by the readers of config files
// (daemon/config.h, io/scheduler_options_yaml.h).
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

}  // namespace migsched

#endif  // MIGSCHED_IO_YAML_ERRORS_H_
