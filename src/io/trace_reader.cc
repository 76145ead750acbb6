#include "io/trace_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/text.h"
#include "io/input_file.h"
#include "io/integer_input.h"
#include "io/strict_csv.h"

namespace migsched {
namespace {

using nlohmann::json;

enum Field {
  kId,
  kArrival,
  kProfile,
  kFraction,
  kCount,
  kDuration,
  kPcie,
  kAlpha,
  kLatency,
  kMigratable,
  kTimeLimit,
  kNumFields,
};

constexpr std::array<std::string_view, kNumFields> kFieldNames = {
    "id",        "arrival_s", "profile",           "gpu_fraction", "count",        "duration_s",
    "pcie_gbps", "alpha",     "latency_sensitive", "migratable",   "time_limit_s",
};

std::string KnownNames() {
  std::string out;
  for (std::string_view n : kFieldNames) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

int FieldIndex(std::string_view name) {
  for (int i = 0; i < kNumFields; ++i) {
    if (kFieldNames[i] == name) return i;
  }
  return -1;
}

// One field's value as read: CSV text, or a JSON value. Absent when the CSV
// cell is empty, the JSON key is missing or its value is null.
struct Cell {
  bool present = false;
  std::string text;             // CSV cell
  const json* value = nullptr;  // JSON value (nullptr for CSV)
};
using Cells = std::array<Cell, kNumFields>;

// Converts the cells of one row/line into a Job, with errors naming the
// origin, line and field.
class RowConverter {
 public:
  // `json_text`: the JSON line (a CSV row: empty), for quoting a value as written.
  RowConverter(const std::string& origin, int line, const Catalog* catalog,
               std::string_view json_text = {})
      : origin_(origin), line_(line), catalog_(catalog), json_text_(json_text) {}

  // The reason quotes the line's text: made one safe line (regression:
  // trial_nul_in_a_field_echoed_raw: a NUL byte in a cell went to the terminal as it was).
  Status LineError(const std::string& reason) const {
    return InvalidArgumentError(fmt::format("{}:{}: {}", origin_, line_, OneLine(reason)));
  }
  Status FieldError(Field f, const std::string& reason) const {
    return LineError(fmt::format("field '{}': {}", kFieldNames[f], reason));
  }

  StatusOr<WorkloadJob> Convert(const Cells& cells) const {
    WorkloadJob job;
    for (Field f : {kId, kArrival, kDuration}) {
      if (!cells[f].present) return FieldError(f, "missing (required)");
    }
    ASSIGN_OR_RETURN(job.name, String(kId, cells[kId]));
    // Arrivals within the durations' bound: at 1.7e308 s a job's end (arrival + duration) was its
    // arrival, so every job of a trial's trace ended at once (regression: trial_arrival_huge).
    ASSIGN_OR_RETURN(job.arrival_s, Number(kArrival, cells[kArrival], "a number from 0 to 1e+15",
                                           [](double v) { return v >= 0 && v <= kMaxDurationS; }));
    const bool has_profile = cells[kProfile].present;
    const bool has_fraction = cells[kFraction].present;
    if (has_profile && has_fraction) {
      return LineError("give exactly one of 'profile' and 'gpu_fraction', not both");
    }
    if (!has_profile && !has_fraction) {
      return LineError("one of 'profile' or 'gpu_fraction' is required");
    }
    if (has_profile) {
      ASSIGN_OR_RETURN(job.profile, String(kProfile, cells[kProfile]));
      if (catalog_ != nullptr) {
        StatusOr<std::string> name = catalog_->FindProfileName(job.profile);
        if (!name.ok()) return FieldError(kProfile, name.status().message());
        job.profile = *name;
      }
    } else {
      ASSIGN_OR_RETURN(job.gpu_fraction, Number(kFraction, cells[kFraction], "a number in (0, 1]",
                                                [](double v) { return v > 0 && v <= 1; }));
    }
    if (cells[kCount].present) {
      ASSIGN_OR_RETURN(job.count, Count(cells[kCount]));
    }
    ASSIGN_OR_RETURN(job.duration_s,
                     Number(kDuration, cells[kDuration], "a number from 1e-06 to 1e+15",
                            [](double v) { return v >= kMinDurationS && v <= kMaxDurationS; }));
    if (cells[kPcie].present) {
      ASSIGN_OR_RETURN(job.pcie_gbps, Number(kPcie, cells[kPcie], "a number >= 0",
                                             [](double v) { return v >= 0; }));
    }
    if (cells[kAlpha].present) {
      ASSIGN_OR_RETURN(
          job.alpha, Number(kAlpha, cells[kAlpha], "a number > 0", [](double v) { return v > 0; }));
    }
    if (cells[kLatency].present) {
      ASSIGN_OR_RETURN(job.latency_sensitive, Bool(kLatency, cells[kLatency]));
    }
    if (cells[kMigratable].present) {
      ASSIGN_OR_RETURN(std::string m, String(kMigratable, cells[kMigratable]));
      StatusOr<Migratable> parsed = ParseMigratable(m);
      if (!parsed.ok()) return FieldError(kMigratable, parsed.status().message());
      job.migratable = *parsed;
    }
    if (cells[kTimeLimit].present) {
      ASSIGN_OR_RETURN(job.time_limit_s, Number(kTimeLimit, cells[kTimeLimit], "a number > 0",
                                                [](double v) { return v > 0; }));
    }
    return job;
  }

 private:
  Status TypeError(Field f, std::string_view expected, const json& v) const {
    return FieldError(f, fmt::format("expected {}, got {} {}", expected, v.type_name(), v.dump()));
  }

  StatusOr<std::string> String(Field f, const Cell& c) const {
    if (c.value == nullptr) return c.text;
    if (!c.value->is_string()) return TypeError(f, "a string", *c.value);
    std::string s = c.value->get<std::string>();
    if (s.empty()) return FieldError(f, "must not be empty");
    return s;
  }

  // A finite number satisfying `ok`; `requirement` completes "must be ...".
  template <typename Pred>
  StatusOr<double> Number(Field f, const Cell& c, std::string_view requirement, Pred ok) const {
    double v = 0;
    std::string shown;
    if (c.value == nullptr) {
      shown = c.text;
      const char* end = c.text.data() + c.text.size();
      auto [ptr, ec] = std::from_chars(c.text.data(), end, v);
      if (ec != std::errc() || ptr != end) {
        return FieldError(f, fmt::format("'{}' must be {}", shown, requirement));
      }
    } else {
      if (!c.value->is_number()) return TypeError(f, "a number", *c.value);
      v = c.value->get<double>();
      shown = c.value->dump();
    }
    if (!std::isfinite(v) || !ok(v)) {
      return FieldError(f, fmt::format("'{}' must be {}", shown, requirement));
    }
    return v;
  }

  // An integer of [1, INT_MAX] by the one rule of io/integer_input.h (in JSON, 2.0 is 2).
  StatusOr<int> Count(const Cell& c) const {
    int64_t v = 0;
    IntegerInput read = IntegerInput::kNotInteger;
    if (c.value == nullptr) {
      read = ReadIntegerText(c.text, 1, INT_MAX, &v);
    } else {
      if (!c.value->is_number()) return TypeError(kCount, "an integer", *c.value);
      read = ReadJsonInteger(*c.value, 1, INT_MAX, &v);
    }
    if (read == IntegerInput::kInRange) return static_cast<int>(v);
    // Only a refused value is quoted: the JSON line is read again for its text (AsWritten).
    const std::string shown = c.value == nullptr ? c.text : AsWritten(kCount, *c.value);
    if (read == IntegerInput::kAboveRange) {
      return FieldError(kCount, fmt::format("'{}' is out of range: must be an integer from 1 to {}",
                                            shown, INT_MAX));
    }
    return FieldError(kCount, fmt::format("'{}' must be an integer >= 1", shown));
  }

  // A JSON number of field `f` as the line writes it (2.50, 99999999999999999999: the parsed
  // value would say 2.5, 1e+20).
  std::string AsWritten(Field f, const json& v) const {
    std::string text;
    if (v.is_number_float()) text = JsonNumberAsWritten(json_text_, kFieldNames[f]);
    return text.empty() ? v.dump() : text;
  }

  StatusOr<bool> Bool(Field f, const Cell& c) const {
    if (c.value != nullptr) {
      if (!c.value->is_boolean()) return TypeError(f, "a boolean", *c.value);
      return c.value->get<bool>();
    }
    if (c.text == "true") return true;
    if (c.text == "false") return false;
    return FieldError(f, fmt::format("'{}' must be true or false", c.text));
  }

  const std::string& origin_;
  int line_;
  const Catalog* catalog_;
  std::string_view json_text_;
};

// Checks ids for duplicates and sorts by arrival (stable).
Status Finish(const std::string& origin, const std::vector<int>& lines,
              std::vector<WorkloadJob>* jobs) {
  std::unordered_map<std::string, int> first_line;
  for (size_t i = 0; i < jobs->size(); ++i) {
    auto [it, inserted] = first_line.emplace((*jobs)[i].name, lines[i]);
    if (!inserted) {
      return InvalidArgumentError(
          fmt::format("{}:{}: field 'id': duplicate id '{}' (first on line {})", origin, lines[i],
                      (*jobs)[i].name, it->second));
    }
  }
  std::stable_sort(jobs->begin(), jobs->end(), [](const WorkloadJob& a, const WorkloadJob& b) {
    return a.arrival_s < b.arrival_s;
  });
  return Status::Ok();
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why `s` cannot be written as an unquoted CSV field, or "" if it can.
std::string UnwritableReason(const std::string& s) {
  if (s.empty()) return "it is empty";
  if (s.find(',') != std::string::npos) return "it contains ','";
  if (s.find('"') != std::string::npos) return "it contains '\"'";
  if (s.find('\n') != std::string::npos || s.find('\r') != std::string::npos) {
    return "it contains a line break";
  }
  if (s.front() == ' ' || s.front() == '\t' || s.back() == ' ' || s.back() == '\t') {
    return "it has leading or trailing blanks";
  }
  return "";
}

}  // namespace

StatusOr<std::vector<WorkloadJob>> ParseTraceCsv(std::istream& in, const std::string& origin,
                                                 const Catalog* catalog) {
  ASSIGN_OR_RETURN(CsvTable table, ReadStrictCsv(in, origin));
  std::vector<int> column_field(table.header.size(), -1);
  std::array<bool, kNumFields> have{};
  for (size_t c = 0; c < table.header.size(); ++c) {
    int f = FieldIndex(table.header[c]);
    if (f < 0) {
      return InvalidArgumentError(fmt::format("{}:{}: unknown column '{}' (known: {})", origin,
                                              table.header_line, table.header[c], KnownNames()));
    }
    column_field[c] = f;
    have[f] = true;
  }
  for (Field f : {kId, kArrival, kDuration}) {
    if (!have[f]) {
      return InvalidArgumentError(fmt::format("{}:{}: missing required column '{}'", origin,
                                              table.header_line, kFieldNames[f]));
    }
  }
  if (!have[kProfile] && !have[kFraction]) {
    return InvalidArgumentError(
        fmt::format("{}:{}: missing column 'profile' or 'gpu_fraction' (one is required)", origin,
                    table.header_line));
  }
  std::vector<WorkloadJob> jobs;
  std::vector<int> lines;
  jobs.reserve(table.rows.size());
  for (const CsvRow& row : table.rows) {
    Cells cells;
    for (size_t c = 0; c < row.fields.size(); ++c) {
      if (row.fields[c].empty()) continue;
      Cell& cell = cells[column_field[c]];
      cell.present = true;
      cell.text = row.fields[c];
    }
    RowConverter conv(origin, row.line, catalog);
    ASSIGN_OR_RETURN(WorkloadJob job, conv.Convert(cells));
    jobs.push_back(std::move(job));
    lines.push_back(row.line);
  }
  RETURN_IF_ERROR(Finish(origin, lines, &jobs));
  return jobs;
}

StatusOr<std::vector<WorkloadJob>> ParseTraceJsonLines(std::istream& in, const std::string& origin,
                                                       const Catalog* catalog) {
  std::vector<WorkloadJob> jobs;
  std::vector<int> lines;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (line == 1) raw.erase(0, raw.size() - WithoutUtf8Bom(raw).size());  // as Excel writes
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find_first_not_of(" \t") == std::string::npos) continue;
    RowConverter conv(origin, line, catalog, raw);
    // The JSON parser skips a byte-order mark at the start of what it reads, here each line:
    // past the first line it is no file's start but bytes in the middle of one.
    if (line > 1 && WithoutUtf8Bom(raw).size() != raw.size()) {
      return conv.LineError(
          "invalid JSON: a UTF-8 byte-order mark (EF BB BF) starts this line; only the file "
          "may start with one");
    }
    std::string duplicate_key;
    std::set<std::string> keys;
    auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
        if (!keys.insert(parsed.get<std::string>()).second && duplicate_key.empty()) {
          duplicate_key = parsed.get<std::string>();
        }
      }
      return true;
    };
    json obj;
    try {
      obj = json::parse(raw, callback);
    } catch (const json::exception& e) {
      // A syntax error (parse_error), or a number the JSON holds but a double cannot
      // (out_of_range 406, e.g. 1e400): both are this line's bad input.
      std::string what = e.what();
      // Drop nlohmann's "[json.exception.parse_error.101] " tag.
      if (size_t close = what.find("] ");
          what.rfind("[json.exception", 0) == 0 && close != std::string::npos) {
        what = what.substr(close + 2);
      }
      return conv.LineError(fmt::format("invalid JSON: {}", what));
    }
    if (!obj.is_object()) {
      std::string hint = obj.is_array() ? " (JSON lines: one object per line, not an array)" : "";
      return conv.LineError(fmt::format("expected a JSON object, got {}{}", obj.type_name(), hint));
    }
    if (!duplicate_key.empty()) {
      return conv.LineError(fmt::format("key '{}' appears twice", duplicate_key));
    }
    Cells cells;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      int f = FieldIndex(it.key());
      if (f < 0) {
        return conv.LineError(fmt::format("unknown key '{}' (known: {})", it.key(), KnownNames()));
      }
      if (it.value().is_null()) continue;
      cells[f].present = true;
      cells[f].value = &it.value();
    }
    ASSIGN_OR_RETURN(WorkloadJob job, conv.Convert(cells));
    jobs.push_back(std::move(job));
    lines.push_back(line);
  }
  if (in.bad()) return InvalidArgumentError(fmt::format("{}: read error", origin));
  RETURN_IF_ERROR(Finish(origin, lines, &jobs));
  return jobs;
}

StatusOr<std::vector<WorkloadJob>> ReadTraceFile(const std::string& path, const Catalog* catalog) {
  ASSIGN_OR_RETURN(std::ifstream in, OpenInputFile(path, "trace file"));
  const std::string lower = Lower(path);
  const bool csv = EndsWith(lower, ".csv");
  const bool jsonl =
      EndsWith(lower, ".jsonl") || EndsWith(lower, ".ndjson") || EndsWith(lower, ".json");
  if (!csv && !jsonl) {
    return InvalidArgumentError(fmt::format(
        "{}: unknown trace file extension; expected .csv, .jsonl, .ndjson or .json", path));
  }
  return csv ? ParseTraceCsv(in, path, catalog) : ParseTraceJsonLines(in, path, catalog);
}

Status WriteTraceCsv(const std::vector<WorkloadJob>& jobs, std::ostream& out) {
  std::set<std::string> ids;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const WorkloadJob& j = jobs[i];
    std::string why = UnwritableReason(j.name);
    if (why.empty() && j.name.front() == '#') why = "it starts with '#'";
    if (!why.empty()) {
      return InvalidArgumentError(
          fmt::format("job {} (id '{}'): the id cannot be written to CSV: {}", i, j.name, why));
    }
    if (!j.profile.empty()) {
      why = UnwritableReason(j.profile);
      if (!why.empty()) {
        return InvalidArgumentError(fmt::format(
            "job {} (id '{}'): the profile cannot be written to CSV: {}", i, j.name, why));
      }
    }
    if (!ids.insert(j.name).second) {
      return InvalidArgumentError(fmt::format("job {}: duplicate id '{}'", i, j.name));
    }
  }
  std::string text;
  for (int f = 0; f < kNumFields; ++f) {
    if (f > 0) text += ',';
    text += kFieldNames[f];
  }
  text += '\n';
  for (const WorkloadJob& j : jobs) {
    // Field order as kFieldNames.
    // time_limit_s: empty when the job has none (0).
    fmt::format_to(std::back_inserter(text), "{},{},{},{},{},{},{},{},{},{},{}\n", j.name,
                   j.arrival_s, j.profile,
                   j.profile.empty() ? fmt::format("{}", j.gpu_fraction) : std::string(), j.count,
                   j.duration_s, j.pcie_gbps, j.alpha, j.latency_sensitive ? "true" : "false",
                   MigratableName(j.migratable),
                   j.time_limit_s > 0 ? fmt::format("{}", j.time_limit_s) : std::string());
  }
  out << text;
  if (!out) return InvalidArgumentError("cannot write the trace CSV (stream error)");
  return Status::Ok();
}

}  // namespace migsched
