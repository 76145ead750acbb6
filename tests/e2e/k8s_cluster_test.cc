// The Kubernetes path end to end on one machine: three node daemons
// (`migsched serve`, fake backend, 2x A100 40GB each), three node agents
// (`migsched k8s node-agent`) registered with three test kubelets, the
// extender (`migsched k8s extender`) with a loopback API server. The test
// plays kube-scheduler (filter, prioritize, pick the best score, bind) and the
// kubelet (Allocate on the chosen node's device plugin) for 30 pods in order,
// and checks each pod's MIG UUID against the daemon's instances, and that the
// placements are those `migsched simulate` chooses for the same arrival
// order on the same GPUs (6x A100 40GB, node by node) with the same policy.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "e2e/simulate.h"
#include "k8s/api/credentials.h"
#include "k8s/api/kube_client.h"
#include "k8s/testing/recording_api_server.h"
#include "k8s/testing/test_kubelet.h"
#include "migsched_child.h"
#include "nodeapi/node_client.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

using Child = testing::MigschedChild;

// The 30 pods, in arrival order (a shuffled mix; the fourth-last 3g.20gb finds
// no free placement on any node once the earlier ones are placed).
const std::vector<std::string> kSequence = {
    "2g.10gb", "1g.5gb",  "1g.5gb",  "1g.5gb",  "1g.10gb", "1g.5gb", "1g.5gb", "4g.20gb",
    "1g.5gb",  "1g.5gb",  "1g.5gb",  "3g.20gb", "1g.5gb",  "1g.5gb", "1g.5gb", "1g.5gb",
    "1g.10gb", "1g.5gb",  "1g.5gb",  "1g.10gb", "1g.5gb",  "1g.5gb", "1g.5gb", "1g.5gb",
    "1g.5gb",  "2g.10gb", "2g.10gb", "3g.20gb", "1g.5gb",  "1g.5gb"};
const std::vector<std::string> kNodes = {"gpu-node-1", "gpu-node-2", "gpu-node-3"};
// The policy and its options as the daemons' and the extender's `scheduler:`
// mapping, and as simulate's flags.
struct PolicyCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> flags;
};
// gtest prints a case by its name (not its bytes) in ctest's list.
void PrintTo(const PolicyCase& c, std::ostream* os) { *os << c.name; }
// frag-aware decides from the cluster's state alone. full's demand-weighted
// metric (§2) learns the arrival mix: simulate seeds it with the first
// demand-window jobs of the workload, the extender sees pods one by one, so
// they match with a window of one job.
const PolicyCase kFragAware{"frag_aware", "policy: frag-aware", {"--policy", "frag-aware"}};
const PolicyCase kFullWindowOne{"full_window_1",
                                "policy: full, demand-window: 1",
                                {"--policy", "full", "--demand-window", "1"}};
constexpr char kToken[] = "e2e-token-0123456789abcdef0123456789";

// A Job's pod as the API server stores it (the shape of tests/data/k8s/pod-3g.20gb.json).
json PodOf(int i, const std::string& profile) {
  json pod = testing::ReadJson(testing::TestDataDir() + "/k8s/pod-3g.20gb.json");
  char name[32];
  std::snprintf(name, sizeof name, "train-%02d", i);
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "00000000-0000-4000-8000-0000000000" + std::string(name).substr(6);
  auto& res = pod["spec"]["containers"][0]["resources"];
  for (const char* which : {"limits", "requests"}) {
    res[which].erase("nvidia.com/mig-3g.20gb");
    res[which]["nvidia.com/mig-" + profile] = "1";
  }
  return pod;
}

// Where simulate put each job: "gpu:profile@start", or "" when it waited.
std::vector<std::string> SimulatedPlacements(const fs::path& dir, const PolicyCase& policy) {
  const fs::path trace = dir / "trace.csv";
  {
    std::ofstream f(trace);
    f << "id,arrival_s,profile,duration_s\n";
    for (size_t i = 0; i < kSequence.size(); ++i) {
      f << "pod-" << i << "," << i << "," << kSequence[i] << ",1000000\n";
    }
  }
  const fs::path jobs = dir / "jobs.csv";
  std::vector<std::string> more = {"--jobs-csv", jobs.string()};
  more.insert(more.end(), policy.flags.begin(), policy.flags.end());
  testing::Simulate("6xA100-40GB", trace.string(), more);  // fails the test unless it exits 0
  std::vector<std::string> out(kSequence.size());
  std::ifstream in(jobs);
  std::string line;
  std::getline(in, line);  // header: id,name,request,outcome,arrival_s,placed_s,...,instances,...
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t pos = 0;
    for (size_t c; (c = line.find(',', pos)) != std::string::npos; pos = c + 1) {
      f.push_back(line.substr(pos, c - pos));
    }
    f.push_back(line.substr(pos));
    const int id = std::stoi(f[0]);
    if (std::stod(f[5]) == std::stod(f[4])) out[id] = f[10];  // placed at its arrival
  }
  return out;
}

class K8sClusterTest : public ::testing::Test {
 protected:
  virtual const PolicyCase& Policy() const { return kFragAware; }
  virtual std::string ExtenderExtra() const { return "migration: false\n"; }
  // The extender's node daemons: `listed` is the `nodes:` list of all three.
  virtual std::string NodesYaml(const std::string& listed) { return "nodes:\n" + listed; }
  void SetUp() override {
    dir = testing::MakeTempDir("k8s-e2e");
    // The daemons' jobs (none here) would run as nobody under root: let them through.
    fs::permissions(dir, fs::perms(0711));
    auto url = api.Start();
    ASSERT_TRUE(url.ok());
    {
      std::ofstream kc(dir / "kubeconfig");
      kc << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
         << "clusters: [{name: t, cluster: {server: '" << *url << "'}}]\n"
         << "contexts: [{name: t, context: {cluster: t, user: u}}]\n"
         << "users: [{name: u, user: {token: api-token}}]\n";
    }
    std::string nodes_yaml;
    for (size_t n = 0; n < kNodes.size(); ++n) {
      const fs::path cfg = dir / (kNodes[n] + "-daemon.yaml");
      std::ofstream(cfg) << "listen: 127.0.0.1:0\nstate_dir: " << (dir / kNodes[n]).string()
                         << "\ntoken: " << kToken << "\nbackend: fake\ngpus: 2xA100-40GB\n"
                         << "node_name: " << kNodes[n] << "\nscheduler: {" << Policy().yaml
                         << "}\n";
      daemons.push_back(Child::Start({"serve", "--config", cfg.string()},
                                     dir / (kNodes[n] + "-daemon.log"),
                                     "listening on http://127.0.0.1:"));
      ASSERT_NE(daemons.back(), nullptr);
      urls.push_back("http://127.0.0.1:" + daemons.back()->rest());
      nodes_yaml += "- {name: " + kNodes[n] + ", url: '" + urls.back() + "'}\n";

      const fs::path kdir = dir / ("kubelet-" + std::to_string(n + 1));
      fs::create_directories(kdir);
      auto k = k8s::TestKubelet::Start(kdir.string());
      ASSERT_TRUE(k.ok());
      kubelets.push_back(std::move(*k));
      const fs::path acfg = dir / (kNodes[n] + "-agent.yaml");
      std::ofstream(acfg) << "node_name: " << kNodes[n] << "\ndaemon_url: " << urls.back()
                          << "\ntoken: " << kToken << "\ndevice_plugin_dir: " << kdir.string()
                          << "\nhealth_interval_s: 1\n";
      agents.push_back(Child::Start({"k8s", "node-agent", "--config", acfg.string()},
                                    dir / (kNodes[n] + "-agent.log"), "node agent of "));
      ASSERT_NE(agents.back(), nullptr);
    }
    const fs::path ecfg = dir / "extender.yaml";
    std::ofstream(ecfg) << "listen: 127.0.0.1:0\nkubeconfig: " << (dir / "kubeconfig").string()
                        << "\n"
                        << NodesYaml(nodes_yaml) << "token: " << kToken << "\nscheduler: {"
                        << Policy().yaml << "}\nreclaim_interval_s: 1\n"
                        << ExtenderExtra();
    extender = Child::Start({"k8s", "extender", "--config", ecfg.string()}, dir / "extender.log",
                            "extender listening on http://127.0.0.1:");
    ASSERT_NE(extender, nullptr);
    http = std::make_unique<httplib::Client>("127.0.0.1", std::stoi(extender->rest()));
    http->set_read_timeout(60, 0);
  }

  json Post(const std::string& verb, const json& body) {
    auto r = http->Post("/" + verb, body.dump(), "application/json");
    EXPECT_TRUE(r) << verb;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << verb << ": " << r->body;
    return json::parse(r->body);
  }

  // kube-scheduler's prioritize of `pod` over `names`: the node with the best
  // score (the first of equals) and its score.
  std::pair<std::string, int64_t> Best(const json& pod, const json& names) {
    const json p = Post("prioritize", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}});
    std::pair<std::string, int64_t> best{"", -1};
    for (const auto& hp : p) {
      if (hp["Score"].get<int64_t>() > best.second) best = {hp["Host"], hp["Score"]};
    }
    return best;
  }
  // kube-scheduler's filter and prioritize of `pod` over every node: the node
  // it binds to, "" when no node passed filter.
  std::string Schedule(const json& pod) {
    const json f = Post("filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", kNodes}});
    EXPECT_EQ(f["Error"], "");
    if (f["NodeNames"].empty()) return "";
    return Best(pod, f["NodeNames"]).first;
  }
  json Bind(const json& pod, const std::string& node) {
    return Post("bind", {{"PodName", pod["metadata"]["name"]},
                         {"PodNamespace", pod["metadata"]["namespace"]},
                         {"PodUID", pod["metadata"]["uid"]},
                         {"Node", node}});
  }
  // `got` (a one-instance pod's Allocate) is the instance reserved for `pod`,
  // allocated to it.
  void ExpectAllocatedWhereReserved(const std::string& node, const json& pod,
                                    const k8s::ContainerDevices& got) {
    const json in = PlacementOf(pod)["instances"][0];
    EXPECT_EQ(InstanceOf(node, got.envs.at("NVIDIA_VISIBLE_DEVICES")),
              fmt::format("{}:{}@{} allocation k8s:{}", in["gpu"].get<int>(),
                          in["profile"].get<std::string>(), in["start"].get<int>(),
                          pod["metadata"]["uid"].get<std::string>()));
  }
  // Bind over a client of its own (for other threads; no test assertions).
  json BindFromThread(const json& pod, const std::string& node) {
    httplib::Client c("127.0.0.1", std::stoi(extender->rest()));
    c.set_read_timeout(60, 0);
    const json args = {{"PodName", pod["metadata"]["name"]},
                       {"PodNamespace", pod["metadata"]["namespace"]},
                       {"PodUID", pod["metadata"]["uid"]},
                       {"Node", node}};
    auto r = c.Post("/bind", args.dump(), "application/json");
    return r ? json::parse(r->body) : json{{"Error", "no answer"}};
  }
  // The pod as stored (bound, labelled, annotated) with status.phase Succeeded.
  void EndPod(const json& pod) {
    auto stored = api.Pod(pod["metadata"]["namespace"], pod["metadata"]["name"]);
    ASSERT_TRUE(stored.has_value());
    ASSERT_EQ((*stored)["metadata"]["labels"]["migsched.io/managed"], "true");
    (*stored)["status"]["phase"] = "Succeeded";
    api.AddPod(*stored);
  }
  // The placement annotation the extender stored on the pod.
  json PlacementOf(const json& pod) {
    auto stored = api.Pod(pod["metadata"]["namespace"], pod["metadata"]["name"]);
    if (!stored) return json();
    return json::parse(
        (*stored)["metadata"]["annotations"]["migsched.io/placement"].get<std::string>());
  }
  int NodeIndex(const std::string& node) {
    return static_cast<int>(std::find(kNodes.begin(), kNodes.end(), node) - kNodes.begin());
  }
  // The kubelet's Allocate on `node`'s plugin of `profile`.
  StatusOr<k8s::ContainerDevices> Allocate(const std::string& node, const std::string& profile,
                                           const std::vector<std::string>& devices) {
    auto plugin = kubelets[NodeIndex(node)]->Dial("nvidia.com/mig-" + profile);
    if (!plugin.ok()) return plugin.status();
    return (*plugin)->Allocate(devices);
  }
  // The instance with MIG UUID `uuid` on `node` as its daemon shows it: "gpu:profile@start
  // holder owner", or "" when there is none.
  std::string InstanceOf(const std::string& node, const std::string& uuid) {
    NodeClient daemon(NodeClientOptions{urls[NodeIndex(node)], kToken});
    auto view = daemon.Node();
    EXPECT_TRUE(view.ok()) << view.status().ToString();
    if (!view.ok()) return "";
    for (const GpuView& g : view->gpus) {
      for (const auto& in : g.instances) {
        if (in.mig_uuid == uuid) {
          return fmt::format("{}:{}@{} {} {}", g.index, in.profile, in.start,
                             HolderKindName(in.holder), in.owner);
        }
      }
    }
    return "";
  }

  fs::path dir;
  k8s::RecordingApiServer api{"api-token"};
  std::vector<std::unique_ptr<Child>> daemons, agents;
  std::vector<std::string> urls;
  std::vector<std::unique_ptr<k8s::TestKubelet>> kubelets;
  std::unique_ptr<Child> extender;
  std::unique_ptr<httplib::Client> http;
};

class K8sClusterPolicyTest : public K8sClusterTest,
                             public ::testing::WithParamInterface<PolicyCase> {
 protected:
  const PolicyCase& Policy() const override { return GetParam(); }
};

TEST_P(K8sClusterPolicyTest, ThirtyPodsGetTheirInstancesWhereSimulateWouldPutThem) {
  // Each node agent advertised what 2x A100 40GB hold at once.
  for (auto& k : kubelets) {
    for (const auto& [profile, count] : std::vector<std::pair<std::string, int>>{{"1g.5gb", 14},
                                                                                 {"1g.10gb", 8},
                                                                                 {"2g.10gb", 6},
                                                                                 {"3g.20gb", 4},
                                                                                 {"4g.20gb", 2},
                                                                                 {"7g.40gb", 2}}) {
      ASSERT_TRUE(k->WaitForRegistration("nvidia.com/mig-" + profile, 10s).ok()) << profile;
      auto plugin = k->Dial("nvidia.com/mig-" + profile);
      ASSERT_TRUE(plugin.ok());
      auto list = (*plugin)->NextDeviceList(5s);
      ASSERT_TRUE(list.ok());
      EXPECT_EQ(static_cast<int>(list->size()), count) << profile;
    }
  }

  const std::vector<std::string> expected = SimulatedPlacements(dir, Policy());
  std::map<std::string, int> next_device;  // "node/profile" -> next device index
  std::set<std::string> uuids;
  for (size_t i = 0; i < kSequence.size(); ++i) {
    const std::string& profile = kSequence[i];
    const json pod = PodOf(static_cast<int>(i), profile);
    api.AddPod(pod);
    const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", kNodes}};
    const json f = Post("filter", args);
    ASSERT_EQ(f["Error"], "") << i;
    if (f["NodeNames"].empty()) {
      // Pending: simulate could not place it at its arrival either.
      EXPECT_EQ(expected[i], "") << "pod " << i << " " << profile << ": " << f.dump();
      for (const auto& n : kNodes) {
        EXPECT_NE(f["FailedAndUnresolvableNodes"][n].get<std::string>().find("no " + profile +
                                                                             " placement free"),
                  std::string::npos)
            << f.dump();
      }
      continue;
    }
    const auto [best, best_score] = Best(pod, f["NodeNames"]);
    ASSERT_EQ(best_score, 10) << i;
    const json b = Post("bind", {{"PodName", pod["metadata"]["name"]},
                                 {"PodNamespace", "ml"},
                                 {"PodUID", pod["metadata"]["uid"]},
                                 {"Node", best}});
    ASSERT_EQ(b["Error"], "") << i;
    const json stored = *api.Pod("ml", pod["metadata"]["name"]);
    ASSERT_EQ(stored["spec"]["nodeName"], best);
    const json placement =
        json::parse(stored["metadata"]["annotations"]["migsched.io/placement"].get<std::string>());
    ASSERT_EQ(placement["instances"].size(), 1u);
    const json inst = placement["instances"][0];

    // The kubelet admits the pod: Allocate on that node's plugin with a free device.
    const int node =
        static_cast<int>(std::find(kNodes.begin(), kNodes.end(), best) - kNodes.begin());
    auto plugin = kubelets[node]->Dial("nvidia.com/mig-" + profile);
    ASSERT_TRUE(plugin.ok());
    const std::string device = profile + "-" + std::to_string(next_device[best + "/" + profile]++);
    auto got = (*plugin)->Allocate({device});
    ASSERT_TRUE(got.ok()) << i << ": " << got.status().ToString();
    const std::string uuid = got->envs.at("NVIDIA_VISIBLE_DEVICES");
    EXPECT_EQ(got->envs.at("CUDA_VISIBLE_DEVICES"), uuid);
    // (The fake backends of the three daemons number their MIG UUIDs alike: unique per node.)
    EXPECT_TRUE(uuids.insert(best + "/" + uuid).second) << "instance given twice: " << uuid;

    // The daemon has that instance, of that profile, at the reserved placement.
    NodeClient daemon(NodeClientOptions{urls[node], kToken});
    auto view = daemon.Node();
    ASSERT_TRUE(view.ok());
    bool found = false;
    for (const GpuView& g : view->gpus) {
      for (const auto& in : g.instances) {
        if (in.mig_uuid != uuid) continue;
        found = true;
        EXPECT_EQ(g.index.value(), inst["gpu"].get<int>());
        EXPECT_EQ(in.profile, profile);
        EXPECT_EQ(in.start, inst["start"].get<int>());
      }
    }
    EXPECT_TRUE(found) << uuid << " is not an instance of " << best;

    // Where simulate put it: GPU (node * 2 + gpu), profile, start.
    const std::string here = std::to_string(node * 2 + inst["gpu"].get<int>()) + ":" + profile +
                             "@" + std::to_string(inst["start"].get<int>());
    EXPECT_EQ(here, expected[i]) << "pod " << i;
  }
}

// A pod of two containers (2x 1g.5gb, 1x 2g.10gb): one node holds all three,
// and the kubelet's two Allocates (one per container and resource) each get
// the instances reserved for that container.
INSTANTIATE_TEST_SUITE_P(Policies, K8sClusterPolicyTest,
                         ::testing::Values(kFragAware, kFullWindowOne),
                         [](const auto& info) { return info.param.name; });

TEST_F(K8sClusterTest, APodOfTwoContainersGetsEachContainersInstances) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-2g.10gb", 10s).ok());
  json pod = testing::ReadJson(testing::TestDataDir() + "/k8s/pod-two-containers.json");
  api.AddPod(pod);
  const std::string node = Schedule(pod);
  ASSERT_NE(node, "");
  ASSERT_EQ(Bind(pod, node)["Error"], "");
  const json placement = PlacementOf(pod);
  ASSERT_EQ(placement["node"], node);
  ASSERT_EQ(placement["instances"].size(), 3u) << placement.dump();
  std::map<std::string, std::set<std::string>> reserved;  // container -> "gpu:profile@start"
  for (const json& in : placement["instances"]) {
    reserved[in["container"]].insert(fmt::format("{}:{}@{}", in["gpu"].get<int>(),
                                                 in["profile"].get<std::string>(),
                                                 in["start"].get<int>()));
  }
  const std::string owner = "k8s:" + pod["metadata"]["uid"].get<std::string>();
  auto infer = Allocate(node, "1g.5gb", {"1g.5gb-0", "1g.5gb-1"});
  ASSERT_TRUE(infer.ok()) << infer.status().ToString();
  auto embed = Allocate(node, "2g.10gb", {"2g.10gb-0"});
  ASSERT_TRUE(embed.ok()) << embed.status().ToString();
  std::set<std::string> got_infer;
  const std::string list = infer->envs.at("NVIDIA_VISIBLE_DEVICES");
  for (size_t pos = 0, c; pos <= list.size(); pos = c + 1) {
    c = list.find(',', pos);
    if (c == std::string::npos) c = list.size();
    const std::string in = InstanceOf(node, list.substr(pos, c - pos));
    EXPECT_EQ(in.substr(in.find(' ')), " allocation " + owner) << in;
    got_infer.insert(in.substr(0, in.find(' ')));
  }
  EXPECT_EQ(got_infer, reserved["infer"]);
  const std::string e = InstanceOf(node, embed->envs.at("CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(std::set<std::string>{e.substr(0, e.find(' '))}, reserved["embed"]);
  EXPECT_EQ(e.substr(e.find(' ')), " allocation " + owner);
}

// The kubelet's Allocate names no pod: the node agent finds the pod by its
// reservation. So a bind waits while another pod's reservation of the same
// profile on that node is not allocated yet, and each pod gets its own
// placement (the pitfall of an earlier review).
TEST_F(K8sClusterTest, ABindWaitsWhileAnotherPodsReservationOfTheProfileIsUnallocated) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-1g.5gb", 10s).ok());
  const json first = PodOf(1, "1g.5gb");
  const json second = PodOf(2, "1g.5gb");
  api.AddPod(first);
  api.AddPod(second);
  const std::string node = Schedule(first);
  ASSERT_NE(node, "");
  ASSERT_EQ(Bind(first, node)["Error"], "");
  // The second pod to the same node, before the first one's kubelet Allocate.
  std::atomic<bool> bound{false};
  json second_bind;
  std::thread binder([&] {
    second_bind = BindFromThread(second, node);
    bound = true;
  });
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(bound) << "the second bind did not wait: " << second_bind.dump();
  auto a1 = Allocate(node, "1g.5gb", {"1g.5gb-0"});
  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  binder.join();
  ASSERT_EQ(second_bind["Error"], "") << second_bind.dump();
  auto a2 = Allocate(node, "1g.5gb", {"1g.5gb-1"});
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  ExpectAllocatedWhereReserved(node, first, *a1);
  ExpectAllocatedWhereReserved(node, second, *a2);
}

// kube-scheduler binds concurrently: two binds of the same profile on one node
// at once must not both reserve (each would then be ambiguous to the node
// agent); exactly one returns, the other once the first pod is allocated.
TEST_F(K8sClusterTest, TwoConcurrentBindsOfAProfileOnANodeDoNotBothReserve) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-1g.5gb", 10s).ok());
  const std::vector<json> pods = {PodOf(1, "1g.5gb"), PodOf(2, "1g.5gb")};
  for (const json& p : pods) api.AddPod(p);
  const std::string node = Schedule(pods[0]);
  ASSERT_NE(node, "");
  std::atomic<int> done{0};
  std::vector<json> answers(2);
  std::vector<int> order;
  std::mutex order_mu;
  std::vector<std::thread> binders;
  for (int i = 0; i < 2; ++i) {
    binders.emplace_back([&, i] {
      answers[i] = BindFromThread(pods[i], node);
      std::lock_guard lock(order_mu);
      order.push_back(i);
      ++done;
    });
  }
  // The first bind returns (however slow the machine), the second must not follow within 1 s.
  for (const auto until = Clock::now() + 20s; done.load() == 0 && Clock::now() < until;) {
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(1s);
  ASSERT_EQ(done.load(), 1) << "binds done at once: " << done.load();
  const int first = order[0];
  EXPECT_EQ(answers[first]["Error"], "") << answers[first].dump();
  auto a1 = Allocate(node, "1g.5gb", {"1g.5gb-0"});
  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  for (auto& t : binders) t.join();
  EXPECT_EQ(answers[1 - first]["Error"], "") << answers[1 - first].dump();
  auto a2 = Allocate(node, "1g.5gb", {"1g.5gb-1"});
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  ExpectAllocatedWhereReserved(node, pods[first], *a1);
  ExpectAllocatedWhereReserved(node, pods[1 - first], *a2);
}

// The reclaim loop (every second here): the allocation of a pod that ended
// (Succeeded) and the reservation of a pod deleted before its kubelet started
// it are released on the node daemon; the pod still running keeps its own.
TEST_F(K8sClusterTest, TheReclaimLoopReleasesWhatEndedAndGonePodsHeld) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-3g.20gb", 10s).ok());
  json ended = PodOf(1, "3g.20gb"), running = PodOf(2, "3g.20gb"), gone = PodOf(3, "2g.10gb");
  std::map<std::string, std::string> node_of, uuid_of;
  for (json* p : {&ended, &running, &gone}) {
    api.AddPod(*p);
    const std::string node = Schedule(*p);
    ASSERT_NE(node, "");
    ASSERT_EQ(Bind(*p, node)["Error"], "");
    node_of[(*p)["metadata"]["name"]] = node;
    if (p == &gone) continue;
    auto a = Allocate(node, "3g.20gb", {"3g.20gb-" + std::to_string(p == &ended ? 0 : 1)});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    uuid_of[(*p)["metadata"]["name"]] = a->envs.at("NVIDIA_VISIBLE_DEVICES");
  }
  const std::string gone_node = node_of[gone["metadata"]["name"]];
  const std::string gone_key = "k8s:" + gone["metadata"]["uid"].get<std::string>();
  auto reservations = [&](const std::string& node) {
    NodeClient daemon(NodeClientOptions{urls[NodeIndex(node)], kToken});
    auto v = daemon.Node();
    std::set<std::string> keys;
    if (v.ok()) {
      for (const auto& r : v->reservations) keys.insert(r.record.owner);
    }
    return keys;
  };
  ASSERT_EQ(reservations(gone_node).count(gone_key), 1u);

  EndPod(ended);
  auto creds = k8s::KubeconfigCredentials((dir / "kubeconfig").string());
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  k8s::KubeClient client(*creds);
  ASSERT_EQ(*client.Evict("ml", gone["metadata"]["name"], gone["metadata"]["uid"]),
            k8s::KubeClient::Eviction::kEvicted);

  const std::string ended_uuid = uuid_of[ended["metadata"]["name"]];
  const std::string ended_node = node_of[ended["metadata"]["name"]];
  const auto deadline = Clock::now() + 15s;
  while (Clock::now() < deadline &&
         (InstanceOf(ended_node, ended_uuid).find(" allocation ") != std::string::npos ||
          reservations(gone_node).count(gone_key) > 0)) {
    std::this_thread::sleep_for(100ms);
  }
  const std::string after = InstanceOf(ended_node, ended_uuid);
  EXPECT_EQ(after.find(" allocation "), std::string::npos) << after;
  EXPECT_EQ(reservations(gone_node).count(gone_key), 0u);
  const std::string kept =
      InstanceOf(node_of[running["metadata"]["name"]], uuid_of[running["metadata"]["name"]]);
  EXPECT_EQ(kept.substr(kept.find(' ')),
            " allocation k8s:" + running["metadata"]["uid"].get<std::string>());
}

// Migration by eviction: 12 migratable 3g.20gb pods fill the six GPUs; two of
// them end, one at start 4 on GPU X and one at start 0 on GPU Y, so that each
// of X and Y holds one 3g.20gb and no GPU has room for a 7g.40gb. By hand:
// requeueing one pod (X's, to Y's free start 0, or Y's, to X's free start 4)
// empties a GPU; so the extender evicts exactly one of those two pods, and
// once it is gone (and the reclaim loop released its instance) the 7g.40gb
// fits on that pod's node, on that pod's GPU.
class K8sMigrationTest : public K8sClusterTest {
 protected:
  std::string ExtenderExtra() const override { return "migration: true\nmigrate_after_s: 0\n"; }
};

TEST_F(K8sMigrationTest, AnEvictionOpensRoomForAPodThatFitsNowhere) {
  ASSERT_TRUE(kubelets[2]->WaitForRegistration("nvidia.com/mig-3g.20gb", 10s).ok());
  struct Placed {
    json pod;
    std::string node;
    int gpu = 0, start = 0;
  };
  std::vector<Placed> placed;
  std::map<std::string, int> next_device;
  for (int i = 0; i < 12; ++i) {
    json pod = PodOf(i, "3g.20gb");
    pod["metadata"]["annotations"]["migsched.io/migratable"] = "true";
    api.AddPod(pod);
    const std::string node = Schedule(pod);
    ASSERT_NE(node, "") << i;
    ASSERT_EQ(Bind(pod, node)["Error"], "") << i;
    auto a = Allocate(node, "3g.20gb", {"3g.20gb-" + std::to_string(next_device[node]++)});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const json in = PlacementOf(pod)["instances"][0];
    placed.push_back({pod, node, in["gpu"].get<int>(), in["start"].get<int>()});
  }
  // X: the first pod at start 4; Y: a pod at start 0 on another GPU.
  const Placed* x4 = nullptr;
  const Placed* y0 = nullptr;
  for (const Placed& p : placed) {
    if (x4 == nullptr && p.start == 4) x4 = &p;
  }
  ASSERT_NE(x4, nullptr);
  for (const Placed& p : placed) {
    if (y0 == nullptr && p.start == 0 && (p.node != x4->node || p.gpu != x4->gpu)) y0 = &p;
  }
  ASSERT_NE(y0, nullptr);
  // The pods left on X (at 0) and on Y (at 4).
  const Placed* x0 = nullptr;
  const Placed* y4 = nullptr;
  for (const Placed& p : placed) {
    if (p.node == x4->node && p.gpu == x4->gpu && p.start == 0) x0 = &p;
    if (p.node == y0->node && p.gpu == y0->gpu && p.start == 4) y4 = &p;
  }
  ASSERT_NE(x0, nullptr);
  ASSERT_NE(y4, nullptr);
  for (const Placed* p : {x4, y0}) EndPod(p->pod);

  // The 7g.40gb fits nowhere: the extender evicts one pod for it.
  json big = PodOf(20, "7g.40gb");
  api.AddPod(big);
  const auto deadline = Clock::now() + 20s;
  std::vector<std::string> evicted;
  std::string node;
  while (Clock::now() < deadline && node.empty()) {
    node = Schedule(big);  // kube-scheduler retrying the pending pod
    evicted.clear();
    for (const auto& r : api.requests()) {
      if (r.method == "POST" && r.path.size() > 9 &&
          r.path.compare(r.path.size() - 9, 9, "/eviction") == 0) {
        evicted.push_back(r.path);
      }
    }
    if (node.empty()) std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(evicted.size(), 1u) << ::testing::PrintToString(evicted);
  const std::string x0_path =
      "/api/v1/namespaces/ml/pods/" + x0->pod["metadata"]["name"].get<std::string>() + "/eviction";
  const std::string y4_path =
      "/api/v1/namespaces/ml/pods/" + y4->pod["metadata"]["name"].get<std::string>() + "/eviction";
  ASSERT_TRUE(evicted[0] == x0_path || evicted[0] == y4_path) << evicted[0];
  const Placed* moved = evicted[0] == x0_path ? x0 : y4;
  ASSERT_EQ(node, moved->node);
  ASSERT_EQ(Bind(big, node)["Error"], "");
  const json in = PlacementOf(big)["instances"][0];
  EXPECT_EQ(in["gpu"].get<int>(), moved->gpu);
  EXPECT_EQ(in["start"].get<int>(), 0);
  auto a = Allocate(node, "7g.40gb", {"7g.40gb-0"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(InstanceOf(node, a->envs.at("NVIDIA_VISIBLE_DEVICES")),
            fmt::format("{}:7g.40gb@0 allocation k8s:{}", moved->gpu,
                        big["metadata"]["uid"].get<std::string>()));
}

// The node daemons found as the extender finds them in a cluster: the Running
// node-agent pods of a namespace with a label, at http://<podIP>:<port>. Only
// gpu-node-1's agent pod is there at first (the port is one for all nodes and
// the three daemons here have ports of their own, so the others cannot be).
class K8sDiscoveryTest : public K8sClusterTest {
 protected:
  std::string NodesYaml(const std::string&) override {
    json agent = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", "migsched-node-agent-x1"},
                    {"namespace", "migsched-system"},
                    {"uid", "agent-uid-1"},
                    {"creationTimestamp", "2026-05-04T09:00:00Z"},
                    {"labels", {{"app.kubernetes.io/name", "migsched-node-agent"}}}}},
                  {"spec", {{"nodeName", kNodes[0]}}},
                  {"status", {{"phase", "Running"}, {"podIP", "127.0.0.1"}}}};
    api.AddPod(agent);
    const std::string port = urls[0].substr(urls[0].rfind(':') + 1);
    return "node_agents: {namespace: migsched-system, label_selector: "
           "app.kubernetes.io/name=migsched-node-agent, port: " +
           port + "}\n";
  }
};

TEST_F(K8sDiscoveryTest, TheNodeDaemonsAreTheNodeAgentPods) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-1g.5gb", 10s).ok());
  const json pod = PodOf(1, "1g.5gb");
  api.AddPod(pod);
  const json f = Post("filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", kNodes}});
  ASSERT_EQ(f["NodeNames"], json({kNodes[0]})) << f.dump();
  EXPECT_EQ(f["FailedAndUnresolvableNodes"][kNodes[1]],
            kNodes[1] + " has no migsched node daemon (known: " + kNodes[0] + ")");
  const std::string node = Schedule(pod);
  ASSERT_EQ(node, kNodes[0]);
  ASSERT_EQ(Bind(pod, node)["Error"], "");
  auto a = Allocate(node, "1g.5gb", {"1g.5gb-0"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ExpectAllocatedWhereReserved(node, pod, *a);
}

// Two extender replicas with leader election (a short lease here): only the
// holder of the Lease binds, the other refuses, naming the holder. When the
// leader stops (SIGTERM gives the lease up), the other takes over and binds.
// A reservation the stopped replica made that the kubelet had not taken yet
// (in flight across the restart) lives on the node's daemon, not in the
// extender: the kubelet's Allocate still gets its instance, and the new
// leader places the next pods around it.
class K8sLeaderElectionTest : public K8sClusterTest {
 protected:
  std::string ExtenderExtra() const override {
    return "migration: false\nleader_election: {enabled: true, identity: extender-a, "
           "lease_duration_s: 4, renew_deadline_s: 3, retry_s: 0.2}\n";
  }
  std::string Holder() {
    auto l = api.Lease("migsched-system", "migsched-extender");
    return l ? (*l)["spec"].value("holderIdentity", std::string()) : "";
  }
  // Waits (bounded) until `who` holds the Lease.
  bool WaitForHolder(const std::string& who) {
    for (const auto until = Clock::now() + 30s; Clock::now() < until;) {
      if (Holder() == who) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
};

TEST_F(K8sLeaderElectionTest, OnlyTheLeaseHolderBindsAndTheOtherReplicaTakesOver) {
  ASSERT_TRUE(kubelets[0]->WaitForRegistration("nvidia.com/mig-7g.40gb", 10s).ok());
  ASSERT_TRUE(WaitForHolder("extender-a")) << Holder();
  std::string cfg = testing::ReadFile((dir / "extender.yaml").string());
  const std::string a = "identity: extender-a";
  cfg.replace(cfg.find(a), a.size(), "identity: extender-b");
  std::ofstream(dir / "extender-b.yaml") << cfg;
  auto b = Child::Start({"k8s", "extender", "--config", (dir / "extender-b.yaml").string()},
                        dir / "extender-b.log", "extender listening on http://127.0.0.1:");
  ASSERT_NE(b, nullptr);
  auto b_http = std::make_unique<httplib::Client>("127.0.0.1", std::stoi(b->rest()));
  b_http->set_read_timeout(60, 0);

  // 7g.40gb: a whole GPU each, two per node.
  const json first = PodOf(1, "7g.40gb"), second = PodOf(2, "7g.40gb"), third = PodOf(3, "7g.40gb");
  for (const json* p : {&first, &second, &third}) api.AddPod(*p);
  const std::string node = Schedule(first);  // replica a
  ASSERT_NE(node, "");
  std::swap(http, b_http);  // replica b
  EXPECT_EQ(Bind(first, node)["Error"],
            "migsched: not the leader (the lease migsched-system/migsched-extender is held by "
            "extender-a)");
  EXPECT_FALSE(api.Pod("ml", "train-01").value()["spec"].contains("nodeName"));
  std::swap(http, b_http);  // replica a binds: reserved on the node's daemon
  ASSERT_EQ(Bind(first, node)["Error"], "");

  extender.reset();  // SIGTERM: a stops and gives the lease up
  ASSERT_TRUE(WaitForHolder("extender-b")) << Holder();
  http = std::move(b_http);
  // The kubelet starts the first pod only now: its reservation outlived a.
  auto a1 = Allocate(node, "7g.40gb", {"7g.40gb-0"});
  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  ExpectAllocatedWhereReserved(node, first, *a1);
  // b places the second pod on the node's other GPU, and the third nowhere there.
  const json only_node = {node};
  json f = Post("filter", {{"Pod", second}, {"Nodes", nullptr}, {"NodeNames", only_node}});
  ASSERT_EQ(f["NodeNames"], only_node) << f.dump();
  ASSERT_EQ(Bind(second, node)["Error"], "");
  EXPECT_NE(PlacementOf(second)["instances"][0]["gpu"], PlacementOf(first)["instances"][0]["gpu"]);
  auto a2 = Allocate(node, "7g.40gb", {"7g.40gb-1"});
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  ExpectAllocatedWhereReserved(node, second, *a2);
  f = Post("filter", {{"Pod", third}, {"Nodes", nullptr}, {"NodeNames", only_node}});
  EXPECT_TRUE(f["NodeNames"].empty()) << f.dump();
}

// The commands refuse a config they cannot use at once, saying why, before
// serving anything.
TEST(K8sCommandsTest, BadConfigsAreRefusedWithTheReason) {
  const fs::path dir = testing::MakeTempDir("k8s-cmd");
  auto r = testing::RunMigsched({"k8s", "extender", "--config", (dir / "missing.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("migsched k8s extender: cannot read config file"), std::string::npos)
      << r.err;
  const fs::path bad = dir / "extender.yaml";
  std::ofstream(bad) << "nodes: [{name: n1, url: 'http://127.0.0.1:1'}]\ntoken: t\n"
                     << "scheduler: {policy: no-such-policy}\n";
  r = testing::RunMigsched({"k8s", "extender", "--config", bad.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-policy"), std::string::npos) << r.err;
  const fs::path agent = dir / "agent.yaml";
  std::ofstream(agent) << "daemon_url: http://127.0.0.1:1\ntoken: t\nhealth_interval_s: -1\n";
  r = testing::RunMigsched({"k8s", "node-agent", "--config", agent.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("health_interval_s"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace migsched
