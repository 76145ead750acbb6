// The Kubernetes path end to end on one machine: three node daemons
// (`migsched serve`, fake backend, 2x A100 40GB each), three node agents
// (`migsched k8s node-agent`) registered with three test kubelets, the
// extender (`migsched k8s extender`) with a loopback API server. The test
// plays kube-scheduler (filter, prioritize, pick the best score, bind) and the
// kubelet (Allocate on the chosen node's device plugin) for 30 pods in order,
// and checks each pod's MIG UUID against the daemon's instances, and that the
// placements are those `migsched simulate` chooses for the same arrival
// order on the same GPUs (6x A100 40GB, node by node) with the same policy.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "daemon/client/node_client.h"
#include "k8s/testing/recording_api_server.h"
#include "k8s/testing/test_kubelet.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A child `migsched ...` process; Start waits (15 s) for a stdout line
// containing `marker` and keeps what follows it on that line.
class Child {
 public:
  static std::unique_ptr<Child> Start(const std::vector<std::string>& args, const fs::path& log,
                                      const std::string& marker) {
    int fds[2];
    if (::pipe(fds) != 0) return nullptr;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(err, 2);
      ::close(fds[0]);
      std::vector<std::string> argv = {testing::MigschedBinary()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargs;
      for (auto& a : argv) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    auto c = std::unique_ptr<Child>(new Child(pid, fds[0]));
    std::string out;
    const auto deadline = Clock::now() + 15s;
    while (Clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      const size_t at = out.find(marker);
      if (at != std::string::npos) {
        const size_t end = out.find('\n', at);
        if (end == std::string::npos) continue;
        c->rest_ = out.substr(at + marker.size(), end - at - marker.size());
        return c;
      }
    }
    ADD_FAILURE() << "migsched " << args[0] << " " << (args.size() > 1 ? args[1] : "")
                  << " did not start; stdout: " << out << "\nlog: " << testing::ReadFile(log);
    return nullptr;
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(100ms);
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    ::close(fd_);
  }
  const std::string& rest() const { return rest_; }

 private:
  Child(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_;
  int fd_;
  std::string rest_;
};

// The 30 pods, in arrival order (a shuffled mix; the fourth-last 3g.20gb finds
// no free placement on any node once the earlier ones are placed).
const std::vector<std::string> kSequence = {
    "2g.10gb", "1g.5gb",  "1g.5gb",  "1g.5gb",  "1g.10gb", "1g.5gb", "1g.5gb", "4g.20gb",
    "1g.5gb",  "1g.5gb",  "1g.5gb",  "3g.20gb", "1g.5gb",  "1g.5gb", "1g.5gb", "1g.5gb",
    "1g.10gb", "1g.5gb",  "1g.5gb",  "1g.10gb", "1g.5gb",  "1g.5gb", "1g.5gb", "1g.5gb",
    "1g.5gb",  "2g.10gb", "2g.10gb", "3g.20gb", "1g.5gb",  "1g.5gb"};
const std::vector<std::string> kNodes = {"gpu-node-1", "gpu-node-2", "gpu-node-3"};
constexpr char kPolicy[] = "frag-aware";
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
std::vector<std::string> Simulate(const fs::path& dir) {
  const fs::path trace = dir / "trace.csv";
  {
    std::ofstream f(trace);
    f << "id,arrival_s,profile,duration_s\n";
    for (size_t i = 0; i < kSequence.size(); ++i) {
      f << "pod-" << i << "," << i << "," << kSequence[i] << ",1000000\n";
    }
  }
  const fs::path jobs = dir / "jobs.csv";
  const auto r =
      testing::RunMigsched({"simulate", "--cluster", "6xA100-40GB", "--workload", trace.string(),
                            "--policy", kPolicy, "--jobs-csv", jobs.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
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
                         << "node_name: " << kNodes[n] << "\nscheduler: {policy: " << kPolicy
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
                        << "\nnodes:\n"
                        << nodes_yaml << "token: " << kToken << "\nscheduler: {policy: " << kPolicy
                        << "}\nreclaim_interval_s: 1\nmigration: false\n";
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

  fs::path dir;
  k8s::RecordingApiServer api{"api-token"};
  std::vector<std::unique_ptr<Child>> daemons, agents;
  std::vector<std::string> urls;
  std::vector<std::unique_ptr<k8s::TestKubelet>> kubelets;
  std::unique_ptr<Child> extender;
  std::unique_ptr<httplib::Client> http;
};

TEST_F(K8sClusterTest, ThirtyPodsGetTheirInstancesWhereSimulateWouldPutThem) {
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

  const std::vector<std::string> expected = Simulate(dir);
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
    const json p =
        Post("prioritize", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", f["NodeNames"]}});
    std::string best;
    int64_t best_score = -1;
    for (const auto& hp : p) {
      if (hp["Score"].get<int64_t>() > best_score) {
        best_score = hp["Score"];
        best = hp["Host"];
      }
    }
    ASSERT_EQ(best_score, 10) << p.dump();
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
        EXPECT_EQ(g.index, inst["gpu"].get<int>());
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

}  // namespace
}  // namespace migsched
