#include "sim/request_shape.h"

#include <fmt/format.h>

namespace migsched {

RequestShape ShapeOnFirstModel(const std::vector<const GpuModel*>& models, const Job& job) {
  for (const GpuModel* m : models) {
    const int p = ResolveProfile(*m, job);
    if (p < 0) continue;
    const Profile& prof = m->profile(p);
    RequestShape s;
    s.key = job.count > 1 ? fmt::format("{}x{}", job.count, prof.name) : prof.name;
    s.compute_slices = job.count * prof.compute_slices;
    return s;
  }
  return RequestShape{job.RequestString(), 0};
}

}  // namespace migsched
