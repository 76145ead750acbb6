// The table `migsched jobs` prints, in the manner of Slurm's squeue: one row
// per job or allocation with its state, the time it has waited or run, its
// limit, what it asked for, and where it runs or why it does not.
//
// Columns (docs/api.md "Client commands"):
//   ID NAME USER STATE TIME LIMIT REQUEST PLACEMENT(REASON) COMMAND
// TIME: from its first start to its end (or to now while it runs); a job
// that never started: from its submission to its end (or to now while it
// waits). Slurm's notation (FormatSlurmTime).
// PLACEMENT(REASON): GPU:start+size per instance while it holds instances;
// else "(reason)": the daemon's reason, "Resources" for a queued job without
// one; or "exit N" for a job that ended without a reason.
// Every cell is one line of plain text: control characters are shown escaped (\n, \t, \xHH,
// \u00HH), bytes that are not UTF-8 as '?', and a cell too long for its column is cut between
// characters, ending in "...".
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_CLI_JOBS_TABLE_H_
#define MIGSCHED_CLI_JOBS_TABLE_H_

#include <string>
#include <vector>

#include "nodeapi/job_record.h"

namespace migsched::cli {

// The TIME column's seconds for `r` at `now_unix` (Unix seconds), >= 0.
double JobElapsedSeconds(const DaemonJobRecord& r, double now_unix);

// The whole table, a header line then one line per record, in the order given.
std::string FormatJobsTable(const std::vector<DaemonJobRecord>& jobs, double now_unix);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_JOBS_TABLE_H_
