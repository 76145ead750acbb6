// Shared by the daemon's benchmark programs (bench/daemon_*_bench.cc):
// `migsched serve` started as a child process on a temp state dir with the
// fake backend, found by the "listening on" line it prints, and a
// keep-alive cpp-httplib client for it. Loopback only; everything is
// removed by Stop().
#ifndef MIGSCHED_BENCH_DAEMON_BENCH_UTIL_H_
#define MIGSCHED_BENCH_DAEMON_BENCH_UTIL_H_

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace migsched::bench {

namespace fs = std::filesystem;
using BenchClock = std::chrono::steady_clock;

// A keep-alive client for the daemon at 127.0.0.1:port. The timeouts only
// bound a hung daemon: they are far above any latency measured.
inline std::unique_ptr<httplib::Client> MakeClient(int port, const std::string& token,
                                                   bool keep_alive = true) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_keep_alive(keep_alive);
  c->set_tcp_nodelay(true);
  c->set_bearer_token_auth(token);
  c->set_connection_timeout(std::chrono::seconds(10));
  c->set_read_timeout(std::chrono::seconds(60));
  c->set_write_timeout(std::chrono::seconds(60));
  return c;
}

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// One `migsched serve` process.
class DaemonUnderTest {
 public:
  // A temp dir (mode 0711: jobs run as another user and start in
  // <dir>/state-work/<id>) with config.yaml = the fake backend on `gpus`,
  // tick_ms, `extra` YAML lines.
  DaemonUnderTest(std::string migsched, const std::string& gpus, int tick_ms,
                  const std::string& extra = "", const std::string& listen = "127.0.0.1:0")
      : migsched_(std::move(migsched)) {
    std::string tmpl = (fs::temp_directory_path() / "migsched-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms(0711));
    std::ofstream(dir_ / "config.yaml")
        << "listen: \"" << listen << "\"\nstate_dir: " << (dir_ / "state").string()
        << "\nbackend: fake\ngpus: " << gpus << "\ntick_ms: " << tick_ms << "\n"
        << extra;
  }
  ~DaemonUnderTest() {
    Kill(SIGTERM);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  const fs::path& dir() const { return dir_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& token() const { return token_; }

  // Starts it (again, on the same state dir); false if it did not print its
  // port within 30 s. Its stderr goes to <dir>/daemon.log.
  bool Start() {
    int out[2];
    if (::pipe(out) != 0) return false;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const int log = ::open((dir_ / "daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(log, 2);
      ::close(out[0]);
      const std::string cfg = (dir_ / "config.yaml").string();
      ::execl(migsched_.c_str(), migsched_.c_str(), "serve", "--config", cfg.c_str(), "--log-level",
              "warn", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    port_ = 0;
    std::string printed;
    const auto deadline = BenchClock::now() + std::chrono::seconds(30);
    while (port_ == 0 && BenchClock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char b[256];
      const ssize_t n = ::read(out[0], b, sizeof b);
      if (n <= 0) break;
      printed.append(b, static_cast<size_t>(n));
      const size_t at = printed.find("127.0.0.1:");
      if (at != std::string::npos && printed.find('\n', at) != std::string::npos) {
        port_ = std::atoi(printed.c_str() + at + 10);
      }
    }
    ::close(out[0]);
    if (port_ == 0) {
      std::fprintf(stderr, "the daemon did not start (%s serve): %s\n", migsched_.c_str(),
                   printed.c_str());
      return false;
    }
    std::ifstream(dir_ / "state" / "token") >> token_;
    return true;
  }

  // Sends `sig` and reaps it (no-op if not running).
  void Kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Every job record, through the paged GET /v1/jobs; false on an error.
  bool ListAll(std::vector<nlohmann::json>* out) const {
    const auto c = MakeClient(port_, token_);
    int64_t after = 0;
    while (true) {
      const httplib::Result r =
          c->Get(("/v1/jobs?limit=1000&after=" + std::to_string(after)).c_str());
      if (!r || r->status != 200) return false;
      const nlohmann::json page = nlohmann::json::parse(r->body, nullptr, false);
      if (!page.is_object() || !page.contains("jobs")) return false;
      for (const auto& j : page["jobs"]) out->push_back(j);
      if (!page["next"].is_number()) return true;
      after = page["next"].get<int64_t>();
    }
  }

 private:
  std::string migsched_;
  fs::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string token_;
};

}  // namespace migsched::bench

#endif  // MIGSCHED_BENCH_DAEMON_BENCH_UTIL_H_
