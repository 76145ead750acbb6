#include "sim/sim_writers.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace migsched {
namespace {

std::string Num(double v) { return std::isnan(v) ? std::string() : fmt::format("{}", v); }

bool NeedsQuotes(std::string_view s) {
  return s.find_first_of(",\"\r\n") != std::string_view::npos;
}

Status Finish(std::ostream& out, std::string_view what) {
  out.flush();
  if (!out) return UnavailableError(fmt::format("writing the {} CSV failed", what));
  return Status();
}

}  // namespace

std::string CsvField(std::string_view text) {
  if (!NeedsQuotes(text)) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

namespace {

constexpr std::string_view kJobsHeader =
    "id,name,request,outcome,arrival_s,placed_s,start_s,wait_s,end_s,jct_s,instances,reason,"
    "migrations,duration_s,slowdown,bounded_slowdown,time_limit_s\n";

// The rows of `result`'s jobs, each after `lead` (empty, or a field and its comma).
void WriteJobRows(const SimResult& result, std::string_view lead, std::ostream& out) {
  for (const JobRecord& r : result.jobs) {
    // Slowdowns of completed jobs only (metrics.h Slowdown, BoundedSlowdown).
    const bool done = r.outcome == JobOutcome::kCompleted && std::isfinite(r.jct_s);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    out << lead
        << fmt::format(
               "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, CsvField(r.name),
               CsvField(r.request), JobOutcomeName(r.outcome), Num(r.arrival_s), Num(r.placed_s),
               Num(r.start_s), Num(r.wait_s), Num(r.end_s), Num(r.jct_s), CsvField(r.instances),
               CsvField(r.reason), r.migrations, Num(r.duration_s),
               Num(done ? Slowdown(r.jct_s, r.duration_s) : nan),
               Num(done ? BoundedSlowdown(r.jct_s, r.duration_s) : nan), Num(r.time_limit_s));
  }
}

}  // namespace

Status WriteJobsCsv(const SimResult& result, std::ostream& out) {
  out << kJobsHeader;
  WriteJobRows(result, "", out);
  return Finish(out, "jobs");
}

Status WriteJobsCsv(const std::vector<std::pair<std::string, const SimResult*>>& runs,
                    std::ostream& out) {
  out << "policy," << kJobsHeader;
  for (const auto& [label, result] : runs) WriteJobRows(*result, CsvField(label) + ",", out);
  return Finish(out, "jobs");
}

Status WriteTimelineCsv(const SimResult& result, std::ostream& out) {
  out << "time_s,queue_length,running_jobs,utilization,frag_rate,stranded\n";
  for (const TimelineSample& s : result.timeline) {
    out << fmt::format("{},{},{},{},{},{}\n", Num(s.time_s), s.queue_length, s.running_jobs,
                       Num(s.utilization), Num(s.frag_rate), Num(s.stranded));
  }
  return Finish(out, "timeline");
}

Status WriteFillCurveCsv(const SimResult& result, std::ostream& out) {
  out << "target_share,requested_share,allocation,acceptance,frag_rate,arrived,placed\n";
  for (const FillPoint& p : result.fill_curve) {
    out << fmt::format("{},{},{},{},{},{},{}\n", Num(p.target_share), Num(p.requested_share),
                       Num(p.allocation), Num(p.acceptance), Num(p.frag_rate), p.arrived, p.placed);
  }
  return Finish(out, "fill curve");
}

}  // namespace migsched
