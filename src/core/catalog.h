// Catalog: the set of GPU models migsched knows, looked up by name.
//
// Lookup accepts the canonical name ("A100 40GB"), a short name
// ("A100-40GB"), or any alias (the names nvidia-smi prints, e.g.
// "NVIDIA A100-SXM4-40GB"), case-insensitively. Loading from files lives in
// io/catalog_loader.h; the core only holds the models.
//
// Profile names are looked up through NormalizeProfileName (below), the one
// place that decides which spellings of a profile name are accepted: traces,
// daemon requests and command-line flags all reach it, through
// Catalog::FindProfileName or GpuModel::FindProfile.
//
// Thread-safety: immutable after construction; safe to share.
#ifndef MIGSCHED_CORE_CATALOG_H_
#define MIGSCHED_CORE_CATALOG_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched {

// A MIG profile name as users write it, reduced to the catalog's spelling:
// surrounding blanks dropped, ASCII lower case, and one leading
// "nvidia.com/mig-" (the Kubernetes device plugin's resource name) or "mig-"
// (as in nvidia-smi's MIG device names) removed. "1G.5GB", "MIG-1g.5gb" and
// "nvidia.com/mig-1g.5gb" all give "1g.5gb"; a name already in catalog
// spelling is returned unchanged. Pure; it does not check that the name exists.
std::string NormalizeProfileName(std::string_view name);

class Catalog {
 public:
  Catalog() = default;
  // Adds a model; `origin` says where it came from (its file), for errors. kInvalidArgument if
  // any of its names is already taken.
  Status Add(GpuModel model, std::string origin = {});

  // The model whose canonical name, short name or alias equals `name`
  // (ASCII case-insensitive), or kNotFound listing the known short names.
  StatusOr<const GpuModel*> Find(std::string_view name) const;

  // The catalog's spelling of the profile `name` (NormalizeProfileName),
  // when at least one model offers a profile of that name. kNotFound
  // otherwise: "unknown profile '9g.99gb' (known: 1g.5gb, ...)", listing
  // every profile name of the catalog once, by compute slices, then memory,
  // then name. Whether the GPUs of a given cluster offer it is the caller's
  // question (a known profile that no GPU of a cluster offers is a rejection
  // there, not an input error).
  StatusOr<std::string> FindProfileName(std::string_view name) const;

  // Models in the order they were added. Pointers stay valid for the
  // catalog's lifetime.
  std::vector<const GpuModel*> models() const;
  // The origin `model` (one of models()) was added with; empty if none was given.
  const std::string& OriginOf(const GpuModel* model) const;

 private:
  std::vector<std::unique_ptr<GpuModel>> models_;
  std::vector<std::string> origins_;  // origins_[i]: that of models_[i]
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CATALOG_H_
