#include "io/yaml_errors.h"

#include <fmt/format.h>

#include <map>

namespace migsched {

Status YamlErrorAt(const std::string& origin, const YAML::Node& node, const std::string& what) {
  return YamlErrorAt(origin, node.Mark(), what);
}

Status YamlErrorAt(const std::string& origin, const YAML::Mark& mark, const std::string& what) {
  if (mark.is_null() || mark.line < 0) {
    return InvalidArgumentError(fmt::format("{}: {}", origin, what));
  }
  return InvalidArgumentError(fmt::format("{}:{}: {}", origin, mark.line + 1, what));
}

YAML::Mark YamlValueMark(const YAML::Node& key, const YAML::Node& value) {
  return value.IsNull() ? key.Mark() : value.Mark();
}

void YamlEntryMarks::Note(const YAML::Node& key, const YAML::Node& value) {
  if (value.IsNull()) empty_values_.emplace_back(value, key.Mark());
}

YAML::Mark YamlEntryMarks::MarkOf(const YAML::Node& node) const {
  for (const auto& [value, key_mark] : empty_values_) {
    if (node.is(value)) return key_mark;
  }
  return node.Mark();
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

Status CheckNoRepeatedKey(const std::string& origin, const YAML::Node& map,
                          const std::string& prefix) {
  if (!map.IsMap()) return Status::Ok();
  std::map<std::string, YAML::Mark> seen;  // key as written -> where it was first
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    const YAML::Mark mark = kv.first.Mark();
    auto [it, fresh] = seen.emplace(key, mark);
    if (fresh) continue;
    const std::string full = prefix.empty() ? key : prefix + "." + key;
    const bool lines_known =
        !it->second.is_null() && it->second.line >= 0 && !mark.is_null() && mark.line >= 0;
    std::string where;
    if (lines_known && it->second.line == mark.line) {
      where = fmt::format(" (both on line {})", mark.line + 1);  // a flow mapping {a: 1, a: 2}
    } else if (lines_known) {
      where = fmt::format(" (lines {} and {})", it->second.line + 1, mark.line + 1);
    }
    return YamlErrorAt(origin, kv.first,
                       fmt::format("key '{}' is given twice{}; keep one", full, where));
  }
  return Status::Ok();
}

}  // namespace migsched
