// The project's trace format (§10 of docs/algorithms.md; full description in
// docs/formats/trace.md): one job per row/line with the fields
//
//   id, arrival_s, profile | gpu_fraction, count, duration_s, pcie_gbps,
//   alpha, latency_sensitive, migratable
//
// in two encodings:
//  * CSV (.csv): a header line names the columns, in any order. Strict: no
//    quoting (io/strict_csv.h); blank lines and '#' comment lines are ignored.
//    An empty cell means "not given" (the default, or an error if required).
//  * JSON lines (.jsonl, .ndjson, .json): one JSON object per non-blank line,
//    with the same names as keys. Types: id, profile, migratable are strings;
//    latency_sensitive is a boolean; count an integer; the rest numbers. A key
//    whose value is null counts as not given.
//
// Fields and checks (units in parentheses):
//   id                 required, non-empty, unique in the file
//   arrival_s          required, finite, >= 0 (seconds from workload start)
//   profile            exact profile name, e.g. "3g.20gb" (checked against the
//                      cluster's GPU models later, not here), or
//   gpu_fraction       a number in (0, 1], resolved per model (FractionRule,
//                      default compute; the trace cannot change it)
//                      -- every row gives exactly one of the two
//   count              integer >= 1, default 1 (instances started as a gang)
//   duration_s         required, finite, > 0 (seconds, without contention)
//   pcie_gbps          finite, >= 0, default 0 (GB/s, §8)
//   alpha              finite, > 0, default 1.0 (§8)
//   latency_sensitive  exactly "true" or "false", default false
//   migratable         none | restart | checkpoint, default none (§6)
// Unknown columns/keys are errors.
//
// Errors are kInvalidArgument (kNotFound if the file cannot be opened), and
// name the origin (file), line, field and reason, e.g.
//   "trace.csv:7: field 'duration_s': '-3' must be a number > 0".
// The first error stops the read; no partial workload is returned.
//
// Thread-safety: functions are reentrant.
#ifndef MIGSCHED_IO_TRACE_READER_H_
#define MIGSCHED_IO_TRACE_READER_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace migsched {

// Reads a trace file, choosing the encoding by extension (case-insensitive):
// .csv -> CSV; .jsonl, .ndjson, .json -> JSON lines; any other is an error.
// Jobs are returned sorted by arrival_s (stable: ties keep file order).
StatusOr<std::vector<Job>> ReadTraceFile(const std::string& path);

// Parses CSV / JSON-lines text from a stream; `origin` names it in errors.
// Same result order as ReadTraceFile.
StatusOr<std::vector<Job>> ParseTraceCsv(std::istream& in, const std::string& origin);
StatusOr<std::vector<Job>> ParseTraceJsonLines(std::istream& in, const std::string& origin);

// Writes `jobs` as CSV with every column in the order listed above (profile
// and gpu_fraction both present, one empty per row), numbers in the shortest
// form that reads back to the same double, so ParseTraceCsv returns equal jobs
// (except fraction_rule, which the format does not carry). Errors
// (kInvalidArgument, nothing written): a job whose id or profile cannot be
// written unquoted (empty, contains ',', '"', a line break, surrounding
// blanks, or an id starting with '#'), or a duplicate id.
Status WriteTraceCsv(const std::vector<Job>& jobs, std::ostream& out);

}  // namespace migsched

#endif  // MIGSCHED_IO_TRACE_READER_H_
