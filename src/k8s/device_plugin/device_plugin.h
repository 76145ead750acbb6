// The node agent's side of the kubelet device plugin API (deviceplugin/v1beta1,
// src/k8s/proto/deviceplugin/v1beta1/api.proto): one gRPC server on its own unix
// socket per MIG resource ("nvidia.com/mig-<profile>"), registered with the
// kubelet, serving ListAndWatch, Allocate, GetPreferredAllocation,
// GetDevicePluginOptions and PreStartContainer.
//
// The devices are not instances: they are interchangeable tokens, "<profile>-<i>",
// as many as the node's GPUs can hold of the profile at once (the count the
// kubelet shows as the node's capacity). Which instance a container gets is the
// scheduler extender's decision, reserved on the node daemon before the pod is
// bound; Allocate only turns that reservation into an instance (DeviceAllocator).
// docs/kubernetes.md has the whole flow.
//
// Thread-safety: every public method may be called from any thread. The gRPC
// threads call the DeviceAllocator concurrently, for different containers.
#ifndef MIGSCHED_K8S_DEVICE_PLUGIN_DEVICE_PLUGIN_H_
#define MIGSCHED_K8S_DEVICE_PLUGIN_DEVICE_PLUGIN_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace migsched::k8s {

// Constants of the kubelet's device manager (k8s.io/kubelet deviceplugin/v1beta1
// constants.go).
inline constexpr char kDevicePluginApiVersion[] = "v1beta1";
inline constexpr char kDefaultDevicePluginDir[] = "/var/lib/kubelet/device-plugins";
inline constexpr char kKubeletSocketName[] = "kubelet.sock";
inline constexpr char kDeviceHealthy[] = "Healthy";
inline constexpr char kDeviceUnhealthy[] = "Unhealthy";

// The resource name prefix of the NVIDIA device plugin's "mixed" strategy, which
// migsched keeps so that pods written for it run unchanged.
inline constexpr char kMigResourcePrefix[] = "nvidia.com/mig-";

// What the container runtime must give one container (ContainerAllocateResponse).
struct ContainerDevices {
  std::map<std::string, std::string> envs;
  struct DeviceNode {
    std::string container_path;
    std::string host_path;
    std::string permissions = "rw";  // cgroup device permissions: r, w, m
    bool operator==(const DeviceNode&) const = default;
  };
  std::vector<DeviceNode> device_nodes;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;  // fully qualified CDI names
};

// The node side of Allocate. Implemented by the node agent (k8s/node_agent.h).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // One container asks for `device_ids` (as the kubelet sent them, one per
  // instance) of MIG profile `profile` (e.g. "3g.20gb"). Blocks until the
  // instances exist. The error's message reaches the pod's events: the kubelet
  // fails the pod with "UnexpectedAdmissionError: Allocate failed due to <message>".
  virtual StatusOr<ContainerDevices> Allocate(const std::string& profile,
                                              const std::vector<std::string>& device_ids) = 0;
};

// One resource the node agent serves.
struct MigResource {
  std::string profile;   // "3g.20gb" (a base profile: '+' is not allowed in a resource name)
  int device_count = 0;  // devices advertised: the most instances the node holds at once
  std::string resource_name() const { return kMigResourcePrefix + profile; }
  // Socket file name in the device plugin dir: "migsched-<profile>.sock".
  std::string endpoint() const { return "migsched-" + profile + ".sock"; }
  // Device ids "<profile>-0" .. "<profile>-<count-1>".
  std::vector<std::string> device_ids() const;
};

// Serves one MigResource on <dir>/<endpoint> and registers it with the kubelet
// at <dir>/kubelet.sock.
class DevicePluginServer {
 public:
  // `allocator` must outlive the server.
  DevicePluginServer(std::string dir, MigResource resource, DeviceAllocator* allocator);
  ~DevicePluginServer();  // Stop()
  DevicePluginServer(const DevicePluginServer&) = delete;
  DevicePluginServer& operator=(const DevicePluginServer&) = delete;

  // Removes a stale socket file, starts serving, then calls Register on the
  // kubelet (deadline `register_timeout`). kUnavailable when the socket cannot
  // be served or the kubelet cannot be reached; kFailedPrecondition when the
  // kubelet refuses the registration (its message is kept). On error nothing
  // is left serving. Calling Start on a started server restarts it.
  Status Start(std::chrono::milliseconds register_timeout = std::chrono::seconds(5));
  // Ends open ListAndWatch streams, stops serving, removes the socket file.
  void Stop();
  bool serving() const;

  // Marks every device Healthy or Unhealthy; open ListAndWatch streams get the
  // new list at once.
  void SetHealthy(bool healthy);
  const MigResource& resource() const;
  std::string socket_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Keeps a set of DevicePluginServers registered across kubelet restarts: the
// kubelet removes every socket in its dir when it starts, so a server whose
// socket vanished, or whose kubelet.sock is a new file, is started and
// registered again. A failed registration is retried at the next check.
class DevicePluginManager {
 public:
  DevicePluginManager(std::string dir, std::vector<MigResource> resources,
                      DeviceAllocator* allocator);
  ~DevicePluginManager();  // Stop()

  // Starts every server and a thread that checks every `interval`. Returns the
  // first registration error (the thread keeps retrying).
  Status Start(std::chrono::milliseconds interval = std::chrono::seconds(1));
  void Stop();
  // One check now (what the thread does every interval); for tests.
  void CheckOnce();
  void SetHealthy(bool healthy);
  // Times each resource was registered successfully, by resource name.
  std::map<std::string, int> registrations() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_DEVICE_PLUGIN_DEVICE_PLUGIN_H_
