// Catalog: the set of GPU models migsched knows, looked up by name.
//
// Lookup accepts the canonical name ("A100 40GB"), a short name
// ("A100-40GB"), or any alias (the names nvidia-smi prints, e.g.
// "NVIDIA A100-SXM4-40GB"), case-insensitively. Loading from files lives in
// io/catalog_loader.h; the core only holds the models.
//
// Thread-safety: immutable after construction; safe to share.
#ifndef MIGSCHED_CORE_CATALOG_H_
#define MIGSCHED_CORE_CATALOG_H_

#include <memory>
#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched {

class Catalog {
 public:
  Catalog() = default;
  // Adds a model. kInvalidArgument if any of its names is already taken.
  Status Add(GpuModel model);

  // The model whose canonical name, short name or alias equals `name`
  // (ASCII case-insensitive), or kNotFound listing the known short names.
  StatusOr<const GpuModel*> Find(std::string_view name) const;

  // Models in the order they were added. Pointers stay valid for the
  // catalog's lifetime.
  std::vector<const GpuModel*> models() const;

 private:
  std::vector<std::unique_ptr<GpuModel>> models_;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CATALOG_H_
