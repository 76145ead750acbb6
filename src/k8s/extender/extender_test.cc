// The extender's verbs with kube-scheduler's bodies, a scripted placement
// engine (what the cluster would decide is not the point here: the protocol
// is) and a loopback API server that records the PATCH and the Binding.
#include "k8s/extender/extender.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "k8s/testing/recording_api_server.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

json Fixture(const std::string& name) {
  return migsched::testing::ReadJson(migsched::testing::TestDataDir() + "/k8s/" + name);
}

// Fits on the nodes in `fits`; scores are the node's position in `fits`
// counting down from 10; Reserve records and answers one instance per profile.
class ScriptedEngine : public PlacementEngine {
 public:
  std::vector<Verdict> Filter(const PodInfo& pod, const std::vector<std::string>& nodes) override {
    ++filter_calls;
    std::vector<Verdict> out;
    for (const auto& n : nodes) {
      const bool ok = std::find(fits.begin(), fits.end(), n) != fits.end();
      out.push_back(
          {ok, ok ? "" : "no " + pod.instance_profiles().front() + " placement free on " + n});
    }
    return out;
  }
  std::vector<int64_t> Prioritize(const PodInfo&, const std::vector<std::string>& nodes) override {
    std::vector<int64_t> out;
    for (const auto& n : nodes) {
      auto it = std::find(fits.begin(), fits.end(), n);
      out.push_back(it == fits.end() ? 0 : 10 - (it - fits.begin()));
    }
    return out;
  }
  StatusOr<PodReservation> Reserve(const PodInfo& pod, const std::string& node) override {
    reserved.push_back(pod.uid + "@" + node);
    if (reserved.size() == 1 && first_reserve) first_reserve();
    if (on_reserve) on_reserve();
    if (!reserve_error.ok()) return reserve_error;
    PodReservation r{node, PodOwnerKey(pod.uid), {}};
    int start = 0;
    for (const auto& c : pod.containers) {
      for (const auto& req : c.requests) {
        for (int i = 0; i < req.count; ++i) {
          r.instances.push_back({{1, req.profile, start}, c.container, "GPU-1", 1});
          ++start;
        }
      }
    }
    return r;
  }
  Status Release(const PodInfo& pod, const std::string& node) override {
    released.push_back(pod.uid + "@" + node);
    return Status::Ok();
  }
  void ReleaseElsewhere(const PodInfo& pod, const std::string& node) override {
    kept_only.push_back(pod.uid + "@" + node);
  }
  std::vector<std::string> fits;
  int filter_calls = 0;
  // ... and kept_only: the pod's room kept on that node alone (ReleaseElsewhere).
  std::vector<std::string> reserved, released, kept_only;
  Status reserve_error;
  std::function<void()> first_reserve;  // called inside the first Reserve, if set
  std::function<void()> on_reserve;     // called inside every Reserve, if set
};

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client = api.StartWithClient();
    ASSERT_NE(client, nullptr);
    extender = std::make_unique<Extender>(&engine, client.get());
  }
  json Args(const json& pod) {
    return {{"Pod", pod},
            {"Nodes", nullptr},
            {"NodeNames", {"gpu-node-1", "gpu-node-2", "gpu-node-3"}}};
  }
  RecordingApiServer api;
  std::unique_ptr<KubeClient> client;
  ScriptedEngine engine;
  std::unique_ptr<Extender> extender;
};

TEST_F(ExtenderTest, FilterKeepsTheNodesThatFitAndGivesTheOthersTheirReason) {
  engine.fits = {"gpu-node-2"};
  const Extender::Answer a = extender->Filter(Fixture("filter-args.json").dump());
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(json::parse(a.body), json::parse(R"({
      "Nodes": null, "NodeNames": ["gpu-node-2"], "FailedNodes": {},
      "FailedAndUnresolvableNodes": {"gpu-node-1": "no 3g.20gb placement free on gpu-node-1",
                                     "gpu-node-3": "no 3g.20gb placement free on gpu-node-3"},
      "Error": ""})"));
}

TEST_F(ExtenderTest, APodWithoutMigPassesThroughUntouched) {
  const json args = Args(Fixture("pod-no-mig.json"));
  const json f = json::parse(extender->Filter(args.dump()).body);
  EXPECT_EQ(f["NodeNames"], json({"gpu-node-1", "gpu-node-2", "gpu-node-3"}));
  EXPECT_EQ(f["FailedAndUnresolvableNodes"], json::object());
  EXPECT_EQ(f["Error"], "");
  const json p = json::parse(extender->Prioritize(args.dump()).body);
  EXPECT_EQ(p,
            json::parse(R"([{"Host": "gpu-node-1", "Score": 0}, {"Host": "gpu-node-2", "Score": 0},
                               {"Host": "gpu-node-3", "Score": 0}])"));
  EXPECT_EQ(engine.filter_calls, 0);
}

TEST_F(ExtenderTest, AMalformedBodyGetsA200WithAnErrorNeverA5xx) {
  for (const std::string body : {"", "{", "[1]", R"({"NodeNames": ["a"]})",
                                 R"({"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [
                                     {"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.5gb": "1.5"}}}]}},
                                     "NodeNames": ["a"]})"}) {
    const Extender::Answer f = extender->Filter(body);
    EXPECT_EQ(f.http_status, 200) << body;
    const json j = json::parse(f.body);
    EXPECT_TRUE(j["NodeNames"].is_null());
    EXPECT_EQ(j["Error"].get<std::string>().rfind("migsched: ", 0), 0u) << j["Error"];
    const Extender::Answer p = extender->Prioritize(body);
    EXPECT_EQ(p.http_status, 200);
    EXPECT_EQ(json::parse(p.body), json::array());
    const Extender::Answer b = extender->Bind(body);
    EXPECT_EQ(b.http_status, 200);
    EXPECT_NE(json::parse(b.body)["Error"], "");
  }
  EXPECT_EQ(engine.filter_calls, 0);
  EXPECT_EQ(extender->counters().bad_requests, 15);
}

TEST_F(ExtenderTest, InitContainersWithMigAreRefusedOnEveryNodeWithTheReason) {
  json pod = Fixture("pod-3g.20gb.json");
  pod["spec"]["initContainers"] = pod["spec"]["containers"];
  pod["spec"]["initContainers"][0]["name"] = "warmup";
  const json f = json::parse(extender->Filter(Args(pod).dump()).body);
  EXPECT_EQ(f["NodeNames"], json::array());
  EXPECT_EQ(f["FailedAndUnresolvableNodes"]["gpu-node-2"],
            "migsched places MIG instances for containers only, not for init containers "
            "('warmup' of ml/train-x7k2p)");
}

// Regression (trial_annotation_values_unread): migsched.io/latency-sensitive: "True" and
// migsched.io/migratable: "yes" were read as false without a word. The on/off words of every
// migsched option are taken (and kept as "true"/"false"); another value refuses the pod at
// filter, saying what is wrong.
TEST_F(ExtenderTest, OnOffAnnotationsTakeTheOnOffWordsAndRefuseOthers) {
  json pod = Fixture("pod-3g.20gb.json");
  pod["metadata"]["annotations"]["migsched.io/latency-sensitive"] = "True";
  pod["metadata"]["annotations"]["migsched.io/migratable"] = "no";
  auto info = ParsePod(pod);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->annotations.at(kLatencySensitiveAnnotation), "true");
  EXPECT_EQ(info->annotations.at(kMigratableAnnotation), "false");
  EXPECT_TRUE(info->bad_annotations.empty());
  engine.fits = {"gpu-node-2"};
  EXPECT_EQ(json::parse(extender->Filter(Args(pod).dump()).body)["NodeNames"],
            json({"gpu-node-2"}));
  pod["metadata"]["annotations"]["migsched.io/migratable"] = "maybe";
  const json f = json::parse(extender->Filter(Args(pod).dump()).body);
  EXPECT_EQ(f["NodeNames"], json::array());
  EXPECT_EQ(f["FailedAndUnresolvableNodes"]["gpu-node-2"],
            "ml/train-x7k2p: annotation migsched.io/migratable must be true or false (or yes/no, "
            "on/off), got 'maybe'");
}

TEST_F(ExtenderTest, PrioritizeScoresFromTheEngine) {
  engine.fits = {"gpu-node-3", "gpu-node-1"};
  const json p = json::parse(extender->Prioritize(Fixture("filter-args.json").dump()).body);
  EXPECT_EQ(p,
            json::parse(R"([{"Host": "gpu-node-1", "Score": 9}, {"Host": "gpu-node-2", "Score": 0},
                               {"Host": "gpu-node-3", "Score": 10}])"));
}

TEST_F(ExtenderTest, BindReservesAnnotatesThenPostsTheBinding) {
  const json pod = Fixture("pod-3g.20gb.json");
  api.AddPod(pod);
  engine.fits = {"gpu-node-2"};
  (void)extender->Filter(Fixture("filter-args.json").dump());  // kube-scheduler filters first
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_EQ(b, json::parse(R"({"Error": ""})"));
  EXPECT_EQ(engine.reserved,
            (std::vector<std::string>{"5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11@gpu-node-2"}));
  EXPECT_TRUE(engine.released.empty());

  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 2u);  // the pod came from the filter call: no GET
  EXPECT_EQ(reqs[0].method, "PATCH");
  const json patch = json::parse(reqs[0].body);
  EXPECT_EQ(patch["metadata"]["uid"], "5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11");
  EXPECT_EQ(patch["metadata"]["labels"], json::parse(R"({"migsched.io/managed": "true"})"));
  EXPECT_EQ(
      json::parse(patch["metadata"]["annotations"]["migsched.io/placement"].get<std::string>()),
      json::parse(
          R"({"node": "gpu-node-2", "reservation": "k8s:5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11",
                            "instances": [{"container": "train", "gpu": 1, "gpu_uuid": "GPU-1",
                                           "profile": "3g.20gb", "start": 0, "size": 1}]})"));
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ml/pods/train-x7k2p/binding");
  EXPECT_EQ(api.Pod("ml", "train-x7k2p")->at("spec").at("nodeName"), "gpu-node-2");
}

TEST_F(ExtenderTest, BindWithoutAFilterCallReadsThePodFromTheApiServer) {
  api.AddPod(Fixture("pod-two-containers.json"));
  const json args = {{"PodName", "infer-q9w8e"},
                     {"PodNamespace", "serving"},
                     {"PodUID", "77aa1c20-5b6e-4f70-8a91-b2c3d4e5f601"},
                     {"Node", "gpu-node-1"}};
  EXPECT_EQ(json::parse(extender->Bind(args.dump()).body)["Error"], "");
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "GET");
  // All three instances of the two containers in one reservation.
  const json placement = json::parse(api.Pod("serving", "infer-q9w8e")
                                         ->at("metadata")
                                         .at("annotations")
                                         .at("migsched.io/placement")
                                         .get<std::string>());
  ASSERT_EQ(placement["instances"].size(), 3u);
  EXPECT_EQ(placement["instances"][2]["container"], "embed");
  EXPECT_EQ(placement["instances"][2]["profile"], "2g.10gb");
}

TEST_F(ExtenderTest, AFailedBindingReleasesTheReservation) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  api.FailNext("/binding", 500, "etcdserver: request timed out");
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_EQ(b["Error"],
            "migsched: cannot bind ml/train-x7k2p to gpu-node-2: POST "
            "/api/v1/namespaces/ml/pods/train-x7k2p/binding: HTTP 500: etcdserver: request "
            "timed out");
  EXPECT_EQ(engine.released, engine.reserved);
  EXPECT_EQ(extender->counters().bind_errors, 1);
}

// Regression (annotation_kept_after_a_failed_binding): a Binding that failed released the
// reservation but left the pod annotated with it (and labelled managed), naming instances no
// longer reserved. The pod read back is unbound and carries this bind's annotation: both go.
TEST_F(ExtenderTest, AFailedBindingTakesItsAnnotationAndLabelOffThePod) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  api.FailNext("/binding", 500, "etcdserver: request timed out");
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_NE(b["Error"].get<std::string>().find("HTTP 500"), std::string::npos) << b;
  EXPECT_EQ(engine.released, engine.reserved);
  const json meta = api.Pod("ml", "train-x7k2p")->at("metadata");
  EXPECT_FALSE(meta.value("annotations", json::object()).contains("migsched.io/placement")) << meta;
  EXPECT_FALSE(meta.value("labels", json::object()).contains("migsched.io/managed")) << meta;
  // GET (no filter call), PATCH (annotate), POST (fails), GET (read back), PATCH (take it off).
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[4].method, "PATCH");
  EXPECT_EQ(json::parse(reqs[4].body)["metadata"]["annotations"]["migsched.io/placement"], nullptr);
}

// Regression (concurrent_binds_left_a_wrong_annotation): two binds of one pod at once, to two
// nodes, each reserved and annotated; one Binding won and the pod could keep the other's
// annotation, naming instances released on another node. Now the second is refused while the
// first is in progress (held inside its Reserve here), and reserves nothing.
TEST_F(ExtenderTest, ASecondBindOfAPodWhileTheFirstIsInProgressIsRefused) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  engine.fits = {"gpu-node-2", "gpu-node-3"};
  (void)extender->Filter(Fixture("filter-args.json").dump());
  std::promise<void> reserving, go;
  std::shared_future<void> may_go = go.get_future().share();
  engine.first_reserve = [&] {
    reserving.set_value();
    may_go.wait();
  };
  json first;
  std::thread binder(
      [&] { first = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body); });
  reserving.get_future().wait();
  json args = Fixture("bind-args.json");
  args["Node"] = "gpu-node-3";
  const json second = json::parse(extender->Bind(args.dump()).body);
  go.set_value();
  binder.join();
  EXPECT_EQ(second["Error"],
            "migsched: a bind of pod ml/train-x7k2p is already in progress; try again when it has "
            "ended");
  EXPECT_EQ(first["Error"], "");
  EXPECT_EQ(engine.reserved,
            (std::vector<std::string>{"5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11@gpu-node-2"}));
  const json pod = *api.Pod("ml", "train-x7k2p");
  EXPECT_EQ(pod["spec"]["nodeName"], "gpu-node-2");
  EXPECT_EQ(json::parse(pod["metadata"]["annotations"]["migsched.io/placement"].get<std::string>())
                .at("node"),
            "gpu-node-2");
  // Once it has ended, the pod's next bind is answered again (bound: nothing to do).
  EXPECT_EQ(json::parse(extender->Bind(Fixture("bind-args.json").dump()).body)["Error"], "");
}

// Regression (binding_stored_despite_an_error_lost_its_reservation): the API server stored the
// Binding and answered 504 (its answer lost to a time-out); the extender released the
// reservation of a pod that was bound, and the kubelet's Allocate then found none for it. Now
// the pod read back decides: bound to the node, so the bind succeeded and nothing is released.
TEST_F(ExtenderTest, ABindingStoredDespiteAnErrorKeepsTheReservation) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  api.FailNextAfterApplying("/binding", 504, "context deadline exceeded");
  EXPECT_EQ(json::parse(extender->Bind(Fixture("bind-args.json").dump()).body)["Error"], "");
  EXPECT_EQ(api.Pod("ml", "train-x7k2p")->at("spec").value("nodeName", ""), "gpu-node-2");
  EXPECT_EQ(engine.reserved.size(), 1u);
  EXPECT_TRUE(engine.released.empty());
  EXPECT_EQ(extender->counters().bind_errors, 0);
}

// When whether the Binding was stored cannot be told (the pod cannot be read back either), the
// reservation is kept: the pod's next bind takes it, else it expires with its TTL.
TEST_F(ExtenderTest, ABindingOfUnknownOutcomeKeepsTheReservation) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  engine.fits = {"gpu-node-2"};
  (void)extender->Filter(Fixture("filter-args.json").dump());  // the bind reads its cache
  api.FailNext("/binding", 504, "context deadline exceeded");
  api.FailNext("/pods/train-x7k2p", 503, "the server is currently unable to handle the request", 1,
               "GET");
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_NE(b["Error"].get<std::string>().find("HTTP 504"), std::string::npos) << b;
  EXPECT_TRUE(engine.released.empty());
}

// Regression (trial_late_binding_lost_its_reservation): the API server stored a Binding after the
// extender's client had given up on its answer; the pod read back straight after was not bound
// yet, so the reservation was released and the annotation taken off, and the pod ended bound
// with no reservation (its Allocate would fail). A request sent whose answer never came is of
// unknown outcome: the reservation and the annotation are kept (the pod's next bind takes them,
// else they expire with the TTL).
TEST_F(ExtenderTest, ABindingThatLandsAfterTheClientGaveUpKeepsItsReservation) {
  std::unique_ptr<KubeClient> impatient = api.NewClient(std::chrono::milliseconds(300));
  ASSERT_NE(impatient, nullptr);
  Extender e(&engine, impatient.get());
  api.AddPod(Fixture("pod-3g.20gb.json"));
  api.DelayNext("/binding", std::chrono::milliseconds(1500));
  const json b = json::parse(e.Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_NE(b["Error"].get<std::string>().find("whether the API server carried it out is unknown"),
            std::string::npos)
      << b;
  EXPECT_TRUE(engine.released.empty());
  // The Binding lands later: the pod is bound with its annotation and its reservation.
  for (int i = 0; i < 100 && api.Pod("ml", "train-x7k2p")->at("spec").value("nodeName", "") == "";
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const json pod = *api.Pod("ml", "train-x7k2p");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "gpu-node-2");
  EXPECT_TRUE(pod["metadata"]["annotations"].contains(std::string(kPlacementAnnotation))) << pod;
  EXPECT_EQ(engine.reserved.size(), 1u);
  EXPECT_TRUE(engine.released.empty());
}

// Regression (trial_retried_bind_released_the_room_of_the_binding_that_landed): a bind to
// gpu-node-2 whose answer never came kept its room there (outcome unknown); the retry to
// gpu-node-1 read the pod unbound, reserved on gpu-node-1 (releasing gpu-node-2's room), and
// then the late Binding to gpu-node-2 was stored, so the retry's Binding got 409 "already
// assigned": its own room was released and the annotation taken off, and the pod was bound to
// gpu-node-2 with no room anywhere. Now the room elsewhere is released only once a Binding is
// known stored (ReleaseElsewhere, after the Binding), and a pod found bound elsewhere gets that
// node's room back in its annotation.
TEST_F(ExtenderTest, ARetriedBindElsewhereKeepsTheRoomOfTheBindingThatLanded) {
  std::unique_ptr<KubeClient> impatient = api.NewClient(std::chrono::milliseconds(300));
  ASSERT_NE(impatient, nullptr);
  Extender e(&engine, impatient.get());
  api.AddPod(Fixture("pod-3g.20gb.json"));
  api.DelayNext("/binding", std::chrono::milliseconds(1500));
  json args = Fixture("bind-args.json");
  const json first = json::parse(e.Bind(args.dump()).body);
  ASSERT_NE(first["Error"].get<std::string>().find("is unknown"), std::string::npos) << first;
  // The retry's Reserve returns once the late Binding to gpu-node-2 is stored.
  auto bound_to = [&] { return api.Pod("ml", "train-x7k2p")->at("spec").value("nodeName", ""); };
  engine.on_reserve = [&] {
    for (int i = 0; i < 100 && bound_to().empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  args["Node"] = "gpu-node-1";
  const json second = json::parse(e.Bind(args.dump()).body);
  EXPECT_NE(second["Error"].get<std::string>().find("already assigned to node \"gpu-node-2\""),
            std::string::npos)
      << second;
  const std::string uid = "5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11";
  EXPECT_EQ(bound_to(), "gpu-node-2");
  // Released: the retry's room on gpu-node-1 only. Kept: gpu-node-2's, read back (a third
  // Reserve) and named by the pod's annotation.
  EXPECT_EQ(engine.released, (std::vector<std::string>{uid + "@gpu-node-1"}));
  EXPECT_EQ(engine.reserved, (std::vector<std::string>{uid + "@gpu-node-2", uid + "@gpu-node-1",
                                                       uid + "@gpu-node-2"}));
  EXPECT_EQ(engine.kept_only, (std::vector<std::string>{uid + "@gpu-node-2"}));
  const json pod = *api.Pod("ml", "train-x7k2p");
  const json annotation = json::parse(
      pod["metadata"]["annotations"][std::string(kPlacementAnnotation)].get<std::string>());
  EXPECT_EQ(annotation["node"], "gpu-node-2");
}

// Regression (bind_without_a_pod_uid): a pod without metadata.uid (no API server serves one; a
// stand-in did) was reserved under the owner "k8s:", a prefix of every pod's key. Refused.
TEST_F(ExtenderTest, APodWithoutAUidIsNotReserved) {
  json pod = Fixture("pod-3g.20gb.json");
  pod["metadata"].erase("uid");
  api.AddPod(pod);
  json args = Fixture("bind-args.json");
  args.erase("PodUID");
  const json b = json::parse(extender->Bind(args.dump()).body);
  EXPECT_EQ(b["Error"], "migsched: pod ml/train-x7k2p has no metadata.uid: nothing reserved");
  EXPECT_TRUE(engine.reserved.empty());
}

// What spdlog's default logger writes while it lives (the one it replaced comes back at its end).
class BindLogCapture {
 public:
  BindLogCapture() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)));
  }
  ~BindLogCapture() { spdlog::set_default_logger(previous_); }
  BindLogCapture(const BindLogCapture&) = delete;
  BindLogCapture& operator=(const BindLogCapture&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

// Regression pod_name_log_injection: a pod name with a newline and an escape sequence was
// written raw into the extender's log, forging a line of its own. Client text in log lines is
// escaped (core/text.h OneLine: a newline as \n, ESC as \x1b): the bind's warning is one line.
TEST_F(ExtenderTest, PodNameLogInjection) {
  json args = Fixture("bind-args.json");
  args["PodName"] = "evil\n[info] forged\x1b[31m";  // no such pod: the bind fails, naming it
  BindLogCapture log;
  const json b = json::parse(extender->Bind(args.dump()).body);
  EXPECT_NE(b["Error"].get<std::string>(), "");
  const std::string text = log.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;  // one line, its own end
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("bind: cannot read pod ml/evil\\n[info] forged\\x1b[31m"), std::string::npos)
      << text;
}

TEST_F(ExtenderTest, ABindRetriedAfterItsBindingWentThroughSucceeds) {
  json pod = Fixture("pod-3g.20gb.json");
  pod["spec"]["nodeName"] = "gpu-node-2";  // the first attempt's Binding was stored
  api.AddPod(pod);
  EXPECT_EQ(json::parse(extender->Bind(Fixture("bind-args.json").dump()).body)["Error"], "");
  EXPECT_TRUE(engine.released.empty());
}

// Regression repeated_bind_of_a_bound_pod: a second bind of a pod that was bound and running
// (kube-scheduler retries a bind it gave up on) reserved a second instance for it and
// overwrote its placement annotation; the first instance ran on, the second was held for the
// reservation's TTL. Now the second bind does nothing, and a bind to another node is refused.
TEST_F(ExtenderTest, ARepeatedBindOfABoundPodReservesNothing) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  engine.fits = {"gpu-node-2"};
  (void)extender->Filter(Fixture("filter-args.json").dump());
  ASSERT_EQ(json::parse(extender->Bind(Fixture("bind-args.json").dump()).body)["Error"], "");
  const json annotation = api.Pod("ml", "train-x7k2p")->at("metadata").at("annotations");
  const size_t requests = api.requests().size();
  EXPECT_EQ(json::parse(extender->Bind(Fixture("bind-args.json").dump()).body)["Error"], "");
  EXPECT_EQ(engine.reserved.size(), 1u);
  EXPECT_EQ(api.requests().size(), requests);  // nothing written
  EXPECT_EQ(api.Pod("ml", "train-x7k2p")->at("metadata").at("annotations"), annotation);
  json other = Fixture("bind-args.json");
  other["Node"] = "gpu-node-1";
  EXPECT_EQ(json::parse(extender->Bind(other.dump()).body)["Error"],
            "migsched: pod ml/train-x7k2p is already bound to gpu-node-2");
  EXPECT_EQ(engine.reserved.size(), 1u);
}

TEST_F(ExtenderTest, AReservationThatFailsIsTheBindError) {
  api.AddPod(Fixture("pod-3g.20gb.json"));
  engine.reserve_error =
      Status(StatusCode::kResourceExhausted, "3g.20gb@4 on GPU 1 is taken by k8s:other");
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_EQ(b["Error"],
            "migsched: cannot reserve the MIG instances of ml/train-x7k2p on gpu-node-2: "
            "3g.20gb@4 on GPU 1 is taken by k8s:other");
  // Nothing was written to the pod, and it is not bound.
  for (const auto& r : api.requests()) EXPECT_EQ(r.method, "GET");
  EXPECT_FALSE(api.Pod("ml", "train-x7k2p")->at("spec").contains("nodeName"));
}

TEST_F(ExtenderTest, ABindOfARecreatedPodIsRefused) {
  json pod = Fixture("pod-3g.20gb.json");
  pod["metadata"]["uid"] = "new-uid";
  api.AddPod(pod);
  const json b = json::parse(extender->Bind(Fixture("bind-args.json").dump()).body);
  EXPECT_EQ(b["Error"],
            "migsched: cannot read pod ml/train-x7k2p: pod ml/train-x7k2p now has uid new-uid, "
            "not 5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11 (recreated)");
  EXPECT_TRUE(engine.reserved.empty());
}

TEST_F(ExtenderTest, APodWithoutMigIsBoundWithoutAReservation) {
  api.AddPod(Fixture("pod-no-mig.json"));
  const json args = {{"PodName", "etl-m3n4b"},
                     {"PodNamespace", "ml"},
                     {"PodUID", "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b"},
                     {"Node", "gpu-node-3"}};
  EXPECT_EQ(json::parse(extender->Bind(args.dump()).body)["Error"], "");
  EXPECT_TRUE(engine.reserved.empty());
  EXPECT_EQ(api.Pod("ml", "etl-m3n4b")->at("spec").at("nodeName"), "gpu-node-3");
}

TEST(PodReservationTest, TheAnnotationRoundTrips) {
  PodReservation r{
      "n1", "k8s:u", {{{0, "4g.20gb", 0}, "c", "GPU-a", 4}, {{1, "1g.5gb", 6}, "c", "GPU-b", 1}}};
  auto back = PodReservation::FromJson(r.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->instances, r.instances);
  EXPECT_EQ(back->node, "n1");
  EXPECT_FALSE(PodReservation::FromJson(json{{"node", "n1"}}).ok());
}

}  // namespace
}  // namespace migsched::k8s
