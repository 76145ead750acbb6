// Daemon API load test: 10,000 POST /v1/jobs from 8 concurrent
// clients against `migsched serve` (fake backend, loopback, the scheduler
// paused so that every job stays queued: what is measured is the API, the
// validation and the durable SQLite commit that precedes each 201). Reports
// submissions per second and the p50/p99/max latency of one submission, then
// checks through GET /v1/jobs that every returned id is present exactly once
// (no lost, no duplicated job). Exit code 0 only if that holds.
//
// A plain main(), not Google Benchmark (one long run, not repetitions):
//   build/bin/daemon_load_bench [--migsched PATH] [--jobs N] [--clients C]
// (CLI11; --help lists them; exit code 2 on a bad argument). N defaults to 10000,
// C to 8, PATH to the `migsched` next to this binary. Bounded: loopback only,
// a temp state dir removed afterwards, the daemon stopped with SIGTERM.
//
// The client side is cpp-httplib's httplib::Client (what the daemon's own tests
// use): one keep-alive client per thread, the bearer token from the state dir.
#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A keep-alive client for the daemon at 127.0.0.1:port. The timeouts only bound a hung
// daemon: they are far above any latency measured here.
std::unique_ptr<httplib::Client> MakeClient(int port, const std::string& token) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_bearer_token_auth(token);
  c->set_connection_timeout(std::chrono::seconds(10));
  c->set_read_timeout(std::chrono::seconds(60));
  c->set_write_timeout(std::chrono::seconds(60));
  return c;
}

// The status of a response for the error messages; 0 if there was none (an I/O error).
int StatusOf(const httplib::Result& r) { return r ? r->status : 0; }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  std::string migsched = (fs::canonical("/proc/self/exe").parent_path() / "migsched").string();
  int jobs = 10000;
  int clients = 8;
  CLI::App app{"Daemon API load test: concurrent POST /v1/jobs against `migsched serve`"};
  app.add_option("--migsched", migsched, "the migsched binary to start")->capture_default_str();
  app.add_option("--jobs", jobs, "number of POST /v1/jobs")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--clients", clients, "concurrent keep-alive clients")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  std::string tmpl = (fs::temp_directory_path() / "migsched-load-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return 1;
  const fs::path dir = tmpl;
  const fs::path config = dir / "config.yaml";
  std::ofstream(config) << "listen: \"127.0.0.1:0\"\nstate_dir: " << (dir / "state").string()
                        << "\nbackend: fake\ngpus: 1xA100-40GB\ntick_ms: 100\n";

  int out[2];
  if (::pipe(out) != 0) return 1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 2);
    ::execl(migsched.c_str(), migsched.c_str(), "serve", "--config", config.c_str(), "--log-level",
            "warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  int port = 0;
  std::string printed;
  const auto start_deadline = Clock::now() + std::chrono::seconds(30);
  while (port == 0 && Clock::now() < start_deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char b[256];
    const ssize_t n = ::read(out[0], b, sizeof b);
    if (n <= 0) break;
    printed.append(b, static_cast<size_t>(n));
    const size_t at = printed.find("127.0.0.1:");
    if (at != std::string::npos && printed.find('\n', at) != std::string::npos) {
      port = std::atoi(printed.c_str() + at + 10);
    }
  }
  auto stop = [&](int code) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    fs::remove_all(dir);
    return code;
  };
  if (port == 0) {
    std::fprintf(stderr, "the daemon did not start (%s serve): %s\n", migsched.c_str(),
                 printed.c_str());
    return stop(1);
  }
  std::string token;
  std::ifstream(dir / "state" / "token") >> token;

  {
    const auto admin = MakeClient(port, token);
    const httplib::Result r = admin->Post("/v1/scheduler/pause", "", "application/json");
    if (!r || r->status != 200) {
      std::fprintf(stderr, "pause failed: %d %s\n", StatusOf(r),
                   r ? r->body.c_str() : httplib::to_string(r.error()).c_str());
      return stop(1);
    }
  }

  const std::string body = R"({"profile": "1g.5gb", "command": ["true"], "name": "load"})";
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::vector<std::vector<int64_t>> ids(static_cast<size_t>(clients));
  std::atomic<int> errors{0};
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const auto client = MakeClient(port, token);
      while (next.fetch_add(1) < jobs) {
        const auto s = Clock::now();
        const httplib::Result resp = client->Post("/v1/jobs", body, "application/json");
        latencies[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double>(Clock::now() - s).count());
        if (!resp || resp->status != 201) {
          ++errors;
          continue;
        }
        auto j = nlohmann::json::parse(resp->body, nullptr, false);
        if (j.is_object() && j.contains("id")) {
          ids[static_cast<size_t>(c)].push_back(j["id"].get<int64_t>());
        } else {
          ++errors;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  std::vector<double> all;
  std::map<int64_t, int> returned;
  for (int c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[static_cast<size_t>(c)].begin(),
               latencies[static_cast<size_t>(c)].end());
    for (int64_t id : ids[static_cast<size_t>(c)]) ++returned[id];
  }
  // Every acknowledged id must be listed exactly once, and nothing else.
  const auto lister = MakeClient(port, token);
  const httplib::Result list = lister->Get("/v1/jobs");
  if (!list || list->status != 200) {
    std::fprintf(stderr, "GET /v1/jobs failed: %d\n", StatusOf(list));
    return stop(1);
  }
  std::map<int64_t, int> listed;
  const nlohmann::json page = nlohmann::json::parse(list->body, nullptr, false);
  if (!page.is_object() || !page.contains("jobs")) {
    std::fprintf(stderr, "GET /v1/jobs: not a job list\n");
    return stop(1);
  }
  for (const auto& j : page["jobs"]) ++listed[j["id"].get<int64_t>()];
  int duplicated = 0, lost = 0, unknown = 0;
  for (const auto& [id, n] : returned) duplicated += n > 1 ? 1 : 0;
  for (const auto& [id, n] : listed) duplicated += n > 1 ? 1 : 0;
  for (const auto& [id, n] : returned) lost += listed.count(id) ? 0 : 1;
  for (const auto& [id, n] : listed) unknown += returned.count(id) ? 0 : 1;

  std::printf(
      "daemon API load test: %d POST /v1/jobs from %d clients (keep-alive), fake "
      "backend, scheduler paused\n",
      jobs, clients);
  std::printf("  wall time        %.2f s\n", wall);
  std::printf("  submissions/s    %.0f\n", static_cast<double>(jobs) / wall);
  std::printf("  latency p50      %.2f ms\n", 1e3 * Percentile(all, 0.50));
  std::printf("  latency p99      %.2f ms\n", 1e3 * Percentile(all, 0.99));
  std::printf("  latency max      %.2f ms\n", 1e3 * Percentile(all, 1.0));
  std::printf("  errors           %d\n", errors.load());
  std::printf("  ids returned     %zu, listed %zu, lost %d, duplicated %d, unknown %d\n",
              returned.size(), listed.size(), lost, duplicated, unknown);
  const bool ok = errors == 0 && lost == 0 && duplicated == 0 && unknown == 0 &&
                  static_cast<int>(returned.size()) == jobs;
  std::printf("  %s\n", ok ? "OK: no lost or duplicated job" : "FAILED");
  return stop(ok ? 0 : 1);
}
