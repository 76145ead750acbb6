// The extender over real HTTP on loopback, as kube-scheduler calls it:
// POST <urlPrefix>/<verb> with Content-Type application/json.
#include "k8s/extender/extender_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "k8s/testing/test_pki.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

// Every node fits, score 5; a reservation is never asked for here.
class EveryNodeFits : public PlacementEngine {
 public:
  std::vector<Verdict> Filter(const PodInfo&, const std::vector<std::string>& nodes) override {
    return std::vector<Verdict>(nodes.size(), Verdict{true, ""});
  }
  std::vector<int64_t> Prioritize(const PodInfo&, const std::vector<std::string>& n) override {
    return std::vector<int64_t>(n.size(), 5);
  }
  void ReleaseElsewhere(const PodInfo&, const std::string&) override {}
  StatusOr<PodReservation> Reserve(const PodInfo&, const std::string&) override {
    return InternalError("not in this test");
  }
  Status Release(const PodInfo&, const std::string&) override { return Status::Ok(); }
};

TEST(ExtenderServerTest, ServesTheVerbsHealthReadinessAndMetrics) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  std::string not_ready = "no node daemon answered yet";
  ExtenderServer server(&extender, [&] { return not_ready; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  httplib::Client client("127.0.0.1", *port);

  const std::string body =
      migsched::testing::ReadFile(migsched::testing::TestDataDir() + "/k8s/filter-args.json");
  auto f = client.Post("/filter", body, "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 200);
  EXPECT_EQ(f->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(f->body)["NodeNames"], json({"gpu-node-1", "gpu-node-2", "gpu-node-3"}));

  auto p = client.Post("/prioritize", body, "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(json::parse(p->body)[0], json::parse(R"({"Host": "gpu-node-1", "Score": 5})"));

  auto b = client.Post("/bind", "{", "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 200);
  EXPECT_EQ(json::parse(b->body)["Error"],
            "migsched: ExtenderBindingArgs is not valid JSON (1 bytes)");

  auto h = client.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = client.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["reason"], "no node daemon answered yet");
  not_ready.clear();
  EXPECT_EQ(client.Get("/readyz")->status, 200);

  auto unknown = client.Post("/preempt", body, "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(json::parse(unknown->body)["error"].get<std::string>().find("no POST /preempt"),
            std::string::npos);

  auto m = client.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("migsched_extender_requests_total{verb=\"filter\"} 1\n"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("migsched_extender_bad_requests_total 1\n"), std::string::npos);
  server.Stop();
  EXPECT_FALSE(client.Get("/healthz"));
}

// Bodies over max_body_bytes get a 413 with a JSON error, and the extender
// never sees them (its filter count stays 0); a body of exactly the bound passes.
TEST(ExtenderServerTest, BodiesOverTheBoundGet413) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServerOptions o;
  o.max_body_bytes = 1000;
  ExtenderServer server(&extender, nullptr, o);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  httplib::Client client("127.0.0.1", *port);

  auto big = client.Post("/filter", std::string(1001, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"],
            "POST /filter: request body larger than max_body_bytes (1000 bytes)");
  EXPECT_EQ(extender.counters().filter, 0);

  // 1000 bytes: a JSON object padded with spaces, read as an (empty) ExtenderArgs.
  std::string at_bound = "{}";
  at_bound.resize(1000, ' ');
  auto ok = client.Post("/filter", at_bound, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(extender.counters().filter, 1);

  // Regression (form_body_blamed_max_body_bytes): 9000 bytes as a form (curl -d's content type)
  // were refused by the HTTP library's own bound of 8192 bytes for forms. The verbs read their
  // bodies themselves now: a form's body is bounded by max_body_bytes alone, as any.
  ExtenderServerOptions wide;
  wide.max_body_bytes = 100000;
  ExtenderServer wide_server(&extender, nullptr, wide);
  auto wide_port = wide_server.Start("127.0.0.1", 0);
  ASSERT_TRUE(wide_port.ok()) << wide_port.status().ToString();
  httplib::Client wide_client("127.0.0.1", *wide_port);
  std::string form = "{}";
  form.resize(9000, ' ');
  auto as_form = wide_client.Post("/filter", form, "application/x-www-form-urlencoded");
  ASSERT_TRUE(as_form);
  EXPECT_EQ(as_form->status, 200);
  auto as_json = wide_client.Post("/filter", form, "application/json");
  ASSERT_TRUE(as_json);
  EXPECT_EQ(as_json->status, 200);
}

// Regression gzip_body_past_max_body_bytes: a gzip body (Content-Encoding: gzip) was decoded
// whole before max_body_bytes was looked at: 1 MB that inflates to 1 GiB was answered 200 after
// 12 s and 3.2 GB of memory. The bound applies to the body as decoded: 2 MB of spaces (a few KB
// of gzip, under the bound as sent) are refused 413 and never reach the extender; the probe
// listener refuses an encoded body with a JSON error (it answered 413 with an empty body).
TEST(ExtenderServerTest, GzipBodyPastMaxBodyBytesIs413) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServerOptions o;
  o.max_body_bytes = 100000;
  ExtenderServer server(&extender, nullptr, o);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto probes = server.StartProbes("127.0.0.1", 0);
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();

  std::string inflated = "{}";
  inflated.resize(2u << 20, ' ');  // 2 MiB decoded > 100000
  httplib::Client client("127.0.0.1", *port);
  client.set_compress(true);  // gzip, Content-Encoding: gzip
  auto big = client.Post("/filter", inflated, "application/json");
  ASSERT_TRUE(big) << httplib::to_string(big.error());
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"],
            "POST /filter: request body larger than max_body_bytes (100000 bytes, once decoded)");
  EXPECT_EQ(extender.counters().filter, 0);

  // Under the bound once decoded: served (the same coding is read, not refused).
  std::string small = "{}";
  small.resize(50000, ' ');
  httplib::Client again("127.0.0.1", *port);
  again.set_compress(true);
  auto ok = again.Post("/filter", small, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(extender.counters().filter, 1);

  httplib::Client probe("127.0.0.1", *probes);
  probe.set_compress(true);
  auto p = probe.Post("/healthz", inflated, "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 415);
  EXPECT_EQ(json::parse(p->body)["error"],
            "POST /healthz: an encoded body (Content-Encoding 'gzip') is not accepted here: this "
            "route takes no body");
  EXPECT_EQ(httplib::Client("127.0.0.1", *probes).Get("/healthz")->status, 200);
}

// Regression chunked_body_past_max_body_bytes: cpp-httplib applies max_body_bytes to a
// Content-Length only and read a chunked body whole (the helper's 600 MB body to the probe
// port took 1.2 GB). Chunked bodies are refused with 411, unread, on both listeners.
TEST(ExtenderServerTest, ChunkedBodiesAreRefusedUnread) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServerOptions o;
  o.max_body_bytes = 1000;
  ExtenderServer server(&extender, nullptr, o);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto probes = server.StartProbes("127.0.0.1", 0);
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();
  // A chunked POST sent whole in one write, and what comes back until the server closes. (With
  // httplib's client the server's early answer could race the client's writes.)
  auto exchange = [](int port, const std::string& path) {
    const std::string body = "{}" + std::string(98, ' ');
    const std::string request = "POST " + path +
                                " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n64\r\n" +
                                body + "\r\n0\r\n\r\n";
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    std::string out;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buf[4096];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
    }
    close(fd);
    return out;
  };
  const std::string f = exchange(*port, "/filter");
  EXPECT_TRUE(f.starts_with("HTTP/1.1 411 ")) << f;
  EXPECT_NE(f.find("a chunked body is not accepted; send it with a Content-Length (at most 1000 "
                   "bytes) (the extender's max_body_bytes)"),
            std::string::npos)
      << f;
  EXPECT_EQ(extender.counters().filter, 0);
  const std::string h = exchange(*probes, "/healthz");
  EXPECT_TRUE(h.starts_with("HTTP/1.1 411 ")) << h;
  // The listeners still serve.
  EXPECT_EQ(httplib::Client("127.0.0.1", *probes).Get("/healthz")->status, 200);
  std::string at_bound = "{}";
  at_bound.resize(1000, ' ');
  EXPECT_EQ(
      httplib::Client("127.0.0.1", *port).Post("/filter", at_bound, "application/json")->status,
      200);
}

// A TCP connection to 127.0.0.1:`port` that has sent `bytes`; -1 when it could not.
int ConnectAndSend(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (EOF or reset) within `seconds`.
bool ClosedByServerWithin(int fd, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;  // EOF, or reset by the server
  }
  return false;
}

// Regression slow_clients_starve_extender: connections that drip a request head were held up to
// 600 s; 150 on the probe listener made /healthz time out (liveness would restart the extender)
// and 64 on the main port took every worker (a filter waited 25-42 s). Both listeners are
// GuardedServers now: the slow ones hold no worker others need and are closed at the head
// deadline (header_timeout_s, here 4 s).
TEST(ExtenderServerTest, SlowClientsStarveExtender) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServerOptions o;
  o.header_timeout_s = 4;
  ExtenderServer server(
      &extender, [] { return std::string(); }, o);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto probes = server.StartProbes("127.0.0.1", 0);
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();

  std::vector<int> slow;
  for (int i = 0; i < 150; ++i) {
    slow.push_back(ConnectAndSend(*probes, "GET /healthz HTTP/1.1\r\nHost: x\r\n"));
  }
  for (int i = 0; i < 100; ++i) {
    slow.push_back(ConnectAndSend(*port, "POST /filter HTTP/1.1\r\nHost: x\r\n"));
  }
  for (int fd : slow) ASSERT_GE(fd, 0);

  // Served while the slow ones still hold their connections: each client gives up after 2 s,
  // before the 4 s head deadline would free a starved server's workers (a liveness bound that
  // tells starving from serving, not a measure of speed).
  httplib::Client probe("127.0.0.1", *probes);
  probe.set_read_timeout(std::chrono::seconds(2));
  auto h = probe.Get("/healthz");
  ASSERT_TRUE(h) << httplib::to_string(h.error());
  EXPECT_EQ(h->status, 200);
  httplib::Client client("127.0.0.1", *port);
  client.set_read_timeout(std::chrono::seconds(2));
  const std::string body =
      migsched::testing::ReadFile(migsched::testing::TestDataDir() + "/k8s/filter-args.json");
  auto f = client.Post("/filter", body, "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  EXPECT_EQ(f->status, 200);

  // Every slow connection is closed by the server: at its head deadline (4 s), or evicted
  // earlier by newer unauthenticated ones. 7 s: the deadline with room for a loaded machine.
  int closed = 0;
  for (int fd : slow) {
    closed += ClosedByServerWithin(fd, 7) ? 1 : 0;
    close(fd);
  }
  EXPECT_EQ(closed, 250);
}

// A replica that may not bind (not the leader) answers /bind with an Error
// naming why, without calling the extender; filter still answers.
TEST(ExtenderServerTest, TheBindGateRefusesBindsWithItsReason) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServer server(&extender, nullptr);
  std::string why = "not the leader (the lease migsched-system/migsched-extender is held by b)";
  server.set_bind_gate([&] { return why; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  httplib::Client client("127.0.0.1", *port);
  const std::string args =
      migsched::testing::ReadFile(migsched::testing::TestDataDir() + "/k8s/bind-args.json");
  auto b = client.Post("/bind", args, "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 200);
  EXPECT_EQ(json::parse(b->body)["Error"], "migsched: " + why);
  EXPECT_EQ(extender.counters().bind, 0);
  why.clear();  // leader now: the extender is called (and reads the body)
  ASSERT_TRUE(client.Post("/bind", "{", "application/json"));
  EXPECT_EQ(extender.counters().bind, 1);
}

class MutualTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = migsched::testing::MakeTempDir("mtls").string();
    // ca signs the server's and kube-scheduler's certificates; other is a CA
    // that signs an impostor's.
    ASSERT_TRUE(MakeSelfSignedCert(dir_, "ca")) << "the openssl command is needed (setup.sh)";
    ASSERT_TRUE(MakeSignedCert(dir_, "ca", "server", "IP:127.0.0.1"));
    ASSERT_TRUE(MakeSignedCert(dir_, "ca", "kube-scheduler"));
    ASSERT_TRUE(MakeSelfSignedCert(dir_, "other"));
    ASSERT_TRUE(MakeSignedCert(dir_, "other", "impostor"));
  }
  ExtenderServerOptions Tls() const {
    ExtenderServerOptions o;
    o.cert_file = dir_ + "/server.crt";
    o.key_file = dir_ + "/server.key";
    o.client_ca_file = dir_ + "/ca.crt";
    return o;
  }
  // An HTTPS client that checks the server against ca.crt, presenting
  // DIR/NAME.crt ("" for no client certificate).
  std::unique_ptr<httplib::SSLClient> Client(int port, const std::string& name) const {
    auto c = name.empty()
                 ? std::make_unique<httplib::SSLClient>("127.0.0.1", port)
                 : std::make_unique<httplib::SSLClient>(
                       "127.0.0.1", port, dir_ + "/" + name + ".crt", dir_ + "/" + name + ".key");
    c->set_ca_cert_path((dir_ + "/ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    return c;
  }
  std::string dir_;
};

TEST_F(MutualTlsTest, OnlyCallersWithACertificateOfTheCaAreServed) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServer server(&extender, nullptr, Tls());
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  const std::string body =
      migsched::testing::ReadFile(migsched::testing::TestDataDir() + "/k8s/filter-args.json");

  auto ok = Client(*port, "kube-scheduler")->Post("/filter", body, "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body)["NodeNames"].size(), 3u);

  // No client certificate, one of another CA, or plain HTTP: the handshake
  // fails, nothing is served.
  auto anonymous = Client(*port, "")->Post("/filter", body, "application/json");
  EXPECT_FALSE(anonymous);
  auto impostor = Client(*port, "impostor")->Post("/bind", body, "application/json");
  EXPECT_FALSE(impostor);
  httplib::Client plain("127.0.0.1", *port);
  auto p = plain.Post("/filter", body, "application/json");
  EXPECT_TRUE(!p || p->status == 400) << p->status;
  EXPECT_EQ(extender.counters().filter, 1);
  EXPECT_EQ(extender.counters().bind, 0);
}

TEST_F(MutualTlsTest, TheProbeListenerServesOnlyProbesOverPlainHttp) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServer server(
      &extender, [] { return std::string(); }, Tls());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  auto probes = server.StartProbes("127.0.0.1", 0);
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();
  httplib::Client plain("127.0.0.1", *probes);
  EXPECT_EQ(plain.Get("/healthz")->status, 200);
  EXPECT_EQ(plain.Get("/readyz")->status, 200);
  auto m = plain.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("migsched_extender_requests_total{verb=\"filter\"} 0\n"),
            std::string::npos);
  auto f = plain.Post("/filter", "{}", "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 404);
  EXPECT_EQ(extender.counters().filter, 0);
}

TEST_F(MutualTlsTest, IncompleteOrWrongTlsFilesAreRefusedByName) {
  EveryNodeFits engine;
  Extender extender(&engine, nullptr);
  ExtenderServerOptions no_ca = Tls();
  no_ca.client_ca_file.clear();
  auto st = ExtenderServer(&extender, nullptr, no_ca).Start("127.0.0.1", 0);
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("cert_file, key_file and client_ca_file are all needed"),
            std::string::npos)
      << st.status().message();

  ExtenderServerOptions mismatch = Tls();
  mismatch.key_file = dir_ + "/impostor.key";
  st = ExtenderServer(&extender, nullptr, mismatch).Start("127.0.0.1", 0);
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("key_file " + dir_ +
                                       "/impostor.key is not the PEM private key of cert_file " +
                                       dir_ + "/server.crt"),
            std::string::npos)
      << st.status().message();

  ExtenderServerOptions missing = Tls();
  missing.client_ca_file = dir_ + "/nope.crt";
  st = ExtenderServer(&extender, nullptr, missing).Start("127.0.0.1", 0);
  EXPECT_EQ(st.status().message(), "tls: cannot read " + dir_ + "/nope.crt");

  ExtenderServerOptions not_pem = Tls();
  not_pem.client_ca_file = dir_ + "/server.ext";  // "subjectAltName=..."
  st = ExtenderServer(&extender, nullptr, not_pem).Start("127.0.0.1", 0);
  EXPECT_NE(st.status().message().find("client_ca_file " + dir_ + "/server.ext is not a PEM"),
            std::string::npos)
      << st.status().message();
}

}  // namespace
}  // namespace migsched::k8s
