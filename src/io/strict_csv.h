// A strict reader for simple comma-separated files: the project trace format
// (io/trace_reader.h) and the Alibaba pod lists (io/alibaba_loader.h).
//
// It is deliberately not a general CSV parser: fields are split at every
// comma, with no quoting or escaping. A line containing a double quote is
// rejected with a clear error rather than mis-read. Surrounding spaces and
// tabs of each field are trimmed, a trailing '\r' (CRLF files) is dropped,
// a UTF-8 byte-order mark at the start of the input (as Excel writes) is
// skipped (core/text.h WithoutUtf8Bom), and blank lines and lines whose first
// non-blank character is '#' are ignored. The first remaining line is the header; every later line
// must have as many fields as the header.
//
// Errors (kInvalidArgument) start with "<origin>:<line>: ", e.g.
//   "trace.csv:4: quoted fields are not supported (found '\"'); ..."
//
// Thread-safety: functions are reentrant.
#ifndef MIGSCHED_IO_STRICT_CSV_H_
#define MIGSCHED_IO_STRICT_CSV_H_

#include <istream>
#include <string>
#include <vector>

#include "core/status.h"

namespace migsched {

struct CsvRow {
  int line = 0;  // 1-based line number in the input
  std::vector<std::string> fields;
};

struct CsvTable {
  int header_line = 0;
  std::vector<std::string> header;  // column names, unique
  std::vector<CsvRow> rows;

  // Index of column `name` in the header, or -1.
  int ColumnIndex(const std::string& name) const;
};

// Reads the whole stream. `origin` (usually the file path) prefixes errors.
// Errors: quotes, a row with the wrong number of fields, an empty or
// duplicate column name, no header line.
StatusOr<CsvTable> ReadStrictCsv(std::istream& in, const std::string& origin);

}  // namespace migsched

#endif  // MIGSCHED_IO_STRICT_CSV_H_
