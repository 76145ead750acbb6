#include "cli/context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>

#include "build_paths.h"
#include "io/catalog_loader.h"

// Compile-time facts of this build (CMakeLists.txt): the source tree's data
// folder, the build tree's folder of binaries, and the relative path from the
// install's bin folder to its data folder.
#ifndef MIGSCHED_SOURCE_DATA_DIR
#error "MIGSCHED_SOURCE_DATA_DIR must be defined by the build"
#endif
#ifndef MIGSCHED_BUILD_BIN_DIR
#define MIGSCHED_BUILD_BIN_DIR ""
#endif
#ifndef MIGSCHED_INSTALL_DATA_REL
#define MIGSCHED_INSTALL_DATA_REL "../share/migsched"
#endif

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

fs::path Canonical(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}

}  // namespace

StatusOr<DataDir> FindDataDir(const std::string& override_dir) {
  if (!override_dir.empty()) {
    if (HasCatalog(override_dir)) return DataDir{override_dir, "by --data-dir"};
    return NotFoundError(fmt::format("--data-dir {}: no gpus/ folder there", override_dir));
  }
  if (const char* env = std::getenv("MIGSCHED_DATA_DIR"); env != nullptr && *env != '\0') {
    if (HasCatalog(env)) return DataDir{env, "by MIGSCHED_DATA_DIR"};
    return NotFoundError(fmt::format("MIGSCHED_DATA_DIR={}: no gpus/ folder there", env));
  }
  std::string looked = "  --data-dir: not given\n  MIGSCHED_DATA_DIR: not set\n";
  const fs::path exe = ExecutableDir();
  if (exe.empty()) {
    looked += "  next to the binary: the binary's own path is unknown (/proc/self/exe)\n";
  } else {
    const fs::path installed = Canonical(exe / MIGSCHED_INSTALL_DATA_REL);
    const std::string how = fmt::format("next to the binary: <bin>/{}", MIGSCHED_INSTALL_DATA_REL);
    if (HasCatalog(installed)) return DataDir{installed.string(), how};
    looked += fmt::format("  {} ({}): no gpus/ folder there\n", installed.string(), how);
  }
  const fs::path source = MIGSCHED_SOURCE_DATA_DIR;
  const fs::path build_bin = MIGSCHED_BUILD_BIN_DIR;
  const bool in_build_tree =
      !exe.empty() && !build_bin.empty() && Canonical(exe) == Canonical(build_bin);
  if (in_build_tree && HasCatalog(source)) {
    return DataDir{source.string(),
                   fmt::format("in the source tree of this build: the binary runs from {}",
                               build_bin.string())};
  }
  if (in_build_tree) {
    looked += fmt::format("  {} (the source tree of this build): no gpus/ folder there\n",
                          source.string());
  } else {
    looked += fmt::format(
        "  {} (the source tree it was built from): not used, this binary is not the one in "
        "the build tree ({})\n",
        source.string(), build_bin.string());
  }
  return NotFoundError(
      fmt::format("cannot find migsched's data folder (a folder holding gpus/); looked at:\n{}"
                  "give --data-dir DIR or set MIGSCHED_DATA_DIR, or install with cmake --install "
                  "(data under <prefix>/share/migsched)",
                  looked));
}

std::string DescribeCatalogSources(const std::vector<CatalogSource>& sources,
                                   const std::string& prefix) {
  std::string out;
  for (const CatalogSource& s : sources) {
    out += fmt::format("{}{}: {}, {} model{} from {} file{}", prefix, s.kind, s.path, s.models,
                       s.models == 1 ? "" : "s", s.files.size(), s.files.size() == 1 ? "" : "s");
    if (!s.found_by.empty()) out += fmt::format(" (found {})", s.found_by);
    out += "\n";
  }
  return out;
}

StatusOr<const Catalog*> Context::catalog() {
  if (catalog_) return static_cast<const Catalog*>(catalog_.get());
  ASSIGN_OR_RETURN(DataDir dir, FindDataDir(data_dir));
  auto cat = std::make_unique<Catalog>();
  std::vector<CatalogSource> sources;
  auto load = [&](const std::string& path, std::string kind, std::string found_by) -> Status {
    CatalogSource s{path, std::move(kind), std::move(found_by), {}, 0};
    const size_t before = cat->models().size();
    RETURN_IF_ERROR(LoadCatalogPath(path, cat.get(), &s.files));
    s.models = static_cast<int>(cat->models().size() - before);
    sources.push_back(std::move(s));
    return Status();
  };
  RETURN_IF_ERROR(load((fs::path(dir.path) / "gpus").string(), "bundled", dir.how));
  for (const std::string& extra : extra_catalogs) RETURN_IF_ERROR(load(extra, "--catalog", ""));
  catalog_ = std::move(cat);
  sources_ = std::move(sources);
  if (verbose && err != nullptr) {
    *err << DescribeCatalogSources(sources_, "migsched: catalog ");
    for (const CatalogSource& s : sources_) {
      std::vector<std::string> names;
      for (const std::string& f : s.files) names.push_back(fs::path(f).filename().string());
      *err << fmt::format("migsched: catalog files ({}): {}\n", s.kind, fmt::join(names, ", "));
    }
  }
  return static_cast<const Catalog*>(catalog_.get());
}

}  // namespace migsched::cli
