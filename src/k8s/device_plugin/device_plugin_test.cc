// The device plugin against a test kubelet over real unix-socket gRPC channels:
// registration, ListAndWatch, Allocate, GetPreferredAllocation,
// PreStartContainer, and re-registration after a kubelet restart.
#include "k8s/device_plugin/device_plugin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include "k8s/testing/test_kubelet.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using namespace std::chrono_literals;

// Records each call and answers with one made-up MIG UUID per device, or with
// `error` when set.
class RecordingAllocator : public DeviceAllocator {
 public:
  StatusOr<ContainerDevices> Allocate(const std::string& profile,
                                      const std::vector<std::string>& ids) override {
    std::lock_guard lock(mu);
    calls.push_back({profile, ids});
    if (!error.ok()) return error;
    ContainerDevices d;
    std::string uuids;
    for (size_t i = 0; i < ids.size(); ++i) {
      uuids += (i ? "," : "") + ("MIG-" + profile + "-" + ids[i]);
    }
    d.envs["NVIDIA_VISIBLE_DEVICES"] = uuids;
    d.device_nodes.push_back({"/dev/nvidiactl", "/dev/nvidiactl", "rw"});
    d.cdi_devices.push_back("nvidia.com/gpu=" + uuids);
    return d;
  }
  std::mutex mu;
  std::vector<std::pair<std::string, std::vector<std::string>>> calls;
  Status error;
};

std::string ShortTempDir() {
  // unix socket paths are limited to 107 bytes: keep the directory short.
  return migsched::testing::MakeTempDir("dp").string();
}

TEST(MigResourceTest, NamesFollowTheMixedStrategy) {
  MigResource r{"3g.20gb", 2};
  EXPECT_EQ(r.resource_name(), "nvidia.com/mig-3g.20gb");
  EXPECT_EQ(r.endpoint(), "migsched-3g.20gb.sock");
  EXPECT_EQ(r.device_ids(), (std::vector<std::string>{"3g.20gb-0", "3g.20gb-1"}));
}

TEST(ExtendedResourceNameTest, AsTheKubeletChecksIt) {
  struct Case {
    std::string name;
    bool valid;
  };
  for (const Case& c : std::vector<Case>{{"nvidia.com/mig-3g.20gb", true},
                                         {"nvidia.com/mig-1g.5gb", true},
                                         {"nvidia.com/mig-7g.141gb", true},
                                         {"nvidia.com/mig-1g.10gb+me", false},  // '+'
                                         {"mig-1g.5gb", false},                 // no prefix
                                         {"kubernetes.io/mig", false},
                                         {"requests.nvidia.com/x", false},
                                         {"Nvidia.com/mig", false},  // upper-case domain
                                         {"nvidia.com/-mig", false}}) {
    EXPECT_EQ(ExtendedResourceNameError(c.name).empty(), c.valid) << c.name;
  }
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = ShortTempDir();
    auto k = TestKubelet::Start(dir);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kubelet = std::move(*k);
  }
  std::string dir;
  std::unique_ptr<TestKubelet> kubelet;
  RecordingAllocator allocator;
};

TEST_F(DevicePluginTest, RegistersAsV1beta1WithItsResourceAndEndpoint) {
  DevicePluginServer server(dir, MigResource{"3g.20gb", 2}, &allocator);
  ASSERT_TRUE(server.Start().ok());
  auto reg = kubelet->WaitForRegistration("nvidia.com/mig-3g.20gb", 5s);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->version, "v1beta1");
  EXPECT_EQ(reg->endpoint, "migsched-3g.20gb.sock");
  EXPECT_FALSE(reg->pre_start_required);
  EXPECT_FALSE(reg->get_preferred_allocation_available);
  EXPECT_TRUE(std::filesystem::exists(server.socket_path()));
  server.Stop();
  EXPECT_FALSE(std::filesystem::exists(server.socket_path()));
}

TEST_F(DevicePluginTest, ListAndWatchSendsTheDevicesThenEveryHealthChange) {
  DevicePluginServer server(dir, MigResource{"1g.5gb", 3}, &allocator);
  ASSERT_TRUE(server.Start().ok());
  auto plugin = kubelet->Dial("nvidia.com/mig-1g.5gb");
  ASSERT_TRUE(plugin.ok());
  auto options = (*plugin)->Options();
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->pre_start_required);

  auto first = (*plugin)->NextDeviceList(5s);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first,
            (std::vector<ListedDevice>{
                {"1g.5gb-0", "Healthy"}, {"1g.5gb-1", "Healthy"}, {"1g.5gb-2", "Healthy"}}));
  server.SetHealthy(false);
  auto second = (*plugin)->NextDeviceList(5s);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->size(), 3u);
  for (const auto& d : *second) EXPECT_EQ(d.health, "Unhealthy");
  server.SetHealthy(false);  // no change: nothing sent
  EXPECT_FALSE((*plugin)->NextDeviceList(300ms).ok());
  server.SetHealthy(true);
  auto third = (*plugin)->NextDeviceList(5s);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*third)[0].health, "Healthy");
}

TEST_F(DevicePluginTest, AllocateHandsTheDeviceIdsToTheAllocatorAndReturnsItsAnswer) {
  DevicePluginServer server(dir, MigResource{"2g.10gb", 3}, &allocator);
  ASSERT_TRUE(server.Start().ok());
  auto plugin = kubelet->Dial("nvidia.com/mig-2g.10gb");
  ASSERT_TRUE(plugin.ok());
  auto got = (*plugin)->Allocate({"2g.10gb-2", "2g.10gb-0"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->envs.at("NVIDIA_VISIBLE_DEVICES"), "MIG-2g.10gb-2g.10gb-2,MIG-2g.10gb-2g.10gb-0");
  ASSERT_EQ(got->device_nodes.size(), 1u);
  EXPECT_EQ(got->device_nodes[0].host_path, "/dev/nvidiactl");
  EXPECT_EQ(got->device_nodes[0].permissions, "rw");
  EXPECT_EQ(
      got->cdi_devices,
      (std::vector<std::string>{"nvidia.com/gpu=MIG-2g.10gb-2g.10gb-2,MIG-2g.10gb-2g.10gb-0"}));
  ASSERT_EQ(allocator.calls.size(), 1u);
  EXPECT_EQ(allocator.calls[0].first, "2g.10gb");
  EXPECT_EQ(allocator.calls[0].second, (std::vector<std::string>{"2g.10gb-2", "2g.10gb-0"}));

  // Two containers in one request: one answer each, in order.
  auto many = (*plugin)->AllocateMany({{"2g.10gb-0"}, {"2g.10gb-1"}});
  ASSERT_TRUE(many.ok());
  ASSERT_EQ(many->size(), 2u);
  EXPECT_EQ((*many)[1].envs.at("NVIDIA_VISIBLE_DEVICES"), "MIG-2g.10gb-2g.10gb-1");
}

TEST_F(DevicePluginTest, AllocateErrorsReachTheKubeletWithTheAllocatorsMessage) {
  DevicePluginServer server(dir, MigResource{"3g.20gb", 2}, &allocator);
  ASSERT_TRUE(server.Start().ok());
  auto plugin = kubelet->Dial("nvidia.com/mig-3g.20gb");
  ASSERT_TRUE(plugin.ok());
  allocator.error = FailedPreconditionError("no 3g.20gb reservation on this node");
  auto got = (*plugin)->Allocate({"3g.20gb-0"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(), "migsched: no 3g.20gb reservation on this node");

  allocator.error = Status();
  auto unknown = (*plugin)->Allocate({"3g.20gb-7"});  // only -0 and -1 exist
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown device '3g.20gb-7'"), std::string::npos);
  EXPECT_EQ(allocator.calls.size(), 1u);  // the unknown id never reached the allocator
}

TEST_F(DevicePluginTest, PreferredAllocationKeepsMustIncludeThenTheKubeletsOrder) {
  DevicePluginServer server(dir, MigResource{"1g.5gb", 7}, &allocator);
  ASSERT_TRUE(server.Start().ok());
  auto plugin = kubelet->Dial("nvidia.com/mig-1g.5gb");
  ASSERT_TRUE(plugin.ok());
  auto got = (*plugin)->PreferredAllocation({"1g.5gb-4", "1g.5gb-2", "1g.5gb-6"}, {"1g.5gb-2"}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (std::vector<std::string>{"1g.5gb-2", "1g.5gb-4"}));
  EXPECT_TRUE((*plugin)->PreStartContainer({"1g.5gb-2"}).ok());
}

TEST_F(DevicePluginTest, AResourceTheKubeletRefusesLeavesNothingServing) {
  DevicePluginServer server(dir, MigResource{"1g.10gb+me", 1}, &allocator);
  Status st = server.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("the ResourceName \"nvidia.com/mig-1g.10gb+me\" is invalid"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(server.serving());
  EXPECT_FALSE(std::filesystem::exists(server.socket_path()));
}

TEST(DevicePluginManagerTest, RegistersAgainAfterAKubeletRestart) {
  const std::string dir = ShortTempDir();
  RecordingAllocator allocator;
  DevicePluginManager manager(dir, {MigResource{"1g.5gb", 7}, MigResource{"7g.40gb", 1}},
                              &allocator);
  // No kubelet yet: the first start fails, saying so.
  Status st = manager.Start(std::chrono::hours(1));  // checks only when told (CheckOnce)
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(manager.registrations().empty());

  {
    auto kubelet = TestKubelet::Start(dir);
    ASSERT_TRUE(kubelet.ok());
    manager.CheckOnce();
    ASSERT_TRUE((*kubelet)->WaitForRegistration("nvidia.com/mig-1g.5gb", 5s).ok());
    ASSERT_TRUE((*kubelet)->WaitForRegistration("nvidia.com/mig-7g.40gb", 5s).ok());
    manager.CheckOnce();  // nothing changed: no second registration
    EXPECT_EQ((*kubelet)->registrations().size(), 2u);
  }
  // The kubelet restarts: it removes every socket of the dir, then serves a new kubelet.sock.
  for (const auto& e : std::filesystem::directory_iterator(dir)) std::filesystem::remove(e.path());
  auto kubelet = TestKubelet::Start(dir);
  ASSERT_TRUE(kubelet.ok());
  manager.CheckOnce();
  ASSERT_TRUE((*kubelet)->WaitForRegistration("nvidia.com/mig-1g.5gb", 5s).ok());
  ASSERT_TRUE((*kubelet)->WaitForRegistration("nvidia.com/mig-7g.40gb", 5s).ok());
  EXPECT_EQ(manager.registrations(), (std::map<std::string, int>{{"nvidia.com/mig-1g.5gb", 2},
                                                                 {"nvidia.com/mig-7g.40gb", 2}}));
  // The new kubelet talks to the re-served plugin.
  auto plugin = (*kubelet)->Dial("nvidia.com/mig-7g.40gb");
  ASSERT_TRUE(plugin.ok());
  auto list = (*plugin)->NextDeviceList(5s);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<ListedDevice>{{"7g.40gb-0", "Healthy"}}));
  manager.Stop();
}

}  // namespace
}  // namespace migsched::k8s
