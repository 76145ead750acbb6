// kill -9 harness of the daemon (docs/performance.md): `migsched serve`
// (fake backend, loopback) is killed with SIGKILL at random moments while C
// clients submit jobs, and restarted at once on the same state dir and port,
// R rounds. Each client retries a submission whose answer it lost with the
// same Idempotency-Key, as a careful client would. Every job appends
// "<id> <run>" to a shared file when it runs.
//
// Counted at the end (all must be 0):
//   lost        an acknowledged job (201/200 received) not in GET /v1/jobs
//   duplicated  one submission (idempotency key) stored as two jobs, or an id twice
//   ran twice   a job whose command ran more than once (two lines with its id)
//   stuck       a job not terminal 120 s after the last restart, or an instance
//               still held when every job has ended
// Also reported: the time from SIGKILL to the restarted daemon answering.
//
//   build/bin/daemon_kill9_bench [--migsched PATH] [--rounds 100] [--clients 4]
//       [--seed 1] [--min-ms 30] [--max-ms 400]
// Exit code 0 only if every count is 0. Bounded: every wait has a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "bench/daemon_bench_util.h"

namespace {

using namespace migsched::bench;  // NOLINT

// A port free now (bound to :0, then released) for the daemon to listen on
// across its restarts.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return 0;
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

int main(int argc, char** argv) {
  std::string migsched = (fs::canonical("/proc/self/exe").parent_path() / "migsched").string();
  int rounds = 100;
  int clients = 4;
  uint64_t seed = 1;
  int min_ms = 30;
  int max_ms = 400;
  CLI::App app{"kill -9 harness: the daemon killed at random moments under concurrent clients"};
  app.add_option("--migsched", migsched, "the migsched binary to start")->capture_default_str();
  app.add_option("--rounds", rounds, "kill -9 rounds")->capture_default_str();
  app.add_option("--clients", clients, "concurrent submitting clients")->capture_default_str();
  app.add_option("--seed", seed, "seed of the kill times and the job mix")->capture_default_str();
  app.add_option("--min-ms", min_ms, "shortest time a round lets the daemon run")
      ->capture_default_str();
  app.add_option("--max-ms", max_ms, "longest time a round lets the daemon run")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  const int port = FreePort();
  DaemonUnderTest d(migsched, "2xA100-40GB", 20, "kill_grace_s: 1\n",
                    "127.0.0.1:" + std::to_string(port));
  // Jobs run as the daemon's job_user (nobody under root): a log they may append to.
  const fs::path shared = d.dir() / "runs.d";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all);
  const fs::path runs = shared / "runs";
  if (!d.Start()) return 1;

  std::mutex mu;
  std::map<std::string, std::set<int64_t>> acked;  // idempotency key -> ids answered
  std::atomic<bool> stop{false};
  std::atomic<int64_t> submitted{0};
  std::vector<std::thread> threads;
  const char* profiles[] = {"1g.5gb", "2g.10gb", "3g.20gb", "1g.5gb", "7g.40gb", "1g.10gb"};
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(c));
      for (int64_t n = 0; !stop; ++n) {
        const std::string key = "c" + std::to_string(c) + "-" + std::to_string(n);
        const std::string profile = profiles[rng() % 6];
        const int sleep_ms = static_cast<int>(rng() % 200);
        nlohmann::json body = {{"profile", profile},
                               {"command",
                                {"sh", "-c",
                                 "echo $MIGSCHED_JOB_ID $MIGSCHED_RUN >> " + runs.string() +
                                     "; sleep " + std::to_string(sleep_ms / 1000.0)}}};
        const std::string text = body.dump();
        // Until answered (the daemon may be down: retry with the same key).
        while (!stop) {
          const auto client = MakeClient(port, d.token(), false);
          client->set_connection_timeout(std::chrono::milliseconds(500));
          httplib::Headers h{{"Idempotency-Key", key}};
          const httplib::Result r = client->Post("/v1/jobs", h, text, "application/json");
          if (r && (r->status == 201 || r->status == 200)) {
            const auto j = nlohmann::json::parse(r->body, nullptr, false);
            std::lock_guard<std::mutex> lock(mu);
            acked[key].insert(j["id"].get<int64_t>());
            ++submitted;
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 30));
      }
    });
  }
  std::mt19937_64 rng(seed);
  std::vector<double> restart_s;
  for (int round = 0; round < rounds; ++round) {
    const int run_ms =
        min_ms + static_cast<int>(rng() % static_cast<uint64_t>(max_ms - min_ms + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(run_ms));
    d.Kill(SIGKILL);
    const auto killed = BenchClock::now();
    if (!d.Start()) {
      stop = true;
      for (std::thread& t : threads) t.join();
      std::fprintf(stderr, "round %d: the daemon did not come back (see %s)\n", round,
                   (d.dir() / "daemon.log").c_str());
      return 1;
    }
    restart_s.push_back(std::chrono::duration<double>(BenchClock::now() - killed).count());
  }
  stop = true;
  for (std::thread& t : threads) t.join();

  // Every job ends (bounded), then the counts.
  std::vector<nlohmann::json> records;
  const auto deadline = BenchClock::now() + std::chrono::seconds(120);
  int not_terminal = 0;
  while (true) {
    records.clear();
    if (!d.ListAll(&records)) {
      std::fprintf(stderr, "GET /v1/jobs failed\n");
      return 1;
    }
    not_terminal = 0;
    for (const auto& j : records) {
      const std::string s = j["state"];
      not_terminal += (s == "queued" || s == "starting" || s == "running" || s == "migrating");
    }
    if (not_terminal == 0 || BenchClock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::map<int64_t, int> listed;
  std::map<std::string, std::set<int64_t>> by_key;
  std::map<std::string, int> states;
  for (const auto& j : records) {
    const int64_t id = j["id"].get<int64_t>();
    ++listed[id];
    ++states[j["state"].get<std::string>()];
    if (j["idempotency_key"].is_string()) by_key[j["idempotency_key"]].insert(id);
  }
  int lost = 0, duplicated = 0;
  for (const auto& [key, ids] : acked) {
    duplicated += ids.size() > 1 ? 1 : 0;
    for (int64_t id : ids) lost += listed.count(id) ? 0 : 1;
  }
  for (const auto& [key, ids] : by_key) duplicated += ids.size() > 1 ? 1 : 0;
  for (const auto& [id, n] : listed) duplicated += n > 1 ? 1 : 0;
  std::map<int64_t, int> ran;
  {
    std::ifstream in(runs);
    int64_t id = 0, run = 0;
    while (in >> id >> run) ++ran[id];
  }
  int twice = 0;
  for (const auto& [id, n] : ran) twice += n > 1 ? 1 : 0;
  // No instance held once every job has ended.
  int held = 0;
  {
    const auto c = MakeClient(port, d.token());
    const httplib::Result g = c->Get("/v1/gpus");
    const auto j = g ? nlohmann::json::parse(g->body, nullptr, false) : nlohmann::json();
    if (j.is_object()) {
      for (const auto& gpu : j["gpus"]) {
        for (const auto& in : gpu["instances"]) held += in["busy"].get<bool>() ? 1 : 0;
      }
    }
  }
  const int stuck = not_terminal + (not_terminal == 0 ? held : 0);
  std::printf(
      "kill -9 harness: %d rounds (the daemon killed after %d-%d ms each), %d clients, "
      "seed %llu\n",
      rounds, min_ms, max_ms, clients, static_cast<unsigned long long>(seed));
  std::printf("  jobs acknowledged   %lld (%zu keys), listed %zu, ran %zu\n",
              static_cast<long long>(submitted.load()), acked.size(), listed.size(), ran.size());
  std::string st;
  for (const auto& [s, n] : states) st += " " + s + "=" + std::to_string(n);
  std::printf("  states             %s\n", st.c_str());
  std::printf("  restart to answering: p50 %.0f ms, max %.0f ms\n",
              1e3 * Percentile(restart_s, 0.5), 1e3 * Percentile(restart_s, 1.0));
  std::printf("  lost %d, duplicated %d, ran twice %d, stuck %d (not terminal %d, held %d)\n", lost,
              duplicated, twice, stuck, not_terminal, held);
  const bool ok = lost == 0 && duplicated == 0 && twice == 0 && stuck == 0;
  std::printf("  %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
