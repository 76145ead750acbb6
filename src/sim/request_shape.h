// How the simulator names and sizes a job's request for reporting: by the
// profile it gets on the first GPU model of the cluster (cluster order) that
// offers it. Used as the per-profile key of the metrics (§9) and as the
// requested compute of fill mode (§9, FGD's method).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_REQUEST_SHAPE_H_
#define MIGSCHED_SIM_REQUEST_SHAPE_H_

#include <string>
#include <vector>

#include "core/gpu_model.h"
#include "core/job.h"

namespace migsched {

struct RequestShape {
  // "3g.20gb", "2x7g.40gb" (count > 1); a fraction resolves to its profile
  // ("gpu_fraction 0.4" -> "3g.20gb" on A100 40GB); Job::RequestString() when
  // no model offers the request.
  std::string key;
  // count × compute slices of that profile; 0 when no model offers it.
  int compute_slices = 0;
};

// `models`: the cluster's distinct models in cluster order (Cluster::models()).
RequestShape ShapeOnFirstModel(const std::vector<const GpuModel*>& models, const Job& job);

}  // namespace migsched

#endif  // MIGSCHED_SIM_REQUEST_SHAPE_H_
