// State shared by every subcommand: global flags and the loaded GPU catalog.
#ifndef MIGSCHED_CLI_CONTEXT_H_
#define MIGSCHED_CLI_CONTEXT_H_

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/status.h"

namespace migsched::cli {

// Where the bundled data folder (gpus/, traces/) was found, and by which rule.
struct DataDir {
  std::string path;  // the folder holding gpus/
  std::string how;  // e.g. "MIGSCHED_DATA_DIR", "installed next to the binary (…/share/migsched)"
};

// One catalog path that was loaded: the bundled gpus/ folder or a --catalog path.
struct CatalogSource {
  std::string path;                // as given (a file or a folder)
  std::string kind;                // "bundled" or "--catalog"
  std::string found_by;            // bundled: DataDir::how; empty for --catalog
  std::vector<std::string> files;  // every file loaded from it, in load order
  int models = 0;                  // models it added
};

struct Context {
  // --catalog PATH (repeatable): extra catalog files or folders, loaded after
  // the bundled data/gpus/ catalog.
  std::vector<std::string> extra_catalogs;
  // --data-dir DIR: where the bundled data lives (default: found at run time,
  // see FindDataDir()).
  std::string data_dir;
  bool quiet = false;    // --quiet: no progress on stderr
  bool verbose = false;  // --verbose: say on stderr which data folder and catalog files are used

  std::ostream* out = nullptr;  // stdout
  std::ostream* err = nullptr;  // stderr

  // Loads the catalog on first use (bundled + extra) and keeps it. With
  // `verbose`, writes one line per catalog source to `err` ("migsched: catalog
  // bundled: …", listing the files).
  StatusOr<const Catalog*> catalog();
  // What catalog() loaded, in load order (empty before the first call or on error).
  const std::vector<CatalogSource>& catalog_sources() const { return sources_; }

 private:
  std::unique_ptr<Catalog> catalog_;
  std::vector<CatalogSource> sources_;
};

// The bundled data folder: the first of these that holds a gpus/ folder.
//  1. `override_dir` (--data-dir), if not empty: an error if it has no gpus/;
//  2. $MIGSCHED_DATA_DIR, if set and not empty: an error if it has no gpus/;
//  3. the installed layout: <folder of the running binary>/../share/migsched
//     (the relative path from the install's bin to its data folder, fixed by
//     CMake's install directories at build time);
//  4. the source tree this binary was built from (its data/), only when the
//     running binary is the one in that build tree (build/bin/migsched): an
//     installed or copied binary never reads a build machine's source tree.
// kNotFound lists every place looked at and why it was not used.
StatusOr<DataDir> FindDataDir(const std::string& override_dir);

// One line per source, "bundled: DIR/gpus, 16 files (found …)", each prefixed by `prefix`.
std::string DescribeCatalogSources(const std::vector<CatalogSource>& sources,
                                   const std::string& prefix);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_CONTEXT_H_
