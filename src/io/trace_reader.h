// The project's trace format (§10 of docs/algorithms.md; full description in
// docs/formats/trace.md): one job per row/line with the fields
//
//   id, arrival_s, profile | gpu_fraction, count, duration_s, pcie_gbps,
//   alpha, latency_sensitive, migratable, time_limit_s
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
//   profile            a profile name, e.g. "3g.20gb". With a catalog given it
//                      must be one the catalog knows, in any spelling
//                      NormalizeProfileName accepts (core/catalog.h: "1G.5GB",
//                      "MIG-1g.5gb", "nvidia.com/mig-1g.5gb"), and the job
//                      gets the catalog's spelling; an unknown name is an error
//                      listing the known ones. Whether the cluster's GPUs offer
//                      it is decided later (a rejection, not an input error).
//                      Or
//   gpu_fraction       a number in (0, 1], resolved per model (FractionRule,
//                      default compute; the trace cannot change it)
//                      -- every row gives exactly one of the two
//   count              integer >= 1, default 1 (instances started as a gang)
//   duration_s         required, finite, > 0 (seconds, without contention)
//   pcie_gbps          finite, >= 0, default 0 (GB/s, §8)
//   alpha              finite, > 0, default 1.0 (§8)
//   latency_sensitive  exactly "true" or "false", default false
//   migratable         none | restart | checkpoint, default none (§6)
//   time_limit_s       finite, > 0, optional (seconds from the job's start: the
//                      user's limit; Job::time_limit_s, 0 when not given)
// Unknown columns/keys are errors.
//
// Errors are kInvalidArgument (kNotFound if the file cannot be opened, with the
// system's reason), and name the origin (file), line, field and reason, e.g.
//   "trace.csv:7: field 'duration_s': '-3' must be a number > 0"
//   "trace.csv:2: field 'profile': unknown profile '9g.99gb' (known: 1g.5gb, ...)".
// The first error stops the read; no partial workload is returned.
//
// Thread-safety: functions are reentrant.
#ifndef MIGSCHED_IO_TRACE_READER_H_
#define MIGSCHED_IO_TRACE_READER_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

// Reads a trace file, choosing the encoding by extension (case-insensitive):
// .csv -> CSV; .jsonl, .ndjson, .json -> JSON lines; any other is an error.
// Jobs are returned sorted by arrival_s (stable: ties keep file order).
// `catalog` (may be null: names are then kept as written) checks and
// canonicalises profile names, as described above. A directory, or a file that
// cannot be opened, is an error naming the path and the system's reason.
StatusOr<std::vector<WorkloadJob>> ReadTraceFile(const std::string& path,
                                                 const Catalog* catalog = nullptr);

// Parses CSV / JSON-lines text from a stream; `origin` names it in errors.
// Same result order and `catalog` as ReadTraceFile.
StatusOr<std::vector<WorkloadJob>> ParseTraceCsv(std::istream& in, const std::string& origin,
                                                 const Catalog* catalog = nullptr);
StatusOr<std::vector<WorkloadJob>> ParseTraceJsonLines(std::istream& in, const std::string& origin,
                                                       const Catalog* catalog = nullptr);

// Writes `jobs` as CSV with every column in the order listed above (profile
// and gpu_fraction both present, one empty per row), numbers in the shortest
// form that reads back to the same double, so ParseTraceCsv returns equal jobs
// (except fraction_rule, which the format does not carry). Errors
// (kInvalidArgument, nothing written): a job whose id or profile cannot be
// written unquoted (empty, contains ',', '"', a line break, surrounding
// blanks, or an id starting with '#'), or a duplicate id.
Status WriteTraceCsv(const std::vector<WorkloadJob>& jobs, std::ostream& out);

}  // namespace migsched

#endif  // MIGSCHED_IO_TRACE_READER_H_
