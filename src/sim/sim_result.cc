#include "sim/sim_result.h"

#include <fmt/format.h>

#include <cmath>

namespace migsched {
namespace {

bool SameTime(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

std::string_view JobOutcomeName(JobOutcome o) {
  switch (o) {
    case JobOutcome::kCompleted:
      return "completed";
    case JobOutcome::kTimeout:
      return "timeout";
    case JobOutcome::kRejected:
      return "rejected";
    case JobOutcome::kPlaced:
      return "placed";
    case JobOutcome::kFailed:
      return "failed";
  }
  return "?";
}

bool JobRecord::operator==(const JobRecord& o) const {
  return id == o.id && name == o.name && request == o.request && SameTime(arrival_s, o.arrival_s) &&
         SameTime(placed_s, o.placed_s) && SameTime(start_s, o.start_s) &&
         SameTime(end_s, o.end_s) && SameTime(wait_s, o.wait_s) && SameTime(jct_s, o.jct_s) &&
         instances == o.instances && outcome == o.outcome && reason == o.reason &&
         migrations == o.migrations && SameTime(duration_s, o.duration_s) &&
         SameTime(time_limit_s, o.time_limit_s);
}

ClusterSnapshot SnapshotCluster(const Cluster& cluster, double time_s) {
  ClusterSnapshot snap;
  snap.time_s = time_s;
  snap.frag_rate = cluster.FragmentationRate();
  snap.utilization = cluster.Utilization();
  for (int g = 0; g < cluster.size(); ++g) {
    const GpuState& gs = cluster.gpu(g);
    GpuSnapshot gpu;
    gpu.model = gs.model().name();
    gpu.placement_units = gs.model().placement_units();
    gpu.fragcost = gs.fragcost();
    for (const Instance& in : gs.instances()) {
      const Profile& p = gs.model().profile(in.profile);
      gpu.instances.push_back(SnapshotInstance{p.name, in.start, p.size(), in.job});
    }
    snap.gpus.push_back(std::move(gpu));
  }
  return snap;
}

std::string DescribeInstances(const Cluster& cluster, const std::vector<InstanceRef>& instances) {
  std::string out;
  for (const InstanceRef& in : instances) {
    if (!out.empty()) out += ';';
    out += fmt::format("{}:{}@{}", in.gpu, cluster.gpu(in.gpu).model().profile(in.profile).name,
                       in.start);
  }
  return out;
}

}  // namespace migsched
