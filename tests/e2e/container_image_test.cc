// The image of scripts/build-image.sh (registry-free: this build, its shared
// libraries from this machine's Debian packages, on an empty base), run with
// podman: the binary starts, answers --version, finds its data in the install
// layout, and the node daemon serves /healthz. Opt-in (MIGSCHED_IMAGE_TEST=1):
// it builds an image (about 20 s) and needs buildah and podman
// (MIGSCHED_WITH_PODMAN=1 scripts/setup.sh) on a machine where podman can
// start containers; $MIGSCHED_STORAGE_DRIVER (e.g. vfs) is passed to both.
// Where podman cannot start a container at all (a sandbox that refuses the
// runtime's setrlimit or cgroups, as the project's own build machines do), the
// test runs the image's exported filesystem with chroot as user 65532 instead
// and says so: the same binary, loader, libraries and data, without the runtime.
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
  std::string run = podman + " run --rm --network host " + image + " ";
  ShellResult version = Shell(run + "--version");
  // podman's own refusal to start any container here (not the image's answer).
  const bool no_runtime =
      version.exit_code != 0 && (version.out.find("OCI permission denied") != std::string::npos ||
                                 version.out.find("cgroups") != std::string::npos);
  const fs::path root = testing::MakeTempDir("image-root");
  if (no_runtime) {
    ASSERT_EQ(geteuid(), 0u) << "podman cannot start containers here (" << version.out
                             << ") and the chroot fallback needs root";
    const ShellResult exported =
        Shell("c=$(" + podman + " create " + image + ") && " + podman + " export $c | tar -C '" +
              root.string() + "' -x && " + podman + " rm $c >/dev/null");
    ASSERT_EQ(exported.exit_code, 0) << exported.out;
    fs::permissions(root, fs::perms(0755));  // the image's / (a temp folder is 0700)
    // What a container runtime provides: /proc (the binary finds its data next to
    // /proc/self/exe) and /dev (the daemon reads /dev/urandom).
    fs::create_directories(root / "proc");
    fs::create_directories(root / "dev");
    const ShellResult mounted = Shell("mount -t proc proc '" + (root / "proc").string() +
                                      "' && mount --bind /dev '" + (root / "dev").string() + "'");
    ASSERT_EQ(mounted.exit_code, 0) << mounted.out;
    std::printf(
        "podman cannot start containers on this machine (%s): running the image's "
        "filesystem with chroot as user 65532 instead\n",
        version.out.c_str());
    run = "chroot --userspec=65532:65532 '" + root.string() + "' /usr/local/bin/migsched ";
    version = Shell(run + "--version");
  }
  EXPECT_EQ(version.exit_code, 0) << version.out;
  EXPECT_EQ(version.out, "migsched 0.1.0\n");
  // The data folder of the install layout, found by the binary itself.
  const ShellResult profiles = Shell(run + "profiles --summary");
  EXPECT_EQ(profiles.exit_code, 0) << profiles.out;
  EXPECT_NE(profiles.out.find("/usr/local/share/migsched"), std::string::npos) << profiles.out;

  // The node daemon (fake GPUs) as user 65532, its state in the image's /tmp.
  const fs::path dir = no_runtime ? root / "etc/migsched" : testing::MakeTempDir("image");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms(0755));
  const int port = 20000 + ::getpid() % 20000;
  std::ofstream(dir / "daemon.yaml") << "listen: 127.0.0.1:" << port
                                     << "\nstate_dir: /tmp/state\n"
                                        "token: image-test-token-0123456789abcdef-0123\n"
                                        "backend: fake\ngpus: 1xA100-40GB\n";
  fs::permissions(dir / "daemon.yaml", fs::perms(0644));
  const std::string name = "migsched-test-" + std::to_string(::getpid());
  const std::string serve = " serve --config /etc/migsched/daemon.yaml";
  const ShellResult started =
      no_runtime ? Shell(run + serve + " >'" + root.string() + "/serve.log' 2>&1 & echo $! >'" +
                         root.string() + "/serve.pid'")
                 : Shell(podman + " run -d --rm --network host --name " + name + " -v " +
                         dir.string() + ":/etc/migsched:ro " + image + serve);
  ASSERT_EQ(started.exit_code, 0) << started.out;
  ShellResult health{-1, ""};
  for (int i = 0; i < 300 && health.exit_code != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = Shell("curl -sf http://127.0.0.1:" + std::to_string(port) + "/healthz");
  }
  if (no_runtime) {
    EXPECT_EQ(health.exit_code, 0) << Shell("cat '" + root.string() + "/serve.log'").out;
    Shell("kill $(cat '" + root.string() + "/serve.pid')");
    Shell("umount '" + (root / "proc").string() + "' '" + (root / "dev").string() + "'");
  } else {
    EXPECT_EQ(health.exit_code, 0) << Shell(podman + " logs " + name).out;
    Shell(podman + " rm -f " + name);
    fs::remove_all(dir);
  }
  Shell(podman + " rmi -f " + image);
  fs::remove_all(root);
}

}  // namespace
}  // namespace migsched
