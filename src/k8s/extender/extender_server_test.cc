// The extender over real HTTP on loopback, as kube-scheduler calls it:
// POST <urlPrefix>/<verb> with Content-Type application/json.
#include "k8s/extender/extender_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

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

}  // namespace
}  // namespace migsched::k8s
