#include "cli/memory_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace migsched::cli {
namespace {

// The first number of a one-line file ("max" and unreadable files give 0).
double ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return 0;
  try {
    return std::stod(word);
  } catch (...) {
    return 0;
  }
}

}  // namespace

double EstimateMemoryBytes(const RunShape& s) {
  const double jobs = static_cast<double>(std::max<int64_t>(s.jobs, 0));
  double kept = 0;
  if (s.record_jobs) kept += kRecordBytesPerJob;
  if (s.record_timeline) kept += kTimelineBytesPerJob;
  return kBaseBytes +
         jobs * (std::max(s.workloads, 1) * kWorkloadBytesPerJob +
                 std::max(s.parallel_runs, 1) * kRunBytesPerJob + std::max(s.total_runs, 1) * kept);
}

double AvailableMemoryBytes() {
  double available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      double kib = 0;
      if (fields >> kib) available = kib * 1024;
      break;
    }
  }
  // cgroup v2: the room under this process's group limit, when it has one.
  std::ifstream cgroup("/proc/self/cgroup");
  std::string group;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) == 0) group = line.substr(3);
  }
  const std::string dir = "/sys/fs/cgroup" + (group == "/" ? std::string() : group);
  const double limit = ReadNumber(dir + "/memory.max");
  if (limit > 0) {
    const double room = std::max(0.0, limit - ReadNumber(dir + "/memory.current"));
    available = available > 0 ? std::min(available, room) : room;
  }
  return available;
}

std::string FormatBytes(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  return fmt::format("{:.0f} MB", bytes / 1e6);
}

Status CheckMemory(const RunShape& shape, double available_bytes) {
  if (!(available_bytes > 0)) return Status();
  const double need = EstimateMemoryBytes(shape);
  if (need <= available_bytes) return Status();
  std::string what = fmt::format("{} jobs", shape.jobs);
  if (shape.workloads > 1) what += fmt::format(" in each of {} workloads", shape.workloads);
  if (shape.parallel_runs > 1) what += fmt::format("; {} simulations at once", shape.parallel_runs);
  return Status(StatusCode::kResourceExhausted,
                fmt::format("this run needs about {} of memory ({}) but {} is available: lower "
                            "--jobs{}, or give --no-memory-check to run anyway",
                            FormatBytes(need), what, FormatBytes(available_bytes),
                            shape.parallel_runs > 1 ? " or --threads" : ""));
}

}  // namespace migsched::cli
