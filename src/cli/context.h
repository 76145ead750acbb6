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

struct Context {
  // --catalog PATH (repeatable): extra catalog files or folders, loaded after
  // the bundled data/gpus/ catalog.
  std::vector<std::string> extra_catalogs;
  // --data-dir DIR: where the bundled data lives (default: found at run time,
  // see FindDataDir()).
  std::string data_dir;
  bool quiet = false;  // --quiet: no progress on stderr

  std::ostream* out = nullptr;  // stdout
  std::ostream* err = nullptr;  // stderr

  // Loads the catalog on first use (bundled + extra) and keeps it.
  StatusOr<const Catalog*> catalog();

 private:
  std::unique_ptr<Catalog> catalog_;
};

// The bundled data folder: $MIGSCHED_DATA_DIR if set, else ../../data and
// ../data next to the executable (build/bin/migsched -> data/), else the
// source tree's data/ compiled in. kNotFound if none holds gpus/.
StatusOr<std::string> FindDataDir(const std::string& override_dir);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_CONTEXT_H_
