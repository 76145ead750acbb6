#include "cli/jobs_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "daemon/time_limit.h"

namespace migsched::cli {
namespace {

// NAME, USER, REQUEST and PLACEMENT(REASON) come padded by TableCell (their text is the client's);
// TIME and LIMIT as wide as their longest value, at least 10 (a limit of 11574-01:46:40 pushed the
// rest of its row out of line: regression trial_jobs_limit_column_overflow).
constexpr std::string_view kRow = "{:<6} {} {} {:<10} {:>{}} {:>{}}  {} {} {}\n";

// One cell: DisplayChars of `s` in `n` terminal columns (DisplayWidth): cut when wider (never
// inside a character or an escape), the last three columns "..." then, else padded with spaces;
// `pad` false leaves a short cell unpadded (the last column). Regression
// escaped_name_shifts_jobs_columns: fmt padded by code points, so an escaped character ("\\x1b",
// 4 columns, one entry) or a wide one (2 columns) pushed the later columns of its row right.
std::string TableCell(std::string_view s, size_t n, bool pad = true) {
  const std::vector<std::string> chars = DisplayChars(s);
  size_t width = 0;
  for (const std::string& c : chars) width += DisplayWidth(c);
  std::string out;
  size_t used = 0;
  if (width <= n) {
    for (const std::string& c : chars) out += c;
    used = width;
  } else {
    for (const std::string& c : chars) {
      if (used + DisplayWidth(c) > n - 3) break;
      out += c;
      used += DisplayWidth(c);
    }
    out += "...";
    used += 3;
  }
  if (pad) out.append(n - std::min(n, used), ' ');
  return out;
}

// "2g.10gb", "2x2g.10gb", "fraction 0.5"; an allocation: its instances' profiles.
std::string RequestLabel(const DaemonJobRecord& r) {
  if (r.kind == JobKind::kAllocation) {
    std::string label;
    for (const RequestedInstance& i : r.allocation.instances) {
      label += (label.empty() ? "" : ",") + i.profile;
    }
    if (label.empty()) {
      for (const JobInstance& i : r.instances) label += (label.empty() ? "" : ",") + i.profile;
    }
    return label.empty() ? "-" : label;
  }
  const JobRequest& q = r.request;
  const std::string what =
      q.profile.empty() ? fmt::format("fraction {}", q.gpu_fraction) : q.profile;
  return q.count > 1 ? fmt::format("{}x{}", q.count, what) : what;
}

std::string Where(const DaemonJobRecord& r) {
  std::string out;
  // A job that ended keeps its instances in its record (--json shows where it ran); the table
  // shows why it ended instead.
  if (!IsTerminal(r.state)) {
    for (const JobInstance& i : r.instances) {
      out += fmt::format("{}{}:{}+{}", out.empty() ? "" : ",", i.gpu, i.start, i.size);
    }
  }
  if (!out.empty()) return out;
  if (!r.reason.empty()) return "(" + r.reason + ")";
  if (r.state == JobState::kQueued) return "(Resources)";
  if (r.exit_code) return fmt::format("exit {}", *r.exit_code);
  return "-";
}

std::string Command(const DaemonJobRecord& r) {
  if (r.kind == JobKind::kAllocation) return "allocation of " + r.owner();
  std::string cmd;
  for (const std::string& a : r.request.command) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

}  // namespace

double JobElapsedSeconds(const DaemonJobRecord& r, double now_unix) {
  const double from = r.started_at > 0 ? r.started_at : r.submitted_at;
  const double to = r.ended_at > 0 ? r.ended_at : now_unix;
  return std::max(0.0, to - from);
}

std::string FormatJobsTable(const std::vector<DaemonJobRecord>& jobs, double now_unix) {
  std::vector<std::string> times, limits;
  size_t time_width = 10, limit_width = 10;
  for (const DaemonJobRecord& r : jobs) {
    const bool job = r.kind == JobKind::kJob;
    times.push_back(FormatSlurmTime(JobElapsedSeconds(r, now_unix)));
    limits.push_back(job && r.request.time_limit_s > 0 ? FormatSlurmTime(r.request.time_limit_s)
                                                       : "-");
    time_width = std::max(time_width, times.back().size());
    limit_width = std::max(limit_width, limits.back().size());
  }
  std::string out =
      fmt::format(fmt::runtime(kRow), "ID", TableCell("NAME", 10), TableCell("USER", 8), "STATE",
                  "TIME", time_width, "LIMIT", limit_width, TableCell("REQUEST", 14),
                  TableCell("PLACEMENT(REASON)", 24), "COMMAND");
  for (size_t i = 0; i < jobs.size(); ++i) {
    const DaemonJobRecord& r = jobs[i];
    const bool job = r.kind == JobKind::kJob;
    const std::string name = job ? r.request.name : r.allocation.name;
    const std::string user = job && !r.request.user.empty() ? r.request.user : "-";
    out += fmt::format(fmt::runtime(kRow), r.id, TableCell(name.empty() ? "-" : name, 10),
                       TableCell(user, 8), JobStateName(r.state), times[i], time_width, limits[i],
                       limit_width, TableCell(RequestLabel(r), 14), TableCell(Where(r), 24),
                       TableCell(Command(r), 40, false));
  }
  return out;
}

}  // namespace migsched::cli
