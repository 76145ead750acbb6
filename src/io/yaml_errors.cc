#include "io/yaml_errors.h"

#include <fmt/format.h>

#include <algorithm>
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

Status CheckQuotesClosedOnTheirLine(const std::string& origin, std::string_view text) {
  int block_indent = -1;  // the indentation of the key of a block scalar being read, else -1
  size_t line_start = 0;
  for (int line_no = 1; line_start <= text.size(); ++line_no) {
    size_t end = text.find('\n', line_start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(line_start, end - line_start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_start = end + 1;
    const size_t indent = std::min(line.find_first_not_of(" \t"), line.size());
    if (block_indent >= 0) {
      if (indent == line.size() || static_cast<int>(indent) > block_indent) continue;
      block_indent = -1;
    }
    int flow = 0;            // depth of [ ] and { }
    bool at_start = true;    // a scalar may begin here
    bool after_key = false;  // the last separator was `: ` (a block scalar may begin)
    for (size_t p = indent; p < line.size();) {
      const char c = line[p];
      if (c == ' ' || c == '\t') {
        ++p;
        continue;
      }
      if (c == '#' && (p == 0 || line[p - 1] == ' ' || line[p - 1] == '\t')) break;
      if (at_start) {
        if ((c == '-' || c == '?') && (p + 1 == line.size() || line[p + 1] == ' ')) {
          ++p;
          continue;
        }
        if (c == '"' || c == '\'') {
          size_t q = p + 1;
          for (; q < line.size(); ++q) {
            if (c == '"' && line[q] == '\\') {
              ++q;  // an escaped character
            } else if (line[q] == c) {
              if (c == '\'' && q + 1 < line.size() && line[q + 1] == '\'') {
                ++q;  // '' is a quote inside '...'
              } else {
                break;
              }
            }
          }
          if (q >= line.size()) {
            return InvalidArgumentError(fmt::format(
                "{}:{}: the quoted value that opens at column {} is not closed on its line; "
                "close it (a value of this file is written on one line)",
                origin, line_no, p + 1));
          }
          p = q + 1;
          at_start = after_key = false;
          continue;
        }
        if ((c == '|' || c == '>') && after_key && flow == 0) {
          block_indent = static_cast<int>(indent);
          break;
        }
        if (c == '[' || c == '{') {
          ++flow;
          ++p;
          continue;
        }
        at_start = after_key = false;
      }
      if (c == ':' && (p + 1 == line.size() || line[p + 1] == ' ' || line[p + 1] == '\t')) {
        at_start = after_key = true;
      } else if (flow > 0 && (c == ',' || c == '[' || c == '{')) {
        flow += c == ',' ? 0 : 1;
        at_start = true;
        after_key = false;
      } else if (flow > 0 && (c == ']' || c == '}')) {
        --flow;
      }
      ++p;
    }
    if (end == text.size()) break;
  }
  return Status();
}

}  // namespace migsched
