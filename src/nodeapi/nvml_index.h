// NvmlIndex: a GPU's NVML device index (what `nvidia-smi -L` lists), the GPU
// number of the node API (docs/api.md) everywhere: placements, instances,
// requests, the views of GPUs, drains.
//
// A type of its own because a GPU has other numbers that are plain ints: its
// position in the daemon's Cluster (NodeModel::ClusterIndex) and its position
// in a controller's cluster view (ClusterView::GlobalGpu). Those differ from
// the NVML index as soon as a daemon manages some of a node's GPUs (`gpus:` in
// its config) or a view spans several nodes, so the compiler must not let one
// stand for the other:
//   * a number read at run time (a request's field, NVML's answer, a loop
//     variable) becomes an NvmlIndex only by saying so: NvmlIndex::Of(n);
//   * a number written in the source (GPU 0 of a test, -1 for "any")
//     converts by itself: the constructor from int is consteval, so an int
//     variable passed where an NvmlIndex is wanted does not compile;
//   * value() reads the number back (for NVML calls, JSON, messages).
// Each side converts in one place: NodeModel (nvml, ClusterIndex) in the
// daemon, ClusterView (NvmlIndexOf, GlobalGpu, ToRef, FromRef) in a controller.
// -1 means "none" or "any", where a field says so.
//
// Thread-safety: a value.
#ifndef MIGSCHED_NODEAPI_NVML_INDEX_H_
#define MIGSCHED_NODEAPI_NVML_INDEX_H_

#include <fmt/format.h>

#include <compare>
#include <ostream>

namespace migsched {

class NvmlIndex {
 public:
  constexpr NvmlIndex() = default;
  // A constant: GPU 3 written as 3. Implicit on purpose (see above); a run-time
  // int does not convert, since a consteval constructor needs a constant.
  consteval NvmlIndex(int constant) : index_(constant) {}  // NOLINT(google-explicit-constructor)
  // A number known at run time.
  static constexpr NvmlIndex Of(int index) {
    NvmlIndex i;
    i.index_ = index;
    return i;
  }
  constexpr int value() const { return index_; }
  constexpr auto operator<=>(const NvmlIndex&) const = default;

 private:
  int index_ = -1;
};

// JSON (nlohmann's, any basic_json) and streams (test output): the plain number.
template <typename Json>
void to_json(Json& j, NvmlIndex i) {
  j = i.value();
}
template <typename Json>
void from_json(const Json& j, NvmlIndex& i) {
  i = NvmlIndex::Of(j.template get<int>());
}
inline std::ostream& operator<<(std::ostream& os, NvmlIndex i) { return os << i.value(); }

}  // namespace migsched

// Formats as the plain number ("GPU {}" reads "GPU 3").
template <>
struct fmt::formatter<migsched::NvmlIndex> : fmt::formatter<int> {
  auto format(migsched::NvmlIndex i, fmt::format_context& ctx) const {
    return fmt::formatter<int>::format(i.value(), ctx);
  }
};

#endif  // MIGSCHED_NODEAPI_NVML_INDEX_H_
