// docs/kubernetes.md "Try it on one machine", run as written: the shell block
// after the marker "<!-- try-it -->" with this build's migsched first on PATH
// and ports of its own. Its output is checked against what the section says
// it prints (values derived by hand: one node daemon of two A100 40GB, so
// gpu-node-1 fits a 3g.20gb and the two other nodes have no daemon).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "testing/test_util.h"

namespace migsched {
namespace {

// A port the kernel had free a moment ago.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string TryItBlock() {
  const std::string doc = testing::ReadFile(testing::SourceDir() + "/docs/kubernetes.md");
  const size_t marker = doc.find("<!-- try-it -->");
  if (marker == std::string::npos) return "";
  const size_t open = doc.find("```sh\n", marker);
  const size_t close = doc.find("\n```", open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return doc.substr(open + 6, close - open - 6 + 1);
}

TEST(K8sTryItTest, TheDocsOneMachineSectionRunsAsWritten) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "curl is not installed (scripts/setup.sh installs it): the section uses it";
  }
  const std::string block = TryItBlock();
  ASSERT_NE(block, "") << "no shell block after <!-- try-it --> in docs/kubernetes.md";
  const std::filesystem::path dir = testing::MakeTempDir("try-it");
  const std::string script = (dir / "try-it.sh").string();
  {
    FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(block.c_str(), f);
    std::fclose(f);
  }
  const std::string bin = std::filesystem::path(testing::MigschedBinary()).parent_path().string();
  const std::string cmd = "cd '" + testing::SourceDir() + "' && PATH='" + bin +
                          "':\"$PATH\" DAEMON_PORT=" + std::to_string(FreePort()) +
                          " EXTENDER_PORT=" + std::to_string(FreePort()) +
                          " PROBE_PORT=" + std::to_string(FreePort()) + " bash -u '" + script +
                          "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status)) << out;
  for (const std::string expected : {
           R"({"ready":true,"reason":""})",
           R"("NodeNames":["gpu-node-1"])",
           R"x("gpu-node-2":"gpu-node-2 has no migsched node daemon (known: gpu-node-1)")x",
           R"x("gpu-node-3":"gpu-node-3 has no migsched node daemon (known: gpu-node-1)")x",
           R"({"Host":"gpu-node-1","Score":10})",
           R"({"Host":"gpu-node-2","Score":0})",
           "refused: no certificate",
           "migsched_extender_requests_total{verb=\"filter\"} 1\n",
           "migsched_extender_requests_total{verb=\"prioritize\"} 1\n",
           "migsched_extender_requests_total{verb=\"bind\"} 0\n",
       }) {
    EXPECT_NE(out.find(expected), std::string::npos) << expected << "\n--- output:\n" << out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace migsched
