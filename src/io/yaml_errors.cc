#include "io/yaml_errors.h"

#include <fmt/format.h>

namespace migsched {

Status YamlErrorAt(const std::string& origin, const YAML::Node& node, const std::string& what) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) {
    return InvalidArgumentError(fmt::format("{}: {}", origin, what));
  }
  return InvalidArgumentError(fmt::format("{}:{}: {}", origin, mark.line + 1, what));
}

std::string_view YamlKindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "an undefined node";
  }
}

}  // namespace migsched
