#include "sim/knowledge.h"

#include <fmt/format.h>

#include <algorithm>

namespace migsched {

std::string_view KnowledgeName(Knowledge k) {
  switch (k) {
    case Knowledge::kLimits:
      return "limits";
    case Knowledge::kKnown:
      return "known";
    case Knowledge::kUnknown:
      return "unknown";
  }
  return "limits";
}

StatusOr<Knowledge> ParseKnowledge(std::string_view s) {
  for (Knowledge k : {Knowledge::kLimits, Knowledge::kKnown, Knowledge::kUnknown}) {
    if (s == KnowledgeName(k)) return k;
  }
  return InvalidArgumentError(
      fmt::format("expected ends must be limits, known or unknown, got '{}'", s));
}

Job SchedulerVisibleJob(const WorkloadJob& job, Knowledge k) {
  Job v = job.request();
  switch (k) {
    case Knowledge::kLimits:
      break;
    case Knowledge::kKnown:
      v.time_limit_s =
          job.time_limit_s > 0 ? std::min(job.duration_s, job.time_limit_s) : job.duration_s;
      break;
    case Knowledge::kUnknown:
      v.time_limit_s = 0;
      break;
  }
  return v;
}

}  // namespace migsched
