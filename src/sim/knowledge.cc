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

Job SchedulerVisibleJob(const Job& job, Knowledge k) {
  Job v;
  v.name = job.name;
  v.arrival_s = job.arrival_s;
  v.profile = job.profile;
  v.gpu_fraction = job.gpu_fraction;
  v.fraction_rule = job.fraction_rule;
  v.count = job.count;
  v.latency_sensitive = job.latency_sensitive;
  v.migratable = job.migratable;
  v.time_limit_s = k == Knowledge::kUnknown ? 0 : job.time_limit_s;
  switch (k) {
    case Knowledge::kLimits:
      v.duration_s = job.time_limit_s;
      break;
    case Knowledge::kKnown:
      v.duration_s =
          job.time_limit_s > 0 ? std::min(job.duration_s, job.time_limit_s) : job.duration_s;
      break;
    case Knowledge::kUnknown:
      v.duration_s = 0;
      break;
  }
  // pcie_gbps and alpha keep Job's defaults (0, 1): the run's truth.
  return v;
}

}  // namespace migsched
