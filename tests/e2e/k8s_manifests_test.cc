// deploy/kubernetes/ (a kustomize base, base/, and the examples, examples/)
// validated offline: every object against the Kubernetes
// OpenAPI schemas (npm kubernetes-models, installed by scripts/setup.sh into
// tests/data/k8s/validate/node_modules), the KubeSchedulerConfigurations
// against migsched's schema of the upstream Go types, references between the
// objects; the migsched configs inside the ConfigMaps parse; the managed
// resources are exactly the catalog's base profiles; `kubectl kustomize`
// renders both kustomizations to exactly the objects of their files. The
// validator is shown to fail on broken manifests (tests/data/k8s/bad-manifests/).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "daemon/config.h"
#include "k8s/config.h"
#include "k8s/extender/pod_requests.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;

struct ShellResult {
  int exit_code;
  std::string out;
};

ShellResult Shell(const std::string& cmd) {
  ShellResult r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Validator() { return testing::TestDataDir() + "/k8s/validate"; }

std::string Deploy() { return testing::SourceDir() + "/deploy/kubernetes"; }

// Every manifest file (not the kustomization.yaml files, which are kustomize's).
std::vector<std::string> Manifests() {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(Deploy())) {
    if (e.path().extension() == ".yaml" && e.path().filename() != "kustomization.yaml") {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

ShellResult Validate(const std::vector<std::string>& files) {
  std::string cmd = "node " + Validator() + "/validate.mjs";
  for (const auto& f : files) cmd += " '" + f + "'";
  return Shell(cmd);
}

class ManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(Validator() + "/node_modules/kubernetes-models"))
        << "the validator's npm packages are missing: run scripts/setup.sh (npm ci in "
        << Validator() << ")";
  }
};

TEST_F(ManifestsTest, DeployKubernetesValidatesAgainstTheSchemas) {
  const auto files = Manifests();
  ASSERT_GE(files.size(), 7u);
  const ShellResult r = Validate(files);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const auto& f : files)
    EXPECT_NE(r.out.find("ok " + f), std::string::npos) << f << "\n" << r.out;
}

TEST_F(ManifestsTest, TheValidatorCatchesBrokenManifests) {
  const std::string bad = testing::TestDataDir() + "/k8s/bad-manifests/";
  const ShellResult r =
      Validate({bad + "dangling.yaml", bad + "limits-list.yaml", bad + "scheduler-config.yaml"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  for (const std::string expected : {
           "resources/limits must be object",
           "must NOT have additional properties ('nodeCacheCapabel')",
           "/extenders/0/weight must be positive when prioritizeVerb is set",
           "/extenders/0/managedResources/1/name 'nvidia.com/mig-1g.5gb' is a duplicate",
           "only one extender may have a bindVerb, found 2",
           "service account default/nobody is not defined",
           "no workload's pods match the selector {\"app\":\"other\"}",
       }) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
}

// Every YAML document of a manifest file (relative to deploy/kubernetes/).
std::vector<YAML::Node> Docs(const std::string& name) {
  return YAML::LoadAllFromFile(Deploy() + "/" + name);
}

// "Kind/namespace/name" of every object of YAML text.
std::multiset<std::string> Objects(const std::vector<YAML::Node>& docs) {
  std::multiset<std::string> out;
  for (const auto& d : docs) {
    if (!d.IsMap()) continue;
    const YAML::Node meta = d["metadata"];
    out.insert(d["kind"].as<std::string>() + "/" +
               (meta["namespace"] ? meta["namespace"].as<std::string>() : "") + "/" +
               meta["name"].as<std::string>());
  }
  return out;
}

// kubectl kustomize (kubectl's own kustomize, offline) renders each
// kustomization to the objects of the files in its folder, all of them, and the
// rendering passes the validator.
TEST_F(ManifestsTest, KustomizeRendersTheBaseAndTheExamples) {
  if (Shell("kubectl version --client").exit_code != 0) {
    GTEST_SKIP() << "kubectl is not installed: install Debian's kubernetes-client "
                    "(MIGSCHED_WITH_KUBECTL=1 scripts/setup.sh) to render deploy/kubernetes/ "
                    "with kubectl kustomize";
  }
  const fs::path out = testing::MakeTempDir("kustomize");
  for (const std::string dir : {"base", "examples"}) {
    const ShellResult r = Shell("(kubectl kustomize " + Deploy() + "/" + dir + " 2>/dev/null)");
    ASSERT_EQ(r.exit_code, 0) << dir << ": " << r.out;
    const std::string rendered = (out / (dir + ".yaml")).string();
    std::ofstream(rendered) << r.out;
    std::multiset<std::string> expected;
    for (const auto& f : Manifests()) {
      if (fs::path(f).parent_path().filename() == dir) {
        const auto objects = Objects(YAML::LoadAllFromFile(f));
        expected.insert(objects.begin(), objects.end());
      }
    }
    EXPECT_EQ(Objects(YAML::LoadAll(r.out)), expected) << dir;
    const ShellResult v = Validate({rendered});
    EXPECT_EQ(v.exit_code, 0) << v.out;
  }
}

YAML::Node Find(const std::string& file, const std::string& kind, const std::string& name) {
  for (const auto& d : Docs(file)) {
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>() == name) {
      return d;
    }
  }
  ADD_FAILURE() << kind << "/" << name << " not in " << file;
  return YAML::Node();
}

// The base profiles of every bundled GPU model, as resource names.
std::set<std::string> CatalogResources() {
  std::set<std::string> names;
  for (const GpuModel* m : testing::BundledCatalog().models()) {
    for (int p : m->base_profiles()) names.insert("nvidia.com/mig-" + m->profile(p).name);
  }
  return names;
}

std::set<std::string> ManagedResources(const YAML::Node& config) {
  std::set<std::string> names;
  for (const auto& e : config["extenders"]) {
    for (const auto& r : e["managedResources"]) {
      names.insert(r["name"].as<std::string>());
      EXPECT_TRUE(r["ignoredByScheduler"].as<bool>()) << r["name"].as<std::string>();
    }
  }
  return names;
}

TEST(ManifestContentTest, ManagedResourcesAreTheCatalogsBaseProfiles) {
  const YAML::Node cm = Find("base/scheduler.yaml", "ConfigMap", "migsched-scheduler");
  const YAML::Node second = YAML::Load(cm["data"]["scheduler-config.yaml"].as<std::string>());
  EXPECT_EQ(second["profiles"][0]["schedulerName"].as<std::string>(), "migsched");
  EXPECT_TRUE(second["extenders"][0]["nodeCacheCapable"].as<bool>());
  EXPECT_EQ(ManagedResources(second), CatalogResources());
  const YAML::Node default_profile = Docs("kube-scheduler-config-default-profile.yaml").at(0);
  EXPECT_EQ(ManagedResources(default_profile), CatalogResources());
}

TEST(ManifestContentTest, TheSchedulerConfigsAreTheGeneratorsOutput) {
  const YAML::Node cm = Find("base/scheduler.yaml", "ConfigMap", "migsched-scheduler");
  const testing::CommandResult second = testing::RunMigsched({"k8s", "scheduler-config"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(cm["data"]["scheduler-config.yaml"].as<std::string>(), second.out);

  const testing::CommandResult def = testing::RunMigsched(
      {"k8s", "scheduler-config", "--default-profile", "--url", "https://10.96.100.100:8888",
       "--tls-dir", "/etc/kubernetes/migsched", "--kubeconfig", "/etc/kubernetes/scheduler.conf"});
  ASSERT_EQ(def.exit_code, 0) << def.err;
  const std::string file =
      testing::ReadFile(Deploy() + "/kube-scheduler-config-default-profile.yaml");
  ASSERT_NE(file.find("apiVersion:"), std::string::npos);
  EXPECT_EQ(file.substr(file.find("apiVersion:")), def.out);

  const testing::CommandResult bad =
      testing::RunMigsched({"k8s", "scheduler-config", "--gpu", "Z9000"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("Z9000"), std::string::npos) << bad.err;
}

TEST(ManifestContentTest, TheDaemonConfigOfTheNodeAgentParses) {
  const YAML::Node cm = Find("base/node-agent.yaml", "ConfigMap", "migsched-node-agent");
  auto config = ParseDaemonConfig(cm["data"]["daemon.yaml"].as<std::string>(), "daemon.yaml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->backend, "nvml");
  EXPECT_EQ(config->listen, "0.0.0.0:7070");
}

TEST(ManifestContentTest, TheExtenderAndNodeAgentConfigsParse) {
  const YAML::Node ext = Find("base/extender.yaml", "ConfigMap", "migsched-extender");
  auto e =
      k8s::ParseExtenderConfig(ext["data"]["extender.yaml"].as<std::string>(), "extender.yaml");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->discovers());
  EXPECT_EQ(e->agents_namespace, "migsched-system");
  // Its scheduler keys are the daemon's (PolicyOf reads them as `migsched serve` does).
  auto policy = k8s::PolicyOf(*e, "extender.yaml");
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  const YAML::Node agent = Find("base/node-agent.yaml", "ConfigMap", "migsched-node-agent");
  auto a = k8s::ParseNodeAgentConfig(agent["data"]["node-agent.yaml"].as<std::string>(),
                                     "node-agent.yaml");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->device_plugin_dir, "/var/lib/kubelet/device-plugins");
  // The discovery label is the DaemonSet's pod label, the port its daemon's.
  const YAML::Node ds = Find("base/node-agent.yaml", "DaemonSet", "migsched-node-agent");
  EXPECT_EQ(
      "app.kubernetes.io/name=" +
          ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>(),
      e->agents_label_selector);
  EXPECT_EQ(ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"].as<int>(),
            e->agents_port);
}

// Regression: both containers ran as the image's user 65532 (deploy/container/Containerfile),
// which cannot read the token Secret's file (mode 0400, owned by root: defaultMode below, and a
// Secret volume's files are root's) nor write kubelet's device-plugins directory. They run as
// root, as the Containerfile's comment says the node daemon does.
TEST(ManifestContentTest, TheNodeAgentIsPrivilegedOnMigNodes) {
  const YAML::Node ds = Find("base/node-agent.yaml", "DaemonSet", "migsched-node-agent");
  const YAML::Node spec = ds["spec"]["template"]["spec"];
  EXPECT_EQ(spec["nodeSelector"]["nvidia.com/mig.capable"].as<std::string>(), "true");
  for (const auto& c : spec["containers"]) {
    EXPECT_TRUE(c["securityContext"]["privileged"].as<bool>()) << c["name"].as<std::string>();
    ASSERT_TRUE(c["securityContext"]["runAsUser"]) << c["name"].as<std::string>();
    EXPECT_EQ(c["securityContext"]["runAsUser"].as<int>(), 0) << c["name"].as<std::string>();
  }
  bool token_mounted = false;
  for (const auto& v : spec["volumes"]) {
    if (v["name"].as<std::string>() != "token") continue;
    token_mounted = true;
    EXPECT_EQ(v["secret"]["defaultMode"].as<std::string>(), "0400");
  }
  EXPECT_TRUE(token_mounted);
}

TEST(ManifestContentTest, TheExampleJobAsksForOneMigratable3g20gb) {
  const YAML::Node job = Find("examples/example-job.yaml", "Job", "train-resnet");
  const YAML::Node tmpl = job["spec"]["template"];
  EXPECT_EQ(tmpl["spec"]["schedulerName"].as<std::string>(), "migsched");
  EXPECT_EQ(tmpl["metadata"]["annotations"]["migsched.io/migratable"].as<std::string>(), "true");
  // The pod the Job makes, as the extender reads it.
  nlohmann::json pod = {{"metadata", {{"name", "train-resnet-abcde"}}},
                        {"spec", {{"containers", nlohmann::json::array()}}}};
  for (const auto& c : tmpl["spec"]["containers"]) {
    nlohmann::json limits;
    for (const auto& kv : c["resources"]["limits"]) {
      limits[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    pod["spec"]["containers"].push_back(
        {{"name", c["name"].as<std::string>()}, {"resources", {{"limits", limits}}}});
  }
  auto info = k8s::ParsePod(pod);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->instance_profiles(), (std::vector<std::string>{"3g.20gb"}));
}

// Pod Security Admission: the node agent is privileged with hostPath volumes,
// which only the `privileged` level admits.
TEST(ManifestContentTest, TheNamespaceAdmitsThePrivilegedNodeAgent) {
  const YAML::Node ns = Find("base/namespace.yaml", "Namespace", "migsched-system");
  EXPECT_EQ(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].as<std::string>(),
            "privileged");
}

// Every container has resource requests and a memory limit; every container
// of a long-running workload (not a Job's) has a probe.
TEST(ManifestContentTest, EveryContainerHasRequestsLimitsAndProbes) {
  int containers = 0;
  for (const auto& f : Manifests()) {
    for (const auto& d : YAML::LoadAllFromFile(f)) {
      if (!d.IsMap() || !d["spec"] || !d["spec"]["template"]) continue;
      const std::string kind = d["kind"].as<std::string>();
      for (const auto& c : d["spec"]["template"]["spec"]["containers"]) {
        const std::string where = f + " " + kind + " " + c["name"].as<std::string>();
        ++containers;
        EXPECT_TRUE(c["resources"]["requests"]["cpu"].IsDefined()) << where;
        EXPECT_TRUE(c["resources"]["requests"]["memory"].IsDefined()) << where;
        EXPECT_TRUE(c["resources"]["limits"]["memory"].IsDefined()) << where;
        if (kind != "Job") {
          EXPECT_TRUE(c["livenessProbe"].IsDefined() || c["readinessProbe"].IsDefined()) << where;
        }
      }
    }
  }
  EXPECT_EQ(containers, 6);  // extender, scheduler, daemon, device-plugin, train, server
}

// The extender and kube-scheduler speak mutual TLS with the files the
// Secrets put where the configs name them; probes use the plain listener.
TEST(ManifestContentTest, TheExtenderIsCalledOverMutualTls) {
  const YAML::Node ext = Find("base/extender.yaml", "ConfigMap", "migsched-extender");
  auto e =
      k8s::ParseExtenderConfig(ext["data"]["extender.yaml"].as<std::string>(), "extender.yaml");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->tls_client_ca_file, "/etc/migsched-tls/ca.crt");
  EXPECT_TRUE(e->leader_elect);
  const YAML::Node dep = Find("base/extender.yaml", "Deployment", "migsched-extender");
  const YAML::Node pod = dep["spec"]["template"]["spec"];
  EXPECT_EQ(pod["containers"][0]["volumeMounts"][2]["mountPath"].as<std::string>(),
            "/etc/migsched-tls");
  EXPECT_EQ(pod["volumes"][2]["secret"]["secretName"].as<std::string>(), "migsched-extender-tls");
  EXPECT_EQ(pod["containers"][0]["readinessProbe"]["httpGet"]["port"].as<std::string>(), "probes");
  EXPECT_EQ(pod["containers"][0]["ports"][1]["containerPort"].as<int>(),
            std::stoi(e->probe_listen.substr(e->probe_listen.rfind(':') + 1)));

  const YAML::Node cm = Find("base/scheduler.yaml", "ConfigMap", "migsched-scheduler");
  const YAML::Node sc = YAML::Load(cm["data"]["scheduler-config.yaml"].as<std::string>());
  const YAML::Node tls = sc["extenders"][0]["tlsConfig"];
  EXPECT_EQ(tls["certFile"].as<std::string>(), "/etc/migsched-tls/tls.crt");
  EXPECT_EQ(tls["caFile"].as<std::string>(), "/etc/migsched-tls/ca.crt");
  EXPECT_EQ(sc["extenders"][0]["urlPrefix"].as<std::string>().rfind("https://", 0), 0u);
  const YAML::Node sdep = Find("base/scheduler.yaml", "Deployment", "migsched-scheduler");
  const YAML::Node spod = sdep["spec"]["template"]["spec"];
  EXPECT_EQ(spod["containers"][0]["volumeMounts"][1]["mountPath"].as<std::string>(),
            "/etc/migsched-tls");
  EXPECT_EQ(spod["volumes"][1]["secret"]["secretName"].as<std::string>(), "migsched-scheduler-tls");
}

}  // namespace
}  // namespace migsched
