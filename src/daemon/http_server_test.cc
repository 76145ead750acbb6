#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "daemon/metrics.h"
#include "nodeapi/request_json.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using json = nlohmann::json;

// What spdlog's default logger writes while it lives (the logger it replaced comes back at its
// end, an early return of an ASSERT included).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

// A TCP connection to 127.0.0.1:port (blocking unless `nonblocking`); -1 on error.
int Connect(int port, bool nonblocking = false) {
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc != 0 && !(nonblocking && errno == EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `text` and reads the answer until the peer closes or 5 s pass.
std::string Exchange(int fd, const std::string& text) {
  (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos && out.find("}\n") != std::string::npos) break;
  }
  return out;
}

// An in-memory NodeApi: jobs get ids 1, 2, ...; profile "none" is unknown.
class StubApi : public NodeApi {
 public:
  explicit StubApi(std::filesystem::path dir) : dir_(std::move(dir)) {}
  StatusOr<SubmitResult> Submit(const JobRequest& request, const std::string& key) override {
    if (request.profile == "none") return InvalidArgumentError("unknown profile 'none'");
    std::lock_guard<std::mutex> lock(mu_);
    for (const DaemonJobRecord& r : jobs_) {
      if (!key.empty() && r.idempotency_key == key) return SubmitResult{r, true};
    }
    DaemonJobRecord r;
    r.id = static_cast<DaemonJobId>(jobs_.size()) + 1;
    r.request = request;
    r.idempotency_key = key;
    jobs_.push_back(r);
    return SubmitResult{r, false};
  }
  JobPage ListJobs(const JobQuery& q) const override {
    std::lock_guard<std::mutex> lock(mu_);
    JobPage page;
    for (const DaemonJobRecord& r : jobs_) {
      if (r.id <= q.after || (q.state && r.state != *q.state)) continue;
      if (static_cast<int>(page.jobs.size()) == q.limit) {
        page.next = page.jobs.back().id;
        break;
      }
      page.jobs.push_back(r);
    }
    return page;
  }
  // A held allocation as the next record (it never ends here).
  DaemonJobId AddAllocation() {
    std::lock_guard<std::mutex> lock(mu_);
    DaemonJobRecord r;
    r.id = static_cast<DaemonJobId>(jobs_.size()) + 1;
    r.kind = JobKind::kAllocation;
    r.state = JobState::kRunning;
    r.allocation.owner = "a";
    jobs_.push_back(r);
    return r.id;
  }
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (id < 1 || id > static_cast<DaemonJobId>(jobs_.size())) {
      return NotFoundError("no job " + std::to_string(id));
    }
    return jobs_[id - 1];
  }
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (id < 1 || id > static_cast<DaemonJobId>(jobs_.size())) {
      return NotFoundError("no job " + std::to_string(id));
    }
    DaemonJobRecord& r = jobs_[id - 1];
    if (IsTerminal(r.state)) {
      return FailedPreconditionError("job " + std::to_string(id) + " is already terminal");
    }
    r.state = JobState::kCancelled;
    return r;
  }
  std::vector<GpuView> Gpus() const override {
    GpuView g;
    g.index = 0;
    g.placement_units = 8;
    g.utilisation = 0.5;
    g.frag_cost = 0.25;
    g.pcie = PcieThroughput{10, 20};
    return {g};
  }
  NodeView Node() const override {
    NodeView n;
    n.name = "n1";
    n.boot_id = "b";
    n.generation = 7;
    n.policy = "full";
    n.gpus = Gpus();
    return n;
  }
  StatusOr<PlanPreview> PreviewPlan(const JobRequest&) const override {
    PlanPreview p;
    p.fits_now = true;
    p.steps = {"create 2g.10gb@4 on GPU 0"};
    return p;
  }
  Status Pause() override {
    paused_ = true;
    return Status();
  }
  Status Resume() override {
    paused_ = false;
    return Status();
  }
  bool paused() const override { return paused_; }
  Status Drain(NvmlIndex gpu) override {
    return gpu == NvmlIndex{0} ? Status()
                               : NotFoundError(fmt::format("GPU {} is not managed", gpu));
  }
  Status Undrain(NvmlIndex gpu) override {
    undrained_ = gpu.value();
    return gpu == NvmlIndex{0} ? Status()
                               : NotFoundError(fmt::format("GPU {} is not managed", gpu));
  }
  int undrained_ = -1;
  DaemonMetrics Metrics() const override {
    DaemonMetrics m;
    m.jobs_by_state = {{"queued", 2}, {"running", 1}};
    m.queue_length = 2;
    m.reconfigurations = 3;
    m.migrations_intra = 1;
    m.gpus = Gpus();
    return m;
  }
  Status Health() const override { return health_; }
  Status health_;
  StatusOr<ReserveResult> Reserve(const ReservationRequest& r) override {
    ReserveResult out;
    out.reservation.record.owner = r.owner;
    out.created = true;
    return out;
  }
  std::vector<ReservationView> ListReservations(const std::string&) const override { return {}; }
  StatusOr<ReservationView> GetReservation(const std::string& owner) const override {
    return NotFoundError("no reservation '" + owner + "'");
  }
  Status ReleaseReservation(const std::string& owner) override {
    released_ = owner;
    return Status();
  }
  std::string released_;
  StatusOr<SubmitResult> Allocate(const AllocationRequest&, const std::string&) override {
    return FailedPreconditionError("no room");
  }
  StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id) override {
    return NotFoundError("no allocation " + std::to_string(id));
  }
  StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner) override {
    std::lock_guard<std::mutex> lock(mu_);
    released_owners_.push_back(owner);
    return std::vector<DaemonJobRecord>{};
  }
  std::vector<std::string> released_owners() const {
    std::lock_guard<std::mutex> lock(mu_);
    return released_owners_;
  }
  std::filesystem::path LogPath(DaemonJobId id) const override {
    return dir_ / ("job" + std::to_string(id) + ".log");
  }
  void Finish(DaemonJobId id) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[id - 1].state = JobState::kSucceeded;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs_.size();
  }

 private:
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::vector<DaemonJobRecord> jobs_;
  std::vector<std::string> released_owners_;  // ReleaseAllocationsOf's owners, in call order
  std::atomic<bool> paused_{false};
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "migsched-http-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    api_ = std::make_unique<StubApi>(dir_);
    HttpServerOptions o;
    o.token = "sekrit";
    o.max_body_bytes = 1000;
    o.max_connections = 64;
    o.idle_timeout_s = 1;
    o.request_timeout_s = 1;
    o.follow_poll_ms = 10;
    server_ = std::make_unique<HttpServer>(api_.get(), o);
    ASSERT_TRUE(server_->Bind("127.0.0.1:0").ok());
    ASSERT_GT(server_->port(), 0);
    thread_ = std::thread([this] { EXPECT_TRUE(server_->Serve().ok()); });
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
    std::filesystem::remove_all(dir_);
  }
  httplib::Client Client(const std::string& token = "sekrit") {
    httplib::Client c("127.0.0.1", server_->port());
    if (!token.empty()) c.set_bearer_token_auth(token.c_str());
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    return c;
  }
  // The error message of a JSON error body.
  static std::string Message(const httplib::Result& r) {
    return json::parse(r->body)["error"]["message"].get<std::string>();
  }

  std::filesystem::path dir_;
  std::unique_ptr<StubApi> api_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, HealthzNeedsNoTokenEverythingElseDoes) {
  auto h = Client("").Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  struct Case {
    std::string token;
    std::string method, path;
    std::string want;
  } cases[] = {
      {"", "GET", "/v1/jobs", "missing bearer token (Authorization: Bearer <token>)"},
      {"wrong", "GET", "/v1/jobs", "wrong bearer token"},
      {"sekri", "GET", "/metrics", "wrong bearer token"},
      {"sekrit2", "POST", "/v1/jobs", "wrong bearer token"},
      {"", "GET", "/v1/nonexistent", "missing bearer token (Authorization: Bearer <token>)"},
  };
  for (const Case& k : cases) {
    auto c = Client(k.token);
    auto r = k.method == "GET" ? c.Get(k.path.c_str())
                               : c.Post(k.path.c_str(), "{}", "application/json");
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, 401) << k.path;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "UNAUTHENTICATED");
    EXPECT_EQ(Message(r), k.want);
  }
  EXPECT_EQ(api_->size(), 0u);  // the refused POST submitted nothing
}

// Regression bearer_scheme_case: "bearer" was taken but "BEARER" and "beaRer" were refused;
// the scheme is case-insensitive (RFC 7235 section 2.1). The token itself is not.
TEST_F(HttpServerTest, BearerSchemeIsCaseInsensitive) {
  for (const char* scheme : {"Bearer", "bearer", "BEARER", "beaRer"}) {
    auto c = Client("");
    auto r = c.Get("/v1/jobs", {{"Authorization", std::string(scheme) + " sekrit"}});
    ASSERT_TRUE(r) << scheme;
    EXPECT_EQ(r->status, 200) << scheme;
  }
  for (const char* auth : {"Bearer SEKRIT", "Bearersekrit", "Basic sekrit", "Bearer  sekrit"}) {
    auto r = Client("").Get("/v1/jobs", {{"Authorization", auth}});
    ASSERT_TRUE(r) << auth;
    EXPECT_EQ(r->status, 401) << auth;
  }
  // Regression basic_scheme_said_wrong_bearer_token: another scheme is named as such.
  auto basic = Client("").Get("/v1/jobs", {{"Authorization", "Basic c2Vrcml0"}});
  ASSERT_TRUE(basic);
  EXPECT_EQ(Message(basic),
            "the Authorization header is not a bearer token (Authorization: Bearer <token>)");
}

// Regression duplicate_authorization_header and duplicate_idempotency_key: of two headers the
// first was used (a good token after a bad one was refused, a bad one after a good one let in;
// the second key was ignored). Both are refused with 400, and nothing is submitted.
TEST_F(HttpServerTest, RepeatedAuthorizationOrIdempotencyKeyIsRefused) {
  const std::string kBody = R"({"profile": "1g.5gb", "command": ["true"]})";
  for (const httplib::Headers& auth :
       {httplib::Headers{{"Authorization", "Bearer sekrit"}, {"Authorization", "Bearer wrong"}},
        httplib::Headers{{"Authorization", "Bearer wrong"}, {"Authorization", "Bearer sekrit"}}}) {
    auto r = Client("").Post("/v1/jobs", auth, kBody, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(Message(r), "malformed HTTP request: more than one Authorization header; give one");
  }
  auto keys = Client().Post("/v1/jobs", {{"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}}, kBody,
                            "application/json");
  ASSERT_TRUE(keys);
  EXPECT_EQ(keys->status, 400);
  EXPECT_EQ(Message(keys), "more than one Idempotency-Key header; give one");
  EXPECT_EQ(api_->size(), 0u);
}

// Regression unsupported_content_encoding: a body in a coding the server does not decode was
// refused as "did not arrive in full within body_timeout_s". Now: 415 naming the coding, and a
// gzip body that is not gzip data says so. Nothing is submitted either way.
TEST_F(HttpServerTest, UnsupportedContentEncodingIs415) {
  const std::string body = R"({"profile": "2g.10gb", "command": ["true"]})";
  auto zstd = Client().Post("/v1/jobs", {{"Content-Encoding", "zstd"}}, body, "application/json");
  ASSERT_TRUE(zstd);
  EXPECT_EQ(zstd->status, 415);
  EXPECT_THAT(Message(zstd), ::testing::StartsWith("Content-Encoding 'zstd' is not supported ("));
  auto bad = Client().Post("/v1/jobs", {{"Content-Encoding", "gzip"}}, body, "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  // Regression (trial_gzip_message_counted_decoded_bytes): it led with "did not arrive in full"
  // and compared decoded bytes with the coded Content-Length.
  EXPECT_THAT(Message(bad), ::testing::HasSubstr("the body is not valid gzip data, or did not "
                                                 "arrive in full"));
  EXPECT_THAT(Message(bad), ::testing::Not(::testing::HasSubstr("Content-Length")));
  EXPECT_EQ(api_->size(), 0u);
}

// Regression multipart_body_was_a_500: a multipart/form-data body (`curl -F`) was answered 500
// "internal error: bad_function_call" (cpp-httplib reads its parts only for a handler that takes
// them). Now 415 naming the type; nothing is submitted.
TEST_F(HttpServerTest, MultipartBodyIs415) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n";
  auto r = Client().Post("/v1/jobs", body, "multipart/form-data; boundary=b");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_EQ(Message(r),
            "Content-Type 'multipart/form-data; boundary=b' is not supported (a JSON body)");
  EXPECT_EQ(api_->size(), 0u);
}

TEST_F(HttpServerTest, SubmitGetListCancel) {
  auto c = Client();
  auto p = c.Post("/v1/jobs", R"({"profile": "2g.10gb", "command": ["true"]})", "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 201);
  EXPECT_EQ(json::parse(p->body)["id"], 1);
  EXPECT_EQ(p->get_header_value("Location"), "/v1/jobs/1");
  auto g = c.Get("/v1/jobs/1");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body)["state"], "queued");
  auto l = c.Get("/v1/jobs?state=queued");
  ASSERT_TRUE(l);
  EXPECT_EQ(json::parse(l->body)["jobs"].size(), 1u);
  auto l2 = c.Get("/v1/jobs?state=running");
  ASSERT_TRUE(l2);
  EXPECT_EQ(json::parse(l2->body)["jobs"].size(), 0u);
  auto d = c.Delete("/v1/jobs/1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200);
  EXPECT_EQ(json::parse(d->body)["state"], "cancelled");
  // An Idempotency-Key repeated: the first job, 200, nothing new.
  httplib::Headers key{{"Idempotency-Key", "k1"}};
  auto k1 =
      c.Post("/v1/jobs", key, R"({"profile": "2g.10gb", "command": ["true"]})", "application/json");
  ASSERT_TRUE(k1);
  EXPECT_EQ(k1->status, 201);
  auto k2 =
      c.Post("/v1/jobs", key, R"({"profile": "2g.10gb", "command": ["true"]})", "application/json");
  ASSERT_TRUE(k2);
  EXPECT_EQ(k2->status, 200);
  EXPECT_EQ(k2->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(json::parse(k2->body)["id"], json::parse(k1->body)["id"]);
  EXPECT_EQ(api_->size(), 2u);
  // Regression: a key longer than the documented 256 bytes was taken and stored. 256 is the most.
  httplib::Headers long_key{{"Idempotency-Key", std::string(257, 'k')}};
  auto k3 = c.Post("/v1/jobs", long_key, R"({"profile": "2g.10gb", "command": ["true"]})",
                   "application/json");
  ASSERT_TRUE(k3);
  EXPECT_EQ(k3->status, 400);
  EXPECT_EQ(Message(k3), "Idempotency-Key is 257 bytes long; at most 256 are allowed");
  EXPECT_EQ(api_->size(), 2u);  // nothing new
  httplib::Headers max_key{{"Idempotency-Key", std::string(256, 'k')}};
  auto k4 = c.Post("/v1/jobs", max_key, R"({"profile": "2g.10gb", "command": ["true"]})",
                   "application/json");
  ASSERT_TRUE(k4);
  EXPECT_EQ(k4->status, 201);
  EXPECT_EQ(api_->size(), 3u);
  auto d2 = c.Delete("/v1/jobs/1");
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->status, 409);
  EXPECT_EQ(Message(d2), "job 1 is already terminal");
}

TEST_F(HttpServerTest, ErrorsMapToStatusCodesWithJsonBodies) {
  auto c = Client();
  struct Case {
    std::string method, path, body;
    int status;
    std::string message;  // exact
  } cases[] = {
      {"POST", "/v1/jobs", "{bad", 400,
       "request body is not valid JSON: parse error at line 1, column 2: syntax error while "
       "parsing object key - invalid literal; last read: '{b'; expected string literal"},
      {"POST", "/v1/jobs", R"({"profile": "none", "command": ["x"]})", 400,
       "unknown profile 'none'"},
      {"POST", "/v1/jobs", R"({"profile": "p", "command": "x"})", 400,
       "field 'command' must be an array of strings, got string"},
      // A number refused for its range is quoted as the client wrote it (was 1e+20).
      {"POST", "/v1/jobs", R"({"profile": "p", "command": ["x"], "count": 100000000000000000000})",
       400, "field 'count' must be from 1 to 64, got 100000000000000000000"},
      {"POST", "/v1/jobs", std::string(1001, ' '), 413,
       "request body larger than max_body_bytes (1000 bytes)"},
      {"GET", "/v1/jobs/99", "", 404, "no job 99"},
      {"GET", "/v1/jobs/abc", "", 400, "job id 'abc' is not a positive integer"},
      {"GET", "/v1/jobs/0", "", 400, "job id '0' is not a positive integer"},
      {"GET", "/v1/jobs/99/log", "", 404, "no job 99"},
      {"GET", "/v1/jobs?state=lost", "", 400,
       "'lost' is not a job state (queued, starting, running, migrating, succeeded, failed, "
       "cancelled, rejected, released, timeout)"},
      {"GET", "/v1/jobs?limit=0", "", 400,
       "parameter 'limit' must be an integer from 1 to 1000, got '0'"},
      {"GET", "/v1/jobs?kind=thing", "", 400, "'thing' is not a job kind (job, allocation)"},
      {"POST", "/v1/reservations", R"({"owner": "k", "placements": []})", 400,
       "field 'placements' must hold 1 to 64 placements, got 0"},
      {"POST", "/v1/reservations", R"({"owner": "k", "placements": [{"profile": "1g.5gb"}]})", 400,
       "field 'placements[0]' needs both 'gpu' and 'start'"},
      {"POST", "/v1/allocations", R"({"instances": [{"profile": "1g.5gb"}]})", 400,
       "field 'owner' is required (it may be left out only when binding a reservation)"},
      {"POST", "/v1/allocations", R"({"owner": "a", "instances": [{"profile": "1g.5gb"}]})", 409,
       "no room"},
      {"GET", "/v1/reservations/x:1", "", 404, "no reservation 'x:1'"},
      {"POST", "/v1/gpus/3/drain", "", 404, "GPU 3 is not managed"},
      {"POST", "/v1/gpus/x/drain", "", 400, "GPU index 'x' is not a non-negative integer"},
      {"GET", "/v1/nothing", "", 404, "no such endpoint: GET /v1/nothing"},
  };
  for (const Case& k : cases) {
    auto r = k.method == "GET" ? c.Get(k.path.c_str())
                               : c.Post(k.path.c_str(), k.body, "application/json");
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, k.status) << k.path << " " << k.body.substr(0, 40);
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << k.path;
    EXPECT_EQ(Message(r), k.message) << k.path;
  }
}

// Regression (unknown_query_parameter_ignored): GET /v1/jobs?limt=5 was served as if no limit
// were given; every endpoint now refuses a query parameter it does not take (400), naming it and
// the ones it takes, before it does anything.
TEST_F(HttpServerTest, UnknownQueryParameterIsRefused) {
  auto c = Client();
  struct Case {
    std::string method, path;
    std::string message;  // exact
  } cases[] = {
      {"GET", "/v1/jobs?limt=5",
       "unknown query parameter 'limt' for GET /v1/jobs (known: after, kind, limit, "
       "owner_prefix, state)"},
      {"GET", "/v1/allocations?limit=5&stat=running",
       "unknown query parameter 'stat' for GET /v1/allocations (known: after, kind, limit, "
       "owner_prefix, state)"},
      {"GET", "/v1/jobs/1/log?folow=1",
       "unknown query parameter 'folow' for GET /v1/jobs/1/log (known: follow)"},
      {"GET", "/v1/reservations?prefx=slurm",
       "unknown query parameter 'prefx' for GET /v1/reservations (known: prefix)"},
      {"DELETE", "/v1/allocations?owner=a&ownr=b",
       "unknown query parameter 'ownr' for DELETE /v1/allocations (known: owner)"},
      {"GET", "/v1/node?verbose=1", "unknown query parameter 'verbose': GET /v1/node takes none"},
      {"POST", "/v1/scheduler/pause?now=1",
       "unknown query parameter 'now': POST /v1/scheduler/pause takes none"},
  };
  for (const Case& k : cases) {
    auto r = k.method == "GET"      ? c.Get(k.path.c_str())
             : k.method == "DELETE" ? c.Delete(k.path.c_str())
                                    : c.Post(k.path.c_str(), "", "application/json");
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, 400) << k.path;
    EXPECT_EQ(Message(r), k.message) << k.path;
  }
  // The refused pause did nothing; the parameters an endpoint takes are still served.
  EXPECT_FALSE(api_->paused());
  auto ok = c.Get("/v1/jobs?limit=5&state=running");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// Regression (trial_allocations_kind_job_ignored): GET /v1/allocations?kind=job answered the
// allocations, as if kind had not been given. It lists allocations only: kind=allocation is
// taken, kind=job refused with where the jobs are listed, a kind that is none refused as before.
TEST_F(HttpServerTest, AllocationsListTakesOnlyTheAllocationKind) {
  auto c = Client();
  auto job = c.Get("/v1/allocations?kind=job");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 400);
  EXPECT_EQ(Message(job),
            "GET /v1/allocations lists allocations only (kind allocation); GET /v1/jobs?kind=job "
            "lists the jobs");
  auto alloc = c.Get("/v1/allocations?kind=allocation");
  ASSERT_TRUE(alloc);
  EXPECT_EQ(alloc->status, 200);
  auto bogus = c.Get("/v1/allocations?kind=bogus");
  ASSERT_TRUE(bogus);
  EXPECT_EQ(bogus->status, 400);
}

// Regression (body_of_a_bodiless_post_ignored): POST /v1/gpus/0/drain with {"x": 1} was answered
// 200 and the body dropped, where a query parameter it does not take is refused. A POST that
// takes no body accepts none or {} and refuses anything else (400), before it does anything.
TEST_F(HttpServerTest, ABodyWhereNoneIsTakenIsRefused) {
  auto c = Client();
  for (const char* body : {R"({"x": 1})", "[]", "drain"}) {
    auto drain = c.Post("/v1/gpus/0/drain", body, "application/json");
    ASSERT_TRUE(drain);
    EXPECT_EQ(drain->status, 400) << body;
    EXPECT_EQ(Message(drain), "POST /v1/gpus/0/drain takes no body (send none, or {})") << body;
    auto pause = c.Post("/v1/scheduler/pause", body, "application/json");
    ASSERT_TRUE(pause);
    EXPECT_EQ(pause->status, 400) << body;
    EXPECT_EQ(Message(pause), "POST /v1/scheduler/pause takes no body (send none, or {})");
  }
  EXPECT_FALSE(api_->paused());  // nothing was done
  for (const char* body : {"", "{}", " { } \n"}) {
    auto r = c.Post("/v1/scheduler/pause", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "'" << body << "'";
  }
  EXPECT_TRUE(api_->paused());
}

// Regression (repeated_query_parameter_accepted): GET /v1/jobs?limit=5&limit=6 was served with
// the first limit and DELETE /v1/allocations?owner=a&owner=b released a's allocations only; a
// parameter given more than once is now refused (400), naming it, before anything is done.
TEST_F(HttpServerTest, RepeatedQueryParameterIsRefused) {
  auto c = Client();
  struct Case {
    std::string method, path;
    std::string message;  // exact
  } cases[] = {
      {"GET", "/v1/jobs?limit=5&limit=6",
       "query parameter 'limit' is given twice for GET /v1/jobs; keep one"},
      // The same value twice is no less ambiguous a request.
      {"GET", "/v1/allocations?state=running&limit=5&limit=5",
       "query parameter 'limit' is given twice for GET /v1/allocations; keep one"},
      {"GET", "/v1/jobs?after=1&after=2&after=3",
       "query parameter 'after' is given 3 times for GET /v1/jobs; keep one"},
      // A name is compared as decoded: %6C is 'l'.
      {"GET", "/v1/jobs?%6Cimit=5&limit=6",
       "query parameter 'limit' is given twice for GET /v1/jobs; keep one"},
      {"GET", "/v1/jobs/1/log?follow=1&follow=0",
       "query parameter 'follow' is given twice for GET /v1/jobs/1/log; keep one"},
      {"GET", "/v1/reservations?prefix=a&prefix=b",
       "query parameter 'prefix' is given twice for GET /v1/reservations; keep one"},
      // Regression (follow_yes_read_as_no): "yes" answered the log so far without a word.
      {"GET", "/v1/jobs/1/log?follow=yes",
       "query parameter 'follow' must be 1, true, 0 or false, got 'yes'"},
      {"DELETE", "/v1/allocations?owner=a&owner=b",
       "query parameter 'owner' is given twice for DELETE /v1/allocations; keep one"},
  };
  for (const Case& k : cases) {
    auto r = k.method == "GET" ? c.Get(k.path.c_str()) : c.Delete(k.path.c_str());
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, 400) << k.path;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "INVALID_ARGUMENT") << k.path;
    EXPECT_EQ(Message(r), k.message) << k.path;
  }
  // The refused DELETE released nothing; each parameter once is still served.
  EXPECT_TRUE(api_->released_owners().empty());
  auto once = c.Delete("/v1/allocations?owner=a");
  ASSERT_TRUE(once);
  EXPECT_EQ(once->status, 200);
  EXPECT_EQ(api_->released_owners(), std::vector<std::string>{"a"});
  auto ok = c.Get("/v1/jobs?limit=5&state=running&after=0");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// Regression (location_not_url_encoded): POST /v1/reservations answered
// "Location: /v1/reservations/<owner>" with the owner key as given, though a key may hold any
// character but control ones: a space, '/', '?', '#' or '%' made a Location that names another
// resource, or none. The key is now one percent-encoded path segment, which the API reads back.
TEST_F(HttpServerTest, LocationIsUrlEncoded) {
  auto c = Client();
  struct Case {
    std::string owner;
    std::string location;  // by hand: every byte but A-Z a-z 0-9 - _ . ~ : as %XX
  } cases[] = {
      {"slurm-room:n1:3g.20gb:0", "/v1/reservations/slurm-room:n1:3g.20gb:0"},
      {"a/b c", "/v1/reservations/a%2Fb%20c"},
      {"x?y=1#z%", "/v1/reservations/x%3Fy%3D1%23z%25"},
      {"caf\u00e9+&", "/v1/reservations/caf%C3%A9%2B%26"},  // é is C3 A9 in UTF-8
  };
  // The answer's head as sent: httplib's client decodes a Location header it reads.
  auto location_sent = [&](const std::string& path, const std::string& body) {
    const int fd = Connect(server_->port());
    EXPECT_GE(fd, 0);
    const std::string answer =
        Exchange(fd, fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                 "sekrit\r\nContent-Type: application/json\r\nContent-Length: "
                                 "{}\r\nConnection: close\r\n\r\n{}",
                                 path, body.size(), body));
    ::close(fd);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 201")) << answer;
    const size_t at = answer.find("\r\nLocation: ");
    if (at == std::string::npos) return std::string("(none)");
    const size_t from = at + std::string_view("\r\nLocation: ").size();
    return answer.substr(from, answer.find("\r\n", from) - from);
  };
  for (const Case& k : cases) {
    const json body = {{"owner", k.owner},
                       {"placements", {{{"gpu", 0}, {"profile", "1g.5gb"}, {"start", 0}}}}};
    EXPECT_EQ(location_sent("/v1/reservations", body.dump()), k.location);
    // The Location names that owner: the stub knows no reservation and says whose it looked for.
    auto g = c.Get(k.location.c_str());
    ASSERT_TRUE(g) << k.location;
    EXPECT_EQ(g->status, 404);
    EXPECT_EQ(Message(g), "no reservation '" + k.owner + "'");
  }
  // Ids are digits: the Location of a job is as before.
  EXPECT_EQ(location_sent("/v1/jobs", R"({"profile": "2g.10gb", "command": ["true"]})"),
            "/v1/jobs/1");
}

TEST_F(HttpServerTest, GpusPlanPauseResumeDrain) {
  auto c = Client();
  auto g = c.Get("/v1/gpus");
  ASSERT_TRUE(g);
  const json gpus = json::parse(g->body)["gpus"];
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0]["frag_cost"], 0.25);
  auto node = c.Get("/v1/node");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->status, 200);
  EXPECT_EQ(json::parse(node->body)["generation"], 7);
  EXPECT_EQ(json::parse(node->body)["scheduler"]["policy"], "full");
  auto p = c.Post("/v1/plan", R"({"profile": "2g.10gb", "command": ["x"]})", "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 200);
  EXPECT_EQ(json::parse(p->body)["steps"][0], "create 2g.10gb@4 on GPU 0");
  auto pause = c.Post("/v1/scheduler/pause");
  ASSERT_TRUE(pause);
  EXPECT_EQ(json::parse(pause->body)["paused"], true);
  EXPECT_TRUE(api_->paused());
  auto resume = c.Post("/v1/scheduler/resume");
  ASSERT_TRUE(resume);
  EXPECT_EQ(json::parse(resume->body)["paused"], false);
  auto drain = c.Post("/v1/gpus/0/drain");
  ASSERT_TRUE(drain);
  EXPECT_EQ(drain->status, 200);
  EXPECT_EQ(drain->body, "{\"gpu\":0,\"draining\":true}\n");
  auto undrain = c.Post("/v1/gpus/0/undrain", "", "application/json");
  ASSERT_TRUE(undrain);
  EXPECT_EQ(undrain->status, 200);
  EXPECT_EQ(undrain->body, "{\"gpu\":0,\"draining\":false}\n");
  EXPECT_EQ(api_->undrained_, 0);
  auto unknown = c.Post("/v1/gpus/3/undrain", "", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST_F(HttpServerTest, LogWholeAndFollowed) {
  auto c = Client();
  ASSERT_EQ(c.Post("/v1/jobs", R"({"profile": "p", "command": ["x"]})", "application/json")->status,
            201);
  auto empty = c.Get("/v1/jobs/1/log");  // no log file yet: an empty log
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 200);
  EXPECT_EQ(empty->body, "");
  { std::ofstream(api_->LogPath(1)) << "line 1\n"; }
  auto whole = c.Get("/v1/jobs/1/log");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->body, "line 1\n");
  // Follow: the stream must deliver what is appended later and end once the job is terminal.
  std::thread writer([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    { std::ofstream(api_->LogPath(1), std::ios::app) << "line 2\n"; }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    api_->Finish(1);
  });
  auto followed = c.Get("/v1/jobs/1/log?follow=1");
  writer.join();
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, "line 1\nline 2\n");
}

// Regression (trial_allocation_log_follow_hung): following an allocation's log (it runs no
// process) waited until its release; it answers at once, empty. The client gives up after 5 s, so
// the old behaviour fails here instead of hanging.
TEST_F(HttpServerTest, AnAllocationsLogAnswersAtOnceEvenFollowed) {
  const DaemonJobId id = api_->AddAllocation();
  auto c = Client();
  c.set_read_timeout(5, 0);
  for (const char* query : {"", "?follow=1"}) {
    SCOPED_TRACE(query);
    auto r = c.Get(fmt::format("/v1/jobs/{}/log{}", id, query));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "");
  }
}

// Job 1 of `api`: it never ends, so its log is followed until the server stops.
void SubmitANeverEndingJob(StubApi& api) {
  JobRequest never;
  never.profile = "p";
  never.command = {"x"};
  ASSERT_OK(api.Submit(never, ""));
}

// Follows job 1's log on the server at `port` until the stream ends; `following` is incremented
// once the answer's head has come.
void FollowJobOne(int port, std::atomic<int>* following) {
  httplib::Client c("127.0.0.1", port);
  c.set_bearer_token_auth("sekrit");
  c.set_read_timeout(3600);
  c.Get(
      "/v1/jobs/1/log?follow=1",
      [following](const httplib::Response&) {
        ++*following;
        return true;
      },
      [](const char*, size_t) { return true; });
}

// Regression (few_connections_block_the_api): httplib's fixed pool of 16
// threads let 16 idle connections delay /healthz by seconds and 16 `logs -f`
// followers block every call until their jobs ended. Each connection has a
// thread of its own now (up to max_connections). The idle timeout here is
// long (30 s): a blocked API would not answer within the client's 5 s.
TEST(HttpConnectionsTest, IdleConnectionsAndFollowersDoNotBlockTheApi) {
  const auto dir = testing::MakeTempDir("migsched-http");
  StubApi api(dir);
  SubmitANeverEndingJob(api);
  HttpServerOptions o;
  o.token = "sekrit";
  o.idle_timeout_s = 30;
  o.request_timeout_s = 30;
  o.max_connections = 512;
  o.follow_poll_ms = 10;
  HttpServer server(&api, o);
  ASSERT_OK(server.Bind("127.0.0.1:0"));
  std::thread serving([&] { EXPECT_OK(server.Serve()); });
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) {
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  std::vector<std::thread> followers;
  std::atomic<int> following{0};
  for (int i = 0; i < 64; ++i) {
    followers.emplace_back([&] { FollowJobOne(server.port(), &following); });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (following < 64 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(following, 64);
  httplib::Client c("127.0.0.1", server.port());
  c.set_bearer_token_auth("sekrit");
  c.set_read_timeout(5);
  c.set_connection_timeout(5);
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h) << httplib::to_string(h.error());
  EXPECT_EQ(h->status, 200);
  auto jobs = c.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200);
  server.Stop();  // ends the follow streams
  for (std::thread& t : followers) t.join();
  for (int fd : idle) ::close(fd);
  serving.join();
}

// Regression: httplib's is_running() stays true until every connection's worker has returned,
// and a connection kept alive after its last answer waited on it for the whole idle timeout: a
// `logs -f` follower held SIGTERM's stop for 5 s (the default idle_timeout_s), long enough for a
// restart to find the state dir still in use. With an idle timeout of an hour, a stop that waited
// for it would hang here until ctest's timeout fails the test.
TEST(HttpConnectionsTest, AStopDoesNotWaitForKeptAliveConnections) {
  const auto dir = testing::MakeTempDir("migsched-http");
  StubApi api(dir);
  SubmitANeverEndingJob(api);
  HttpServerOptions o;
  o.token = "sekrit";
  o.idle_timeout_s = 3600;
  o.request_timeout_s = 3600;
  o.follow_poll_ms = 10;
  HttpServer server(&api, o);
  ASSERT_OK(server.Bind("127.0.0.1:0"));
  std::thread serving([&] { EXPECT_OK(server.Serve()); });
  std::atomic<int> following{0};
  std::thread follower([&] { FollowJobOne(server.port(), &following); });
  // A client that keeps its connection open after an answer.
  httplib::Client kept("127.0.0.1", server.port());
  kept.set_bearer_token_auth("sekrit");
  kept.set_keep_alive(true);
  auto jobs = kept.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200);
  while (following == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.Stop();
  serving.join();  // returns once the stop has ended both connections
  follower.join();
}

// Regression (listen_backlog_5): a burst of connections waited for a
// 1-second SYN retransmit. A server that has bound but accepts nothing yet
// completes 64 handshakes at once (the kernel queues them up to the backlog).
TEST(HttpConnectionsTest, ListenBacklogTakesABurstOfConnections) {
  const auto dir = testing::MakeTempDir("migsched-http");
  StubApi api(dir);
  HttpServerOptions o;
  o.token = "sekrit";
  HttpServer server(&api, o);
  ASSERT_OK(server.Bind("127.0.0.1:0"));  // not serving: nothing is accepted
  std::vector<int> fds;
  int connected = 0;
  for (int i = 0; i < 64; ++i) {
    const int fd = Connect(server.port(), /*nonblocking=*/true);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // Every handshake completes within 3 s (on loopback it takes microseconds;
  // a dropped SYN would be retried after 1 s, and dropped again).
  std::vector<pollfd> pending;
  for (int fd : fds) pending.push_back({fd, POLLOUT, 0});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    if (::poll(pending.data(), pending.size(), 100) <= 0) continue;
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->revents == 0) {
        ++it;
        continue;
      }
      int err = -1;
      socklen_t len = sizeof err;
      if (::getsockopt(it->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) ++connected;
      it = pending.erase(it);
    }
  }
  EXPECT_EQ(connected, 64);
  for (int fd : fds) ::close(fd);
}

// Regression (idle_connections_never_closed): a connection that sends
// nothing is closed after idle_timeout_s (1 s in this fixture).
TEST_F(HttpServerTest, IdleConnectionIsClosed) {
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "not closed within 10 s";
  char b;
  EXPECT_EQ(::recv(fd, &b, 1, 0), 0);  // orderly close by the server
  ::close(fd);
}

// Regression request_body_run_as_the_next_request: a body the server does not read (a route that
// takes none, or a request refused before its body is read: the 401 of a POST without a token)
// stayed on the connection and was parsed as the next request, so a body holding a whole request
// (here a pause, with the token) was carried out after the first answer. Now such a connection
// closes after its answer: one status line each, and nothing paused.
TEST_F(HttpServerTest, AnUnreadBodyIsNeverTheNextRequest) {
  const std::string inner =
      "POST /v1/scheduler/pause HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Content-Length: 0\r\n\r\n";
  for (const std::string outer : {"GET /healthz", "POST /v1/jobs", "GET /v1/gpus"}) {
    SCOPED_TRACE(outer);
    const int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    std::string head = outer + " HTTP/1.1\r\nHost: x\r\n";
    if (outer == "GET /v1/gpus") head += "Authorization: Bearer sekrit\r\n";
    head += "Content-Length: " + std::to_string(inner.size()) + "\r\n\r\n";
    const std::string text = head + inner;
    (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    std::string answer;  // everything until the server closes (or 3 s of silence)
    char buf[4096];
    for (pollfd p{fd, POLLIN, 0}; ::poll(&p, 1, 3000) > 0;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      answer.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    size_t status_lines = 0;
    for (size_t at = answer.find("HTTP/1.1 "); at != std::string::npos;
         at = answer.find("HTTP/1.1 ", at + 1)) {
      ++status_lines;
    }
    EXPECT_EQ(status_lines, 1u) << answer;
    EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
    EXPECT_FALSE(api_->paused());
  }
}

// Regression (chunked_body_read_whole): the body limit was not applied to
// chunked bodies (a 100 MB body was read into memory).
TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413) {
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  std::string req =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n";
  for (int i = 0; i < 3; ++i) req += "1f4\r\n" + std::string(500, ' ') + "\r\n";  // 1500 > 1000
  req += "0\r\n\r\n";
  const std::string answer = Exchange(fd, req);
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer.substr(0, 200);
  EXPECT_NE(answer.find("request body larger than max_body_bytes (1000 bytes)"), std::string::npos);
  EXPECT_EQ(api_->size(), 0u);
}

// Regression: a request URI over httplib's limit got a 414 whose body said only "HTTP status
// 414". The limit is on the request line: 8192 bytes with its CRLF (httplib's default).
TEST_F(HttpServerTest, TooLongRequestUriGets414WithJsonErrorNamingTheLimit) {
  const auto request_line = [](size_t bytes) {
    const std::string head = "GET /v1/nothing/";
    const std::string tail = " HTTP/1.1\r\n";
    return head + std::string(bytes - head.size() - tail.size(), 'a') + tail;
  };
  const std::string rest = "Host: x\r\nAuthorization: Bearer sekrit\r\n\r\n";
  ASSERT_EQ(request_line(8192).size(), 8192u);
  int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  std::string answer = Exchange(fd, request_line(8192) + rest);
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 404")) << answer.substr(0, 200);  // at the limit

  fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  answer = Exchange(fd, request_line(8193) + rest);
  ::close(fd);
  ASSERT_TRUE(answer.starts_with("HTTP/1.1 414")) << answer.substr(0, 200);
  EXPECT_NE(answer.find("Content-Type: application/json\r\n"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
  const size_t body = answer.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(json::parse(answer.substr(body + 4)),
            json::parse(R"({"error": {"code": "RESOURCE_EXHAUSTED", "message": "request URI too )"
                        R"(long: the request line (method, URI and HTTP version) may be at most )"
                        R"(8192 bytes"}})"));
}

// Regression (no_tcp_nodelay): every keep-alive request after the first
// waited ~40 ms for Nagle's algorithm. The server's accepted sockets have
// TCP_NODELAY set.
TEST_F(HttpServerTest, AcceptedConnectionsHaveNoDelay) {
  auto c = Client();
  c.set_keep_alive(true);
  ASSERT_TRUE(c.Get("/healthz"));
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(e.path().filename().string());
    sockaddr_in local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != server_->port() ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) {
      continue;  // not an accepted connection of the server
    }
    int on = 0;
    socklen_t len = sizeof on;
    ASSERT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
    EXPECT_NE(on, 0) << "fd " << fd;
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// Regression (every_401_logged): every refused request wrote a warning, so
// a client without a token could flood the log. One warning per 10 s, with
// the count of the others.
TEST_F(HttpServerTest, RefusalsAreLoggedAtMostEveryTenSeconds) {
  std::string log;
  {
    LogCapture capture;
    auto c = Client("bad-token");
    for (int i = 0; i < 20; ++i) ASSERT_EQ(c.Get("/v1/jobs")->status, 401);
    log = capture.text();
  }
  size_t lines = 0;
  for (size_t at = log.find("refused"); at != std::string::npos; at = log.find("refused", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("GET /v1/jobs from 127.0.0.1:"), std::string::npos) << log;
}

// Regression (forged_log_line_without_token): a refused request's path was logged as decoded, so
// a client without a token wrote a line of its own into the log ("%0A[…] [info] FORGED") and a
// raw ESC. Control characters are escaped: the refusal is one line.
TEST_F(HttpServerTest, ARefusedPathCannotForgeALogLine) {
  std::string log;
  {
    LogCapture capture;
    auto c = Client("bad-token");
    auto r = c.Get("/v1/x%0A%5Binfo%5D%20FORGED%1b%5B31m");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    log = capture.text();
  }
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;  // the refusal's line only
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_NE(log.find("GET /v1/x\\n[info] FORGED\\x1b[31m from 127.0.0.1:"), std::string::npos)
      << log;
}

// Regression (put_patch_400): methods a route does not take got 400.
TEST_F(HttpServerTest, OtherMethodsGet405WithAllow) {
  auto c = Client();
  auto put = c.Put("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, POST");
  EXPECT_EQ(Message(put), "method PUT is not allowed on /v1/jobs (allowed: GET, POST)");
  auto patch = c.Patch("/v1/jobs/1", "{}", "application/json");
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->status, 405);
  EXPECT_EQ(patch->get_header_value("Allow"), "GET, DELETE");
  auto del = c.Delete("/v1/gpus");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto nowhere = c.Put("/v1/nothing", "{}", "application/json");
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);
}

TEST_F(HttpServerTest, HealthzSaysWhyTheDaemonIsDegraded) {
  api_->health_ = UnavailableError("the job store cannot be written (disk full)");
  auto h = Client("").Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);  // alive: a liveness probe must not restart it for a full disk
  EXPECT_EQ(json::parse(h->body)["status"], "degraded");
  EXPECT_EQ(json::parse(h->body)["reason"], "the job store cannot be written (disk full)");
}

TEST(HttpServerHostTest, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "example.org", ""}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(PrometheusTest, RendersEveryFamily) {
  DaemonMetrics m;
  m.jobs_by_state = {{"queued", 2}, {"running", 1}};
  m.queue_length = 2;
  m.paused = true;
  m.reconfigurations = 3;
  Histogram reconfig(ReconfigurationBuckets());
  for (double v : {0.5, 0.25, 3.0}) reconfig.Observe(v);
  m.reconfig_seconds = reconfig.Snapshot();
  m.migrations_intra = 1;
  m.migrations_inter = 4;
  Histogram decision(DecisionBuckets());
  for (double v : {0.00002, 0.002}) decision.Observe(v);
  m.decision_seconds = decision.Snapshot();
  GpuView g;
  g.index = 1;
  g.uuid = "GPU-1";
  g.model = "A100 40GB";
  g.utilisation = 0.5;
  g.frag_cost = 0.25;
  g.pcie = PcieThroughput{10, 20};
  // Two busy 1g.5gb (GI 9 and 10), one idle 2g.10gb (GI 3), one reserved, one being destroyed.
  auto inst = [](std::string profile, unsigned gi, bool busy, HolderKind holder) {
    InstanceView i;
    i.profile = std::move(profile);
    i.gi_id = gi;
    i.mig_uuid = "MIG-" + std::to_string(gi);
    i.busy = busy;
    i.holder = holder;
    return i;
  };
  g.instances = {inst("1g.5gb", 9, true, HolderKind::kJob),
                 inst("1g.5gb", 10, true, HolderKind::kAllocation),
                 inst("2g.10gb", 3, false, HolderKind::kIdle),
                 inst("3g.20gb", 2, true, HolderKind::kReservation),
                 inst("1g.5gb", 13, true, HolderKind::kPlaceholder)};
  g.free_instances = {{"1g.5gb", 1}, {"7g.40gb", 0}};
  GpuView h;
  h.index = 2;           // no PCIe measurement: no PCIe sample for it
  h.uuid = "GPU-\"2\"";  // escaped in the labels
  m.gpus = {g, h};
  m.hostname = "node-a";
  m.oldest_wait_s = 42.5;
  m.limit_power = 0.25;
  m.limit_power_runs = 37;
  m.last_tick_unix = 1800000000.25;
  m.ended = {{{"job", "timeout"}, 2}, {{"allocation", "released"}, 5}};
  m.busy_seconds = {{InstanceKey{1, 9, "1g.5gb"}, 120.5}};
  const std::string text = RenderPrometheus(m);
  const std::string g1 = R"(gpu="1",UUID="GPU-1",model_name="A100 40GB",Hostname="node-a")";
  for (const std::string& line : std::vector<std::string>{
           "# TYPE migsched_jobs gauge",
           "migsched_jobs{state=\"queued\"} 2",
           "migsched_jobs{state=\"running\"} 1",
           "migsched_queue_length 2",
           "migsched_scheduler_paused 1",
           "migsched_store_degraded 0",
           "migsched_gpu_utilisation{" + g1 + "} 0.5",
           "migsched_gpu_fragcost{" + g1 + "} 0.25",
           R"(migsched_gpu_fragcost{gpu="2",UUID="GPU-\"2\"",model_name="",Hostname="node-a"} 0)",
           "migsched_queue_oldest_wait_seconds 42.5",
           "migsched_queue_limit_power 0.25",
           "migsched_queue_limit_power_runs 37",
           "migsched_control_loop_last_tick_timestamp_seconds 1800000000.25",
           "# TYPE migsched_jobs_ended_total counter",
           R"(migsched_jobs_ended_total{kind="job",outcome="timeout"} 2)",
           R"(migsched_jobs_ended_total{kind="allocation",outcome="released"} 5)",
           // By profile and state: 1g busy 2 (job, allocation), destroying 1; 2g idle 1; 3g
           // reserved 1.
           "migsched_mig_instances{" + g1 + R"(,GPU_I_PROFILE="1g.5gb",state="busy"} 2)",
           "migsched_mig_instances{" + g1 + R"(,GPU_I_PROFILE="1g.5gb",state="destroying"} 1)",
           "migsched_mig_instances{" + g1 + R"(,GPU_I_PROFILE="2g.10gb",state="idle"} 1)",
           "migsched_mig_instances{" + g1 + R"(,GPU_I_PROFILE="3g.20gb",state="reserved"} 1)",
           "migsched_mig_free_instances{" + g1 + R"(,GPU_I_PROFILE="1g.5gb"} 1)",
           "migsched_mig_free_instances{" + g1 + R"(,GPU_I_PROFILE="7g.40gb"} 0)",
           "migsched_mig_instance_busy{" + g1 + R"(,GPU_I_PROFILE="1g.5gb",GPU_I_ID="9"} 1)",
           "migsched_mig_instance_busy{" + g1 + R"(,GPU_I_PROFILE="2g.10gb",GPU_I_ID="3"} 0)",
           "# TYPE migsched_mig_instance_busy_seconds_total counter",
           "migsched_mig_instance_busy_seconds_total{" + g1 +
               R"(,GPU_I_PROFILE="1g.5gb",GPU_I_ID="9"} 120.5)",
           "migsched_mig_instance_busy_seconds_total{" + g1 +
               R"(,GPU_I_PROFILE="1g.5gb",GPU_I_ID="10"} 0)",
           "# TYPE migsched_reconfigurations_total counter",
           "migsched_reconfigurations_total 3",
           "# TYPE migsched_reconfiguration_seconds histogram",
           // Samples 0.5, 0.25, 3: ≤0.1 none, ≤0.25 one (le is inclusive), ≤0.5 two,
           // ≤2.5 two, ≤5 three; sum 3.75.
           "migsched_reconfiguration_seconds_bucket{le=\"0.1\"} 0",
           "migsched_reconfiguration_seconds_bucket{le=\"0.25\"} 1",
           "migsched_reconfiguration_seconds_bucket{le=\"0.5\"} 2",
           "migsched_reconfiguration_seconds_bucket{le=\"2.5\"} 2",
           "migsched_reconfiguration_seconds_bucket{le=\"5\"} 3",
           "migsched_reconfiguration_seconds_bucket{le=\"+Inf\"} 3",
           "migsched_reconfiguration_seconds_sum 3.75",
           "migsched_reconfiguration_seconds_count 3",
           "migsched_migrations_total{kind=\"intra\"} 1",
           "migsched_migrations_total{kind=\"inter\"} 4",
           // 2e-5 ≤ 5e-5; 2e-3 ≤ 5e-3.
           "migsched_decision_seconds_bucket{le=\"1e-05\"} 0",
           "migsched_decision_seconds_bucket{le=\"5e-05\"} 1",
           "migsched_decision_seconds_bucket{le=\"0.001\"} 1",
           "migsched_decision_seconds_bucket{le=\"0.005\"} 2",
           "migsched_decision_seconds_count 2",
           // 10 KB/s × 1024 = 10240 B/s.
           "migsched_gpu_pcie_tx_bytes_per_second{" + g1 + "} 10240",
           "migsched_gpu_pcie_rx_bytes_per_second{" + g1 + "} 20480",
       }) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n---\n" << text;
  }
  EXPECT_EQ(text.find("pcie_tx_bytes_per_second{gpu=\"2\","), std::string::npos);
}

// Regression (histograms_rebuilt_from_recent_samples): /metrics histograms
// were rebuilt from the last 10,000 samples, so their counts went down once
// more came; Prometheus needs counts that only grow.
TEST(PrometheusTest, HistogramCountsNeverGoDown) {
  Histogram h(DecisionBuckets());
  uint64_t last_count = 0;
  std::vector<uint64_t> last(DecisionBuckets().size(), 0);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 6000; ++i) h.Observe(i % 2 == 0 ? 2e-5 : 0.2);
    const HistogramSnapshot s = h.Snapshot();
    EXPECT_EQ(s.count, last_count + 6000);  // 18,000 in the end: past the old 10,000 cap
    for (size_t b = 0; b < s.cumulative.size(); ++b) {
      EXPECT_GE(s.cumulative[b], last[b]);
      if (b > 0) {
        EXPECT_GE(s.cumulative[b], s.cumulative[b - 1]);  // cumulative
      }
      last[b] = s.cumulative[b];
    }
    last_count = s.count;
  }
  // 9,000 of 2e-5 (≤ 5e-5), 9,000 of 0.2 (≤ 0.5).
  EXPECT_EQ(h.Snapshot().cumulative[1], 9000u);
  EXPECT_EQ(h.Snapshot().cumulative[9], 18000u);
}

}  // namespace
}  // namespace migsched

namespace migsched {
namespace {

// A server with small connection limits on a StubApi, serving until destroyed.
class GatedServer {
 public:
  explicit GatedServer(HttpServerOptions o)
      : dir_(testing::MakeTempDir("migsched-http")), api_(dir_) {
    o.token = "sekrit";
    server_ = std::make_unique<HttpServer>(&api_, o);
    EXPECT_OK(server_->Bind("127.0.0.1:0"));
    thread_ = std::thread([this] { EXPECT_OK(server_->Serve()); });
  }
  ~GatedServer() {
    server_->Stop();
    thread_.join();
  }
  int port() const { return server_->port(); }
  StubApi& api() { return api_; }

 private:
  std::filesystem::path dir_;
  StubApi api_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// Sends `text` one byte every `gap_ms`, reading what the server sends back;
// stops when the server closes the connection (*closed) or, after all was
// sent, when 5 s pass without an answer. What the server sent.
std::string Trickle(int fd, const std::string& text, int gap_ms, bool* closed) {
  std::string reply;
  char buf[512];
  *closed = false;
  auto read_some = [&](int wait_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;
      return false;
    }
    reply.append(buf, static_cast<size_t>(n));
    return true;
  };
  for (char c : text) {
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) {
      *closed = true;
      return reply;
    }
    while (read_some(gap_ms)) {
    }
    if (*closed) return reply;
  }
  while (read_some(5000)) {
  }
  return reply;
}

// Whether the peer has closed `fd` (EOF or reset) within 5 s.
bool ClosedByServer(int fd) {
  char buf[512];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
}

// A job's body, and the head of an authenticated POST /v1/jobs saying `content_length`.
constexpr char kJobBody[] = R"({"profile":"1g.5gb","command":["true"]})";
std::string JobsPostHead(size_t content_length) {
  return "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

// Regression (slowloris_starves_the_api): 1,100 connections sending one byte a
// second held every thread, so /healthz and the hooks' calls went unanswered.
// A request head must arrive within header_timeout_s in all, not per read: a
// head trickled at one byte per 50 ms (each read well within
// request_timeout_s) is cut off after 0.3 s and never answered.
TEST(HttpConnectionsTest, ATricklingConnectionIsClosedAfterTheHeadDeadline) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  o.header_timeout_s = 0.3;
  GatedServer server(o);
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  // 40 bytes at 50 ms: 2 s to send it all, far past the 0.3 s deadline.
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: somewhere\r\n\r\n";
  bool closed = false;
  const std::string reply = Trickle(fd, head, 50, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
  ::close(fd);
  // A prompt client is still served.
  const int ok = Connect(server.port());
  EXPECT_TRUE(Exchange(ok, head).starts_with("HTTP/1.1 200"));
  ::close(ok);
}

TEST(HttpConnectionsTest, ATricklingBodyIsClosedAfterTheBodyDeadline) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  o.body_timeout_s = 0.3;
  GatedServer server(o);
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const std::string body = kJobBody;
  const std::string head = JobsPostHead(body.size());
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  // ~40 bytes at 50 ms: 2 s, past the 0.3 s body deadline.
  bool closed = false;
  const std::string reply = Trickle(fd, body, 50, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(reply.find("HTTP/1.1 201"), std::string::npos) << reply;
  ::close(fd);
  EXPECT_EQ(server.api().size(), 0u);  // nothing was submitted
}

// Reads from `fd` until the server closes it or 5 s pass: everything it sent, and whether it
// closed.
std::string ReadUntilClosed(int fd, bool* closed) {
  std::string out;
  char buf[4096];
  *closed = false;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return out;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Regression: a body cut short (Content-Length above what arrived by the body deadline) was
// handed to the handler as it stood, and a complete JSON object in it was carried out (a job
// submitted). It is refused with 400 and the connection closed.
TEST(HttpConnectionsTest, ABodyCutShortIsRefusedNotCarriedOut) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  o.body_timeout_s = 0.3;
  GatedServer server(o);
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const std::string body = kJobBody;
  const std::string req = JobsPostHead(body.size() + 50) + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  bool closed = false;
  const std::string reply = ReadUntilClosed(fd, &closed);
  ::close(fd);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
  EXPECT_NE(reply.find("malformed HTTP request: the body did not arrive in full"),
            std::string::npos)
      << reply;
  EXPECT_TRUE(closed);
  EXPECT_EQ(server.api().size(), 0u);  // nothing was submitted
}

// Regression: a POST without Content-Length (a bare `curl -X POST`) waited for the read timeout
// and was then carried out (the scheduler paused) with whatever had come. It is refused at once,
// as docs/api.md says, and nothing is done.
TEST(HttpConnectionsTest, APostWithoutALengthIsRefusedAtOnce) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  GatedServer server(o);
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const std::string answer = Exchange(fd,
                                      "POST /v1/scheduler/pause HTTP/1.1\r\nHost: x\r\n"
                                      "Authorization: Bearer sekrit\r\n\r\n");
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;
  EXPECT_NE(answer.find("malformed HTTP request: a POST needs a Content-Length"), std::string::npos)
      << answer;
  EXPECT_FALSE(server.api().paused());
}

// Regression: after a request the server could not read (a garbage request line; two
// Content-Length headers, or one with Transfer-Encoding, which a proxy in front may read
// otherwise: request smuggling), the
// connection stayed open and the bytes after it ran as the next request. The connection now ends
// with the 400: the authenticated pause sent behind it is never carried out.
TEST(HttpConnectionsTest, AnUnreadableRequestEndsItsConnection) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  GatedServer server(o);
  const std::string pause =
      "POST /v1/scheduler/pause HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Content-Length: 0\r\n\r\n";
  const std::string two_lengths =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}";
  // Regression (length_and_chunked_kept_the_connection): both framings were answered and the
  // connection kept.
  const std::string length_and_chunked =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
  for (const std::string& first :
       {std::string("GARBAGE\r\n\r\n"), two_lengths, length_and_chunked}) {
    SCOPED_TRACE(first.substr(0, 20));
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    const std::string both = first + pause;
    ASSERT_EQ(::send(fd, both.data(), both.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(both.size()));
    bool closed = false;
    const std::string reply = ReadUntilClosed(fd, &closed);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
    EXPECT_EQ(CountOf(reply, "HTTP/1.1 "), 1) << reply;
    EXPECT_TRUE(closed);
    EXPECT_FALSE(server.api().paused());
    EXPECT_EQ(server.api().size(), 0u);
  }
}

// Regression transfer_coding_besides_chunked: "Transfer-Encoding: chunked, gzip" (chunked not
// last) was read as a body without a length, up to the client's close, and the job submitted;
// "Chunked" in capitals was refused as a POST without a length. Now a coding other than chunked
// alone is answered 501 and the connection closed, nothing submitted; chunked is read in any case.
TEST(HttpConnectionsTest, OnlyTheChunkedTransferCodingIsRead) {
  HttpServerOptions o;
  o.request_timeout_s = 5;
  GatedServer server(o);
  const std::string body = kJobBody;
  const std::string head =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
      "Content-Type: application/json\r\nTransfer-Encoding: ";
  for (const std::string coding : {"chunked, gzip", "gzip, chunked", "gzip"}) {
    SCOPED_TRACE(coding);
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    const std::string req = head + coding + "\r\n\r\n" + body;
    ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    ::shutdown(fd, SHUT_WR);
    bool closed = false;
    const std::string reply = ReadUntilClosed(fd, &closed);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 501")) << reply;
    EXPECT_NE(reply.find("Transfer-Encoding '" + coding + "' is not supported (chunked only)"),
              std::string::npos)
        << reply;
    EXPECT_TRUE(closed);
  }
  EXPECT_EQ(server.api().size(), 0u);
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const std::string answer =
      Exchange(fd, head + "Chunked\r\n\r\n" + fmt::format("{:x}", body.size()) + "\r\n" + body +
                       "\r\n0\r\n\r\n");
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 201")) << answer;
  EXPECT_EQ(server.api().size(), 1u);
}

// The N+1th connection of a peer whose N connections are all authenticated is
// refused with 503.
TEST(HttpConnectionsTest, ThePerPeerCapRefusesTheNPlusFirst) {
  HttpServerOptions o;
  o.max_connections_per_peer = 2;
  o.idle_timeout_s = 30;
  GatedServer server(o);
  const std::string authed =
      "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n\r\n";
  std::vector<int> fds;
  for (int i = 0; i < 2; ++i) {
    fds.push_back(Connect(server.port()));
    ASSERT_TRUE(Exchange(fds.back(), authed).starts_with("HTTP/1.1 200"));  // kept alive
  }
  const int third = Connect(server.port());
  const std::string refused = Exchange(third, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503 Service Unavailable")) << refused;
  // Regression (busy_503_without_body): with the JSON error body every error has.
  EXPECT_NE(refused.find("Content-Type: application/json"), std::string::npos) << refused;
  EXPECT_NE(refused.find(R"({"error":{"code":"UNAVAILABLE","message":"too many connections from )"
                         R"(127.0.0.1 (max_connections_per_peer 2), all authenticated; close idle )"
                         R"(ones or retry later"}})"),
            std::string::npos)
      << refused;
  ::close(third);
  // The first two still work.
  for (int fd : fds) {
    EXPECT_TRUE(Exchange(fd, authed).starts_with("HTTP/1.1 200"));
    ::close(fd);
  }
}

// A peer at its cap makes room by closing its own oldest unauthenticated
// connection; past max_unauthenticated_connections, the oldest unauthenticated
// connection of any peer is closed. Authenticated ones are never closed.
TEST(HttpConnectionsTest, TheOldestUnauthenticatedConnectionMakesRoom) {
  HttpServerOptions o;
  o.max_connections_per_peer = 100;
  o.max_unauthenticated_connections = 2;
  o.idle_timeout_s = 30;
  o.request_timeout_s = 30;
  GatedServer server(o);
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string authed =
      "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n\r\n";
  const int with_token = Connect(server.port());
  ASSERT_TRUE(Exchange(with_token, authed).starts_with("HTTP/1.1 200"));
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(Connect(server.port()));
    // Answered (so admitted) before the next one connects.
    ASSERT_TRUE(Exchange(fds.back(), healthz).starts_with("HTTP/1.1 200")) << i;
  }
  // Two unauthenticated at most: the third evicted the first.
  EXPECT_TRUE(ClosedByServer(fds[0]));
  EXPECT_TRUE(Exchange(fds[1], healthz).starts_with("HTTP/1.1 200"));
  EXPECT_TRUE(Exchange(fds[2], healthz).starts_with("HTTP/1.1 200"));
  EXPECT_TRUE(Exchange(with_token, authed).starts_with("HTTP/1.1 200"));
  for (int fd : fds) ::close(fd);
  ::close(with_token);
}

}  // namespace
}  // namespace migsched
