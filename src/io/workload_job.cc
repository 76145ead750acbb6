#include "io/workload_job.h"

namespace migsched {

std::vector<Job> RequestsOf(const std::vector<WorkloadJob>& jobs) {
  return std::vector<Job>(jobs.begin(), jobs.end());
}

}  // namespace migsched
