#include "io/strict_csv.h"

#include <fmt/format.h>

#include <string_view>

#include "core/text.h"

namespace migsched {
namespace {

std::vector<std::string> Split(std::string_view line) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t comma = line.find(',', pos);
    if (comma == std::string_view::npos) {
      out.emplace_back(TrimBlanks(line.substr(pos)));
      return out;
    }
    out.emplace_back(TrimBlanks(line.substr(pos, comma - pos)));
    pos = comma + 1;
  }
}

Status LineError(const std::string& origin, int line, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}:{}: {}", origin, line, what));
}

}  // namespace

int CsvTable::ColumnIndex(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

StatusOr<CsvTable> ReadStrictCsv(std::istream& in, const std::string& origin) {
  CsvTable table;
  std::string raw;
  int line = 0;
  bool have_header = false;
  while (std::getline(in, raw)) {
    ++line;
    std::string_view text = raw;
    if (line == 1) text = WithoutUtf8Bom(text);  // as Excel writes
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find('\r') != std::string_view::npos) {
      return LineError(origin, line,
                       "a carriage return (CR) inside the line: the file's lines end with CR "
                       "alone; save it with LF or CRLF line endings");
    }
    std::string_view trimmed = TrimBlanks(text);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (text.find('"') != std::string_view::npos) {
      return LineError(origin, line,
                       "quoted fields are not supported (found '\"'); write plain "
                       "comma-separated values without quotes");
    }
    std::vector<std::string> fields = Split(text);
    if (!have_header) {
      have_header = true;
      table.header_line = line;
      for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].empty()) {
          return LineError(origin, line, fmt::format("column {} of the header is empty", i + 1));
        }
        for (size_t j = 0; j < i; ++j) {
          if (fields[j] == fields[i]) {
            return LineError(origin, line, fmt::format("column '{}' appears twice", fields[i]));
          }
        }
      }
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size()) {
      return LineError(origin, line,
                       fmt::format("expected {} comma-separated fields (as in the header on "
                                   "line {}), found {}",
                                   table.header.size(), table.header_line, fields.size()));
    }
    table.rows.push_back(CsvRow{line, std::move(fields)});
  }
  if (in.bad()) return InvalidArgumentError(fmt::format("{}: read error", origin));
  if (!have_header) {
    return InvalidArgumentError(fmt::format(
        "{}: no header line: {}", origin,
        line == 0 ? "the file is empty" : "the file has only blank lines and '#' comments"));
  }
  return table;
}

}  // namespace migsched
