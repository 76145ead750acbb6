#include "cli/jobs_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/time_limit.h"

namespace migsched::cli {
namespace {

constexpr std::string_view kRow = "{:<6} {:<10} {:<8} {:<10} {:>10} {:>10}  {:<14} {:<24} {}\n";

// The characters of `s` made safe for one line of a terminal: control characters (C0, DEL, C1:
// a newline that would start a row of its own, an escape sequence) and the bidirectional
// formatting characters shown escaped as \n, \t, \r or \xHH / \uHHHH, and each byte that is not
// part of valid UTF-8 as '?'. One entry per character (a code point, whole).
std::vector<std::string> DisplayChars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      if (b == '\n') {
        out.push_back("\\n");
      } else if (b == '\t') {
        out.push_back("\\t");
      } else if (b == '\r') {
        out.push_back("\\r");
      } else if (b < 0x20 || b == 0x7f) {
        out.push_back(fmt::format("\\x{:02x}", b));
      } else {
        out.emplace_back(1, static_cast<char>(b));
      }
      ++i;
      continue;
    }
    // A lead byte and its length; 0xC0, 0xC1 and above 0xF4 never start a valid sequence.
    const size_t len = b >= 0xc2 && b <= 0xdf   ? 2
                       : b >= 0xe0 && b <= 0xef ? 3
                       : b >= 0xf0 && b <= 0xf4 ? 4
                                                : 0;
    bool valid = len > 0 && i + len <= s.size();
    uint32_t cp = len == 2 ? b & 0x1f : len == 3 ? b & 0x0f : b & 0x07;
    for (size_t k = 1; valid && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      valid = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not valid UTF-8.
    valid = valid && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
            !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
    if (!valid) {
      out.push_back("?");
      ++i;
      continue;
    }
    // C1 controls (0x9B is a CSI), and the bidirectional formatting characters, which reorder what
    // follows them on the line (U+202E would show a row's later columns reversed; regression:
    // bidi_override_in_jobs_table): LRM, RLM, ALM, the embeddings and overrides, the isolates.
    const bool bidi = cp == 0x200e || cp == 0x200f || cp == 0x061c ||
                      (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
    if ((cp >= 0x80 && cp <= 0x9f) || bidi) {
      out.push_back(fmt::format("\\u{:04x}", cp));
    } else {
      out.emplace_back(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

// One cell: DisplayChars of `s`, cut to at most `n` characters (never inside one), the last three
// "..." when cut.
std::string TableCell(std::string_view s, size_t n) {
  const std::vector<std::string> chars = DisplayChars(s);
  const size_t keep = chars.size() > n ? n - 3 : chars.size();
  std::string out;
  for (size_t i = 0; i < keep; ++i) out += chars[i];
  if (keep < chars.size()) out += "...";
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
  std::string out = fmt::format(fmt::runtime(kRow), "ID", "NAME", "USER", "STATE", "TIME", "LIMIT",
                                "REQUEST", "PLACEMENT(REASON)", "COMMAND");
  for (const DaemonJobRecord& r : jobs) {
    const bool job = r.kind == JobKind::kJob;
    const std::string name = job ? r.request.name : r.allocation.name;
    const std::string user = job && !r.request.user.empty() ? r.request.user : "-";
    const std::string limit =
        job && r.request.time_limit_s > 0 ? FormatSlurmTime(r.request.time_limit_s) : "-";
    out += fmt::format(
        fmt::runtime(kRow), r.id, TableCell(name.empty() ? "-" : name, 10), TableCell(user, 8),
        JobStateName(r.state), FormatSlurmTime(JobElapsedSeconds(r, now_unix)), limit,
        TableCell(RequestLabel(r), 14), TableCell(Where(r), 24), TableCell(Command(r), 40));
  }
  return out;
}

}  // namespace migsched::cli
