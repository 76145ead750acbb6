#include "cli/context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/catalog_loader.h"

namespace migsched::cli {
namespace fs = std::filesystem;

namespace {

bool HasCatalog(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "gpus", ec);
}

fs::path ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path();
}

}  // namespace

StatusOr<std::string> FindDataDir(const std::string& override_dir) {
  if (!override_dir.empty()) {
    if (HasCatalog(override_dir)) return override_dir;
    return NotFoundError(fmt::format("--data-dir {}: no gpus/ folder there", override_dir));
  }
  if (const char* env = std::getenv("MIGSCHED_DATA_DIR"); env != nullptr && *env != '\0') {
    if (HasCatalog(env)) return std::string(env);
    return NotFoundError(fmt::format("MIGSCHED_DATA_DIR={}: no gpus/ folder there", env));
  }
  fs::path exe = ExecutableDir();
  for (const fs::path& cand : {exe / ".." / ".." / "data", exe / ".." / "data", exe / "data",
                               exe / ".." / "share" / "migsched"}) {
    if (!exe.empty() && HasCatalog(cand)) return fs::weakly_canonical(cand).string();
  }
  if (HasCatalog(MIGSCHED_SOURCE_DATA_DIR)) return std::string(MIGSCHED_SOURCE_DATA_DIR);
  return NotFoundError(
      "cannot find migsched's data folder (gpus/, traces/); set MIGSCHED_DATA_DIR or --data-dir");
}

StatusOr<const Catalog*> Context::catalog() {
  if (catalog_) return static_cast<const Catalog*>(catalog_.get());
  ASSIGN_OR_RETURN(std::string dir, FindDataDir(data_dir));
  auto cat = std::make_unique<Catalog>();
  RETURN_IF_ERROR(LoadCatalogPath((fs::path(dir) / "gpus").string(), cat.get()));
  for (const std::string& extra : extra_catalogs) {
    RETURN_IF_ERROR(LoadCatalogPath(extra, cat.get()));
  }
  catalog_ = std::move(cat);
  return static_cast<const Catalog*>(catalog_.get());
}

}  // namespace migsched::cli
