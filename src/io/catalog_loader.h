// Loading the GPU catalog from the project's own JSON files (data/gpus/*.json,
// format in docs/formats/catalog.md).
//
// Every problem is reported with the file, the model, the profile and what is
// wrong, e.g. "data/gpus/a100-40gb.json: GPU model 'A100 40GB', profile
// '3g.20gb': placement 6:4 does not fit the 8-unit grid". A file that fails
// validation adds nothing to the catalog.
//
// Thread-safety: functions are reentrant.
#ifndef MIGSCHED_IO_CATALOG_LOADER_H_
#define MIGSCHED_IO_CATALOG_LOADER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched {

// Parses one catalog file holding one model (a JSON object). Errors:
// kNotFound (cannot open), kInvalidArgument (bad JSON or a key twice in one
// object, missing, mistyped or unknown field, facts rejected by
// GpuModel::Create), each prefixed with the path.
StatusOr<GpuModel> LoadGpuModelFile(const std::string& path);

// Parses a JSON text as a catalog model; `origin` names it in errors.
StatusOr<GpuModel> ParseGpuModelJson(const std::string& text, const std::string& origin);

// Adds the model(s) at `path` to `catalog`: a file, or a folder whose *.json
// files (not recursive, sorted by name; other files ignored) are each one
// model. All or nothing: on any error no model of `path` is added. Errors as
// above, plus kInvalidArgument for a name (canonical, short or alias, compared
// case-insensitively) used twice in `path` or already in the catalog, and
// kNotFound for a missing path or a folder without *.json files. On success,
// `files` (when given) gets the path of every file loaded, in load order.
Status LoadCatalogPath(const std::string& path, Catalog* catalog,
                       std::vector<std::string>* files = nullptr);

// The schema tag every catalog file carries in its `schema` field.
inline constexpr char kGpuModelSchema[] = "migsched-gpu-model/1";

// `model` in the catalog file format (keys in the documented order, no `notes`
// or `$comment`): ParseGpuModelJson(GpuModelToJson(m).dump(), ...) gives back
// a model with the same facts. Used by `migsched profiles --json`.
nlohmann::ordered_json GpuModelToJson(const GpuModel& model);

}  // namespace migsched

#endif  // MIGSCHED_IO_CATALOG_LOADER_H_
