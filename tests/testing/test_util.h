// Helpers shared by the tests: the bundled catalog, paths to test data, and a
// way to run the built `migsched` binary and capture what it prints.
#ifndef MIGSCHED_TESTS_TESTING_TEST_UTIL_H_
#define MIGSCHED_TESTS_TESTING_TEST_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/gpu_model.h"

namespace migsched::testing {

// The bundled catalog (data/gpus/), loaded once; aborts the test on error.
const Catalog& BundledCatalog();
// Model from the bundled catalog by any of its names; fails the test if absent.
const GpuModel& Model(const std::string& name);

// The seed of a randomized test: the environment's MIGSCHED_SEED (to rerun one seed), else
// `fallback`. Tests print the seed they ran with.
uint64_t TestSeed(uint64_t fallback);

// Absolute paths.
std::string SourceDir();       // the repository root
std::string TestDataDir();     // tests/data
std::string MigschedBinary();  // build/bin/migsched

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the migsched binary with `args` (no shell; stdin from /dev/null).
CommandResult RunMigsched(const std::vector<std::string>& args);
// Runs `binary` (a path) the same way. `env`: changes to the child's environment, "NAME=value"
// to set, "NAME" to unset.
CommandResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                         const std::vector<std::string>& env);

// Writes `content` to a fresh file under the test's temp dir and returns its path.
std::string WriteTempFile(const std::string& name, const std::string& content);

// A fresh, empty directory <temp>/<prefix>-XXXXXX (mkdtemp); fails the test
// if it cannot be made. Not removed afterwards.
std::filesystem::path MakeTempDir(const std::string& prefix);
// The whole file as bytes ("" if it cannot be read).
std::string ReadFile(const std::filesystem::path& path);
// The file at `relative` under tests/data (e.g. "slurm/sinfo.json").
std::string ReadTestData(const std::string& relative);
// The file parsed as JSON (throws nlohmann::json::parse_error if it is not).
nlohmann::json ReadJson(const std::filesystem::path& path);

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_TESTING_TEST_UTIL_H_
