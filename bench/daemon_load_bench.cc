// Daemon API load test against `migsched serve` (fake backend, loopback):
//
//   --mode submit   N POST /v1/jobs from C concurrent clients, the scheduler
//                   paused so that every job stays queued: what is measured is
//                   the API, the validation and the durable commit that
//                   precedes each 201 (group commit: one fsync per batch).
//                   --connections keep-alive (one connection per client) or
//                   new (a new TCP connection per request). Reports
//                   submissions/s and p50/p99/max latency, then checks through
//                   the paged GET /v1/jobs that every returned id is there
//                   exactly once (no lost, no duplicated job).
//   --mode healthz  opens --idle idle TCP connections and --followers
//                   `GET /v1/jobs/1/log?follow=1` streams of a job that runs
//                   for the whole test, then times N sequential /healthz
//                   requests on a fresh keep-alive connection.
// Exit code 0 only if every request succeeded (and, for submit, no job was
// lost or duplicated).
//
// A plain main(), not Google Benchmark (one long run, not repetitions):
//   build/bin/daemon_load_bench [--migsched PATH] [--mode submit|healthz]
//       [--jobs N] [--clients C] [--connections keep-alive|new]
//       [--idle 64] [--followers 64] [--requests 2000]
// (CLI11; --help lists them; exit code 2 on a bad argument). PATH defaults to
// the `migsched` next to this binary.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <limits>
#include <map>
#include <thread>

#include "bench/daemon_bench_util.h"

namespace {

using namespace migsched::bench;  // NOLINT

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void PrintLatencies(const std::vector<double>& v) {
  std::printf("  latency p50      %.3f ms\n", 1e3 * Percentile(v, 0.50));
  std::printf("  latency p99      %.3f ms\n", 1e3 * Percentile(v, 0.99));
  std::printf("  latency max      %.3f ms\n", 1e3 * Percentile(v, 1.0));
}

int Submit(DaemonUnderTest& d, int jobs, int clients, bool keep_alive) {
  {
    const auto admin = MakeClient(d.port(), d.token());
    const httplib::Result r = admin->Post("/v1/scheduler/pause", "", "application/json");
    if (!r || r->status != 200) {
      std::fprintf(stderr, "pause failed\n");
      return 1;
    }
  }
  const std::string body = R"({"profile": "1g.5gb", "command": ["true"], "name": "load"})";
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::vector<std::vector<int64_t>> ids(static_cast<size_t>(clients));
  std::atomic<int> errors{0};
  std::atomic<int> next{0};
  const auto t0 = BenchClock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = MakeClient(d.port(), d.token(), keep_alive);
      while (next.fetch_add(1) < jobs) {
        if (!keep_alive) client = MakeClient(d.port(), d.token(), false);
        const auto s = BenchClock::now();
        const httplib::Result resp = client->Post("/v1/jobs", body, "application/json");
        latencies[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double>(BenchClock::now() - s).count());
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
  const double wall = std::chrono::duration<double>(BenchClock::now() - t0).count();
  std::vector<double> all;
  std::map<int64_t, int> returned;
  for (int c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[static_cast<size_t>(c)].begin(),
               latencies[static_cast<size_t>(c)].end());
    for (int64_t id : ids[static_cast<size_t>(c)]) ++returned[id];
  }
  std::vector<nlohmann::json> records;
  if (!d.ListAll(&records)) {
    std::fprintf(stderr, "GET /v1/jobs failed\n");
    return 1;
  }
  std::map<int64_t, int> listed;
  for (const auto& j : records) ++listed[j["id"].get<int64_t>()];
  int duplicated = 0, lost = 0, unknown = 0;
  for (const auto& [id, n] : returned) duplicated += n > 1 ? 1 : 0;
  for (const auto& [id, n] : listed) duplicated += n > 1 ? 1 : 0;
  for (const auto& [id, n] : returned) lost += listed.count(id) ? 0 : 1;
  for (const auto& [id, n] : listed) unknown += returned.count(id) ? 0 : 1;
  std::printf(
      "daemon API load test: %d POST /v1/jobs from %d clients (%s), fake backend, "
      "scheduler paused\n",
      jobs, clients, keep_alive ? "keep-alive" : "a new connection per request");
  std::printf("  wall time        %.2f s\n", wall);
  std::printf("  submissions/s    %.0f\n", static_cast<double>(jobs) / wall);
  PrintLatencies(all);
  std::printf("  errors           %d\n", errors.load());
  std::printf("  ids returned     %zu, listed %zu, lost %d, duplicated %d, unknown %d\n",
              returned.size(), listed.size(), lost, duplicated, unknown);
  const bool ok = errors == 0 && lost == 0 && duplicated == 0 && unknown == 0 &&
                  static_cast<int>(returned.size()) == jobs;
  std::printf("  %s\n", ok ? "OK: no lost or duplicated job" : "FAILED");
  return ok ? 0 : 1;
}

int Healthz(DaemonUnderTest& d, int idle, int followers, int requests) {
  const auto admin = MakeClient(d.port(), d.token());
  const httplib::Result job = admin->Post(
      "/v1/jobs", R"({"profile": "1g.5gb", "command": ["sh", "-c", "while :; do sleep 1; done"]})",
      "application/json");
  if (!job || job->status != 201) {
    std::fprintf(stderr, "submit failed\n");
    return 1;
  }
  const int64_t id = nlohmann::json::parse(job->body)["id"].get<int64_t>();
  std::vector<int> sockets;
  for (int i = 0; i < idle; ++i) {
    const int fd = Connect(d.port());
    if (fd < 0) {
      std::fprintf(stderr, "connect failed\n");
      return 1;
    }
    sockets.push_back(fd);
  }
  std::atomic<int> streaming{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/log?follow=1";
  for (int i = 0; i < followers; ++i) {
    threads.emplace_back([&] {
      const auto c = MakeClient(d.port(), d.token());
      c->set_read_timeout(std::chrono::hours(1));
      c->Get(
          path.c_str(),
          [&](const httplib::Response&) {
            ++streaming;
            return true;
          },
          [&](const char*, size_t) { return !stop; });
    });
  }
  const auto deadline = BenchClock::now() + std::chrono::seconds(30);
  while (streaming < followers && BenchClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto probe = MakeClient(d.port(), "");
  std::vector<double> lat;
  int errors = 0;
  for (int i = 0; i < requests; ++i) {
    const auto s = BenchClock::now();
    const httplib::Result r = probe->Get("/healthz");
    lat.push_back(std::chrono::duration<double>(BenchClock::now() - s).count());
    if (!r || r->status != 200) ++errors;
  }
  std::printf(
      "GET /healthz x %d while %d idle connections and %d log followers (%d streaming) "
      "are open\n",
      requests, idle, followers, streaming.load());
  PrintLatencies(lat);
  std::printf("  errors           %d\n", errors);
  stop = true;
  (void)admin->Delete(("/v1/jobs/" + std::to_string(id)).c_str());  // ends the streams
  for (std::thread& t : threads) t.join();
  for (int fd : sockets) ::close(fd);
  return errors == 0 && streaming == followers ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string migsched = (fs::canonical("/proc/self/exe").parent_path() / "migsched").string();
  std::string mode = "submit";
  std::string connections = "keep-alive";
  int jobs = 10000;
  int clients = 8;
  int idle = 64;
  int followers = 64;
  int requests = 2000;
  CLI::App app{"Daemon API load test against `migsched serve` (fake backend, loopback)"};
  app.add_option("--migsched", migsched, "the migsched binary to start")->capture_default_str();
  app.add_option("--mode", mode, "submit | healthz")
      ->check(CLI::IsMember({"submit", "healthz"}))
      ->capture_default_str();
  app.add_option("--jobs", jobs, "submit: number of POST /v1/jobs")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--clients", clients, "submit: concurrent clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--connections", connections, "submit: keep-alive | new")
      ->check(CLI::IsMember({"keep-alive", "new"}))
      ->capture_default_str();
  app.add_option("--idle", idle, "healthz: idle connections held open")->capture_default_str();
  app.add_option("--followers", followers, "healthz: log followers held open")
      ->capture_default_str();
  app.add_option("--requests", requests, "healthz: /healthz requests timed")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  // Idle and request timeouts far above the run: the open connections stay open.
  DaemonUnderTest d(migsched, "1xA100-40GB", 100,
                    "idle_timeout_s: 600\nrequest_timeout_s: 600\nmax_connections: 1024\n");
  if (!d.Start()) return 1;
  const int rc = mode == "submit" ? Submit(d, jobs, clients, connections == "keep-alive")
                                  : Healthz(d, idle, followers, requests);
  return rc;
}
