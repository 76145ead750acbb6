#include "io/alibaba_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include "io/input_file.h"
#include "io/integer_input.h"
#include "io/strict_csv.h"

namespace migsched {
namespace {

Status FieldError(const std::string& origin, int line, std::string_view field,
                  const std::string& reason) {
  return InvalidArgumentError(fmt::format("{}:{}: field '{}': {}", origin, line, field, reason));
}

bool ParseDouble(const std::string& s, double* v) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *v);
  return ec == std::errc() && ptr == end && std::isfinite(*v);
}

// Adds `n` pods to the group `reason`, keeping first-occurrence order.
void CountSkipped(std::vector<SkippedPods>* skipped, const std::string& reason, int64_t n = 1) {
  for (SkippedPods& s : *skipped) {
    if (s.reason == reason) {
      s.count += n;
      return;
    }
  }
  skipped->push_back(SkippedPods{n, reason});
}

}  // namespace

std::string SkippedPods::ToString() const { return fmt::format("{} {}", count, reason); }

StatusOr<std::vector<AlibabaPod>> ParseAlibabaPods(std::istream& in, const std::string& origin) {
  ASSIGN_OR_RETURN(CsvTable table, ReadStrictCsv(in, origin));
  struct Col {
    const char* name;
    bool required;
    int index = -1;
  };
  Col name{"name", true}, num_gpu{"num_gpu", true}, gpu_milli{"gpu_milli", true}, qos{"qos", false},
      phase{"pod_phase", false}, creation{"creation_time", true}, deletion{"deletion_time", true},
      scheduled{"scheduled_time", true};
  for (Col* c : {&name, &num_gpu, &gpu_milli, &qos, &phase, &creation, &deletion, &scheduled}) {
    c->index = table.ColumnIndex(c->name);
    if (c->required && c->index < 0) {
      return InvalidArgumentError(
          fmt::format("{}:{}: missing required column '{}' (an Alibaba v2023 pod list has "
                      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                      "creation_time,deletion_time,scheduled_time)",
                      origin, table.header_line, c->name));
    }
  }
  std::vector<AlibabaPod> pods;
  pods.reserve(table.rows.size());
  std::unordered_map<std::string, int> first_line;
  for (const CsvRow& row : table.rows) {
    const int line = row.line;
    auto cell = [&](const Col& c) -> const std::string& {
      static const std::string kEmpty;
      return c.index < 0 ? kEmpty : row.fields[c.index];
    };
    AlibabaPod pod;
    pod.line = line;
    pod.name = cell(name);
    if (pod.name.empty()) return FieldError(origin, line, "name", "missing (required)");
    auto [it, inserted] = first_line.emplace(pod.name, line);
    if (!inserted) {
      return FieldError(
          origin, line, "name",
          fmt::format("duplicate pod name '{}' (first on line {})", pod.name, it->second));
    }
    int64_t v = 0;
    switch (ReadIntegerText(cell(num_gpu), 0, kMaxPodGpus, &v)) {
      case IntegerInput::kInRange:
        break;
      case IntegerInput::kAboveRange:
        return FieldError(origin, line, "num_gpu",
                          fmt::format("'{}' is out of range: must be an integer from 0 to {}",
                                      cell(num_gpu), kMaxPodGpus));
      case IntegerInput::kNotInteger:
      case IntegerInput::kBelowRange:
        return FieldError(origin, line, "num_gpu",
                          fmt::format("'{}' must be an integer >= 0", cell(num_gpu)));
    }
    pod.num_gpu = static_cast<int>(v);
    if (ReadIntegerText(cell(gpu_milli), 0, 1000, &v) != IntegerInput::kInRange) {
      return FieldError(origin, line, "gpu_milli",
                        fmt::format("'{}' must be an integer in [0, 1000]", cell(gpu_milli)));
    }
    pod.gpu_milli = static_cast<int>(v);
    if (pod.num_gpu >= 1 && pod.gpu_milli == 0) {
      return FieldError(
          origin, line, "gpu_milli",
          fmt::format("'0' must be in [1, 1000] for a GPU pod (num_gpu {})", pod.num_gpu));
    }
    if (pod.num_gpu > 1 && pod.gpu_milli != 1000) {
      return FieldError(origin, line, "gpu_milli",
                        fmt::format("'{}' must be 1000 for a multi-GPU pod (num_gpu {})",
                                    pod.gpu_milli, pod.num_gpu));
    }
    pod.qos = cell(qos);
    pod.pod_phase = cell(phase);
    double t = 0;
    if (!ParseDouble(cell(creation), &t) || t < 0) {
      return FieldError(origin, line, "creation_time",
                        fmt::format("'{}' must be a number >= 0", cell(creation)));
    }
    pod.creation_time = t;
    for (auto [col, out] :
         {std::pair{&scheduled, &pod.scheduled_time}, std::pair{&deletion, &pod.deletion_time}}) {
      const std::string& s = cell(*col);
      if (s.empty()) continue;
      if (!ParseDouble(s, &t) || t < 0) {
        return FieldError(origin, line, col->name,
                          fmt::format("'{}' must be a number >= 0 or empty", s));
      }
      *out = t;
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

WorkloadJob AlibabaPodToJob(const AlibabaPod& pod, const AlibabaOptions& options) {
  WorkloadJob job;
  job.name = pod.name;
  job.arrival_s = pod.creation_time;
  job.fraction_rule = options.fraction_rule;
  if (pod.num_gpu > 1) {
    job.count = pod.num_gpu;
    job.gpu_fraction = 1.0;
  } else {
    job.count = 1;
    job.gpu_fraction = pod.gpu_milli / 1000.0;
  }
  if (pod.scheduled_time && pod.deletion_time) {
    job.duration_s = *pod.deletion_time - *pod.scheduled_time;
  }
  job.latency_sensitive = options.ls_is_latency_sensitive && pod.qos == "LS";
  job.migratable = options.migratable;
  return job;
}

StatusOr<AlibabaWorkload> ParseAlibabaPodList(std::istream& in, const std::string& origin,
                                              const AlibabaOptions& options) {
  if (options.max_jobs < 0) {
    return InvalidArgumentError(
        fmt::format("{}: max_jobs must be >= 0 (0 = all), got {}", origin, options.max_jobs));
  }
  ASSIGN_OR_RETURN(std::vector<AlibabaPod> pods, ParseAlibabaPods(in, origin));
  AlibabaWorkload w;
  w.pods = static_cast<int64_t>(pods.size());
  for (const AlibabaPod& pod : pods) {
    if (pod.num_gpu == 0) {
      CountSkipped(&w.skipped, "CPU-only pods (num_gpu 0)");
      continue;
    }
    if (!pod.scheduled_time) {
      CountSkipped(&w.skipped, pod.pod_phase == "Pending"
                                   ? std::string("pending pods without scheduled_time")
                                   : fmt::format("{} pods without scheduled_time",
                                                 pod.pod_phase.empty() ? "other" : pod.pod_phase));
      continue;
    }
    if (!pod.deletion_time) {
      CountSkipped(&w.skipped, "pods without deletion_time");
      continue;
    }
    if (*pod.deletion_time <= *pod.scheduled_time) {
      CountSkipped(&w.skipped, "pods with deletion_time <= scheduled_time (no run time)");
      continue;
    }
    // The run time (deletion - scheduled) within the durations a workload may give: beyond them
    // the job's own check named a generated field (duration_s) of no line (a trial's pod with
    // deletion_time 1e300).
    if (const double run = *pod.deletion_time - *pod.scheduled_time;
        !(run >= kMinDurationS && run <= kMaxDurationS)) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: deletion_time - scheduled_time must be from {:g} to {:g} s (the run time), got "
          "{:g}",
          origin, pod.line, kMinDurationS, kMaxDurationS, run));
    }
    w.jobs.push_back(AlibabaPodToJob(pod, options));
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const WorkloadJob& a, const WorkloadJob& b) {
    return a.arrival_s < b.arrival_s;
  });
  if (options.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) > options.max_jobs) {
    const int64_t dropped = static_cast<int64_t>(w.jobs.size()) - options.max_jobs;
    w.jobs.resize(static_cast<size_t>(options.max_jobs));
    CountSkipped(&w.skipped,
                 fmt::format("GPU pods beyond max_jobs {} (the earliest by creation_time are kept)",
                             options.max_jobs),
                 dropped);
  }
  return w;
}

StatusOr<AlibabaWorkload> LoadAlibabaPodList(const std::string& path,
                                             const AlibabaOptions& options) {
  ASSIGN_OR_RETURN(std::ifstream in, OpenInputFile(path, "Alibaba pod list"));
  return ParseAlibabaPodList(in, path, options);
}

}  // namespace migsched
