// The image of scripts/build-image.sh (registry-free: this build, its shared
// libraries from this machine's Debian packages, on an empty base), run with
// podman: the binary starts, answers --version, finds its data in the install
// layout, and the node daemon serves /healthz. Opt-in (MIGSCHED_IMAGE_TEST=1):
// it builds an image (about 20 s) and needs buildah and podman
// (MIGSCHED_WITH_PODMAN=1 scripts/setup.sh) on a machine where podman can
// start containers; $MIGSCHED_STORAGE_DRIVER (e.g. vfs) is passed to both.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;

struct ShellResult {
  int exit_code;
  std::string out;
};

ShellResult Shell(const std::string& cmd) {
  ShellResult r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Storage() {
  const char* d = std::getenv("MIGSCHED_STORAGE_DRIVER");
  return d != nullptr && *d != '\0' ? std::string(" --storage-driver ") + d : "";
}

TEST(ContainerImageTest, TheImageAnswersFindsItsDataAndServes) {
  const char* opt_in = std::getenv("MIGSCHED_IMAGE_TEST");
  if (opt_in == nullptr || std::string(opt_in) != "1") {
    GTEST_SKIP() << "opt-in: MIGSCHED_IMAGE_TEST=1 builds the image with scripts/build-image.sh "
                    "and runs it with podman (needs buildah and podman: "
                    "MIGSCHED_WITH_PODMAN=1 scripts/setup.sh)";
  }
  ASSERT_EQ(Shell("command -v buildah && command -v podman").exit_code, 0)
      << "MIGSCHED_IMAGE_TEST=1 needs buildah and podman (MIGSCHED_WITH_PODMAN=1 scripts/setup.sh)";
  const std::string build_dir =
      fs::path(testing::MigschedBinary()).parent_path().parent_path().string();
  const std::string image = "localhost/migsched-test:" + std::to_string(::getpid());
  const ShellResult built =
      Shell("'" + testing::SourceDir() + "/scripts/build-image.sh' '" + build_dir + "' " + image);
  ASSERT_EQ(built.exit_code, 0) << built.out;
  const std::string podman = "podman" + Storage();
  const std::string run = podman + " run --rm --network host ";

  const ShellResult version = Shell(run + image + " --version");
  EXPECT_EQ(version.exit_code, 0) << version.out;
  EXPECT_EQ(version.out, "migsched 0.1.0\n");
  // The data folder of the install layout, found by the binary itself.
  const ShellResult profiles = Shell(run + image + " profiles --summary");
  EXPECT_EQ(profiles.exit_code, 0) << profiles.out;
  EXPECT_NE(profiles.out.find("/usr/local/share/migsched"), std::string::npos) << profiles.out;

  // The node daemon (fake GPUs) as user 65532, its state in the image's /tmp.
  const fs::path dir = testing::MakeTempDir("image");
  fs::permissions(dir, fs::perms(0755));
  const int port = 20000 + ::getpid() % 20000;
  std::ofstream(dir / "daemon.yaml") << "listen: 127.0.0.1:" << port
                                     << "\nstate_dir: /tmp/state\ntoken: t\nbackend: fake\n"
                                        "gpus: 1xA100-40GB\n";
  fs::permissions(dir / "daemon.yaml", fs::perms(0644));
  const std::string name = "migsched-test-" + std::to_string(::getpid());
  const ShellResult started =
      Shell(podman + " run -d --rm --network host --name " + name + " -v " + dir.string() +
            ":/etc/migsched:ro " + image + " serve --config /etc/migsched/daemon.yaml");
  ASSERT_EQ(started.exit_code, 0) << started.out;
  ShellResult health{-1, ""};
  for (int i = 0; i < 300 && health.exit_code != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = Shell("curl -sf http://127.0.0.1:" + std::to_string(port) + "/healthz");
  }
  EXPECT_EQ(health.exit_code, 0) << Shell(podman + " logs " + name).out;
  Shell(podman + " rm -f " + name);
  Shell(podman + " rmi -f " + image);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace migsched
