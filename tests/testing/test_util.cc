#include "testing/test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "build_paths.h"
#include "io/catalog_loader.h"

namespace migsched::testing {
namespace fs = std::filesystem;

std::string SourceDir() { return fs::path(MIGSCHED_SOURCE_DATA_DIR).parent_path().string(); }
std::string TestDataDir() { return SourceDir() + "/tests/data"; }
std::string MigschedBinary() { return MIGSCHED_BINARY; }

uint64_t TestSeed(uint64_t fallback) {
  const char* env = std::getenv("MIGSCHED_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : fallback;
}

const Catalog& BundledCatalog() {
  static const Catalog* catalog = [] {
    auto* c = new Catalog();
    Status st = LoadCatalogPath(std::string(MIGSCHED_SOURCE_DATA_DIR) + "/gpus", c);
    if (!st.ok()) {
      fprintf(stderr, "cannot load the bundled catalog: %s\n", st.ToString().c_str());
      std::abort();
    }
    return c;
  }();
  return *catalog;
}

const GpuModel& Model(const std::string& name) {
  auto m = BundledCatalog().Find(name);
  if (!m.ok()) {
    ADD_FAILURE() << m.status().ToString();
    std::abort();
  }
  return **m;
}

namespace {
std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

CommandResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  CommandResult r;
  char out_tmpl[] = "/tmp/migsched_out_XXXXXX";
  char err_tmpl[] = "/tmp/migsched_err_XXXXXX";
  int out_fd = mkstemp(out_tmpl);
  int err_fd = mkstemp(err_tmpl);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    for (const std::string& e : env) {
      const size_t eq = e.find('=');
      if (eq == std::string::npos) {
        unsetenv(e.c_str());
      } else {
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
    }
    std::vector<char*> argv;
    std::string bin = binary;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(out_fd);
  close(err_fd);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadAll(out_tmpl);
  r.err = ReadAll(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return r;
}

CommandResult RunMigsched(const std::vector<std::string>& args) {
  return RunProgram(MigschedBinary(), args, {});
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / ("migsched_tests_" + std::to_string(getpid())) /
                 (info ? std::string(info->test_suite_name()) + "." + info->name() : "global");
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << content;
  return p.string();
}

std::filesystem::path MakeTempDir(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr) << tmpl;
  return tmpl;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadTestData(const std::string& relative) {
  return ReadFile(TestDataDir() + "/" + relative);
}

nlohmann::json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace migsched::testing
