// Compiled by the nvml_index_* tests (CMakeLists.txt), never linked: what an
// NvmlIndex lets through and what it stops. Without a MIGSCHED_MISUSE_* macro
// it must compile (the control: the mistakes below are the only reason the
// other tests fail); with one, the compiler must refuse it.
#include <string>
#include <type_traits>

#include "cluster/cluster_view.h"
#include "nodeapi/api_types.h"

namespace migsched {

static_assert(!std::is_convertible_v<NvmlIndex, int>, "an NVML index is not read as an int");

int Uses(const ClusterView& view, const GpuView& g, int global_gpu, int node) {
  PlacementRef written{0, "1g.5gb", 6};                 // a constant: GPU 0
  PlacementRef read{NvmlIndex::Of(node), "1g.5gb", 6};  // a run-time number, said so
  PlacementRef mapped = view.ToRef(global_gpu, 0, 0);   // the view converts
  const int back = view.GlobalGpu(node, g.index);       // and back
#ifdef MIGSCHED_MISUSE_RUNTIME_INT
  PlacementRef wrong{global_gpu, "1g.5gb", 6};  // a cluster position as an NVML index
#endif
#ifdef MIGSCHED_MISUSE_READ_AS_INT
  const int wrong = g.index;  // an NVML index as a cluster position
  (void)view.cluster().gpu(wrong);
#endif
#ifdef MIGSCHED_MISUSE_GLOBAL_LOOKUP
  (void)view.GlobalGpu(node, global_gpu);  // GlobalGpu takes an NVML index
#endif
  return written.gpu.value() + read.gpu.value() + mapped.gpu.value() + back;
}

}  // namespace migsched
