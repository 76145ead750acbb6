// The fixture of the daemon's end-to-end tests: `migsched serve` as a child
// process (fake backend, a random loopback port, a temp state dir), and
// helpers to call its API. Test-only.
#ifndef MIGSCHED_TESTS_E2E_DAEMON_FIXTURE_H_
#define MIGSCHED_TESTS_E2E_DAEMON_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "migsched_child.h"
#include "testing/test_util.h"

namespace migsched {

namespace e2e {
namespace fs = std::filesystem;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;  // (migsched::Clock is core/clock.h's)
using ::migsched::testing::ReadFile;
}  // namespace e2e
using namespace e2e;  // NOLINT: the tests below share these names

// A `migsched serve` child process (killed with SIGKILL when destroyed).
class DaemonProcess {
 public:
  // Starts the daemon on `config`; waits (up to 60 s) for its "listening on" line.
  static std::unique_ptr<DaemonProcess> Start(const fs::path& config, const fs::path& log) {
    auto child = testing::MigschedChild::Start(
        {"serve", "--config", config.string(), "--log-level", "debug"}, log,
        "listening on http://127.0.0.1:");
    if (!child) return nullptr;
    const int port = std::stoi(child->rest());
    return std::unique_ptr<DaemonProcess>(new DaemonProcess(std::move(child), port));
  }

  ~DaemonProcess() {
    if (child_->pid() > 0) child_->Kill(SIGKILL);
  }

  // Sends `sig` and reaps the process; returns its wait status.
  int Kill(int sig) { return child_->Kill(sig); }

  int port() const { return port_; }
  pid_t pid() const { return child_->pid(); }

 private:
  DaemonProcess(std::unique_ptr<testing::MigschedChild> child, int port)
      : child_(std::move(child)), port_(port) {}
  std::unique_ptr<testing::MigschedChild> child_;
  int port_;
};

class DaemonApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "migsched-e2e-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // Jobs run as an unprivileged user (job_user, nobody under root) and
    // start in <dir>/state-work/<id>: let them through this directory.
    fs::permissions(dir_, fs::perms(0711));
    token_file_ = dir_ / "state" / "token";
  }

  void TearDown() override {
    // Jobs run in their own process groups and outlive a killed daemon: end them.
    if (daemon_) {
      auto r = Api().Get("/v1/jobs");
      if (r && r->status == 200) {
        const json all = json::parse(r->body);  // (a named value: the loop must not range
        for (const json& j : all["jobs"]) {     // over a member of a destroyed temporary)
          const std::string state = j["state"];
          const bool live = state == "running" || state == "starting" || state == "migrating";
          if (live && j["pid"].is_number()) ::kill(-j["pid"].get<pid_t>(), SIGKILL);
        }
      }
    }
    daemon_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Writes the config (fake backend, 2 A100-40GB, fast ticks) with `extra` appended.
  fs::path WriteConfig(const std::string& extra = "") {
    const fs::path p = dir_ / "config.yaml";
    std::ofstream(p) << "listen: \"127.0.0.1:0\"\n"
                     << "state_dir: " << (dir_ / "state").string() << "\n"
                     << "backend: fake\ngpus: " << gpus_ << "\ntick_ms: 20\nkill_grace_s: 1\n"
                     << "max_body_bytes: 4096\n"
                     << extra;
    return p;
  }

  void StartDaemon(const std::string& extra = "") {
    const fs::path cfg =
        fs::exists(dir_ / "config.yaml") ? dir_ / "config.yaml" : WriteConfig(extra);
    daemon_ = DaemonProcess::Start(cfg, dir_ / "daemon.log");
    ASSERT_NE(daemon_, nullptr);
  }

  std::string Token() const {
    std::string t = ReadFile(token_file_);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }

  httplib::Client Api(const std::string& token = "<file>") {
    httplib::Client c("127.0.0.1", daemon_->port());
    const std::string t = token == "<file>" ? Token() : token;
    if (!t.empty()) c.set_bearer_token_auth(t.c_str());
    c.set_connection_timeout(5);
    c.set_read_timeout(20);
    return c;
  }

  // POST /v1/jobs; the job id (fails the test unless 201).
  int64_t Submit(const json& body) {
    auto r = Api().Post("/v1/jobs", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return 0;
    EXPECT_EQ(r->status, 201) << r->body;
    return r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }

  json Job(int64_t id) {
    auto r = Api().Get(("/v1/jobs/" + std::to_string(id)).c_str());
    if (!r || r->status != 200) return json();
    return json::parse(r->body);
  }

  // Polls the job until `pred` holds (timeout: fails the test, returns the last record).
  json WaitFor(int64_t id, const std::function<bool(const json&)>& pred, double timeout_s = 15) {
    const auto deadline = SteadyClock::now() + std::chrono::duration<double>(timeout_s);
    json j;
    while (SteadyClock::now() < deadline) {
      j = Job(id);
      if (!j.is_null() && pred(j)) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    ADD_FAILURE() << "job " << id << " timed out; last record: " << j.dump();
    return j;
  }
  static bool Terminal(const json& j) {
    const std::string s = j["state"];
    return s == "succeeded" || s == "failed" || s == "cancelled" || s == "rejected";
  }
  json WaitTerminal(int64_t id) { return WaitFor(id, Terminal); }
  json WaitRunning(int64_t id) {
    return WaitFor(id, [](const json& j) { return j["state"] == "running"; });
  }

  // A file only its owner may read (token files with other modes are refused).
  std::string WriteSecret(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << content;
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
    return p.string();
  }

  fs::path dir_;
  fs::path token_file_;
  std::string gpus_ = "2xA100-40GB";  // the fake backend's cluster spec
  std::unique_ptr<DaemonProcess> daemon_;
};

}  // namespace migsched

#endif  // MIGSCHED_TESTS_E2E_DAEMON_FIXTURE_H_
