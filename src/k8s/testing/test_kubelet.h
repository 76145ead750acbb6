// A stand-in for the kubelet's device manager, for tests and the one-machine
// end-to-end run (no kubelet can be installed here, docs/kubernetes.md): a real
// gRPC server of the Registration service on <dir>/kubelet.sock, and a client
// that dials a registered plugin's socket the way the kubelet does and calls
// GetDevicePluginOptions, ListAndWatch, GetPreferredAllocation, Allocate and
// PreStartContainer over that unix-socket channel.
//
// Register is checked as the kubelet checks it (pkg/kubelet/cm/devicemanager):
// the version must be "v1beta1", the resource name an extended resource name
// (a DNS-subdomain prefix other than kubernetes.io, a '/', a qualified name),
// and the endpoint a plain file name; a refused registration gets the gRPC
// error the plugin would get. What the real kubelet does beyond that (admission,
// checkpoints, device accounting) is not modelled.
//
// Thread-safety: all methods may be called from any thread.
#ifndef MIGSCHED_K8S_TESTING_TEST_KUBELET_H_
#define MIGSCHED_K8S_TESTING_TEST_KUBELET_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/device_plugin/device_plugin.h"

namespace migsched::k8s {

struct Registration {
  std::string version;
  std::string endpoint;
  std::string resource_name;
  bool pre_start_required = false;
  bool get_preferred_allocation_available = false;
};

struct ListedDevice {
  std::string id;
  std::string health;
  bool operator==(const ListedDevice&) const = default;
};

class TestKubelet {
 public:
  // Serves <dir>/kubelet.sock; kUnavailable if it cannot.
  static StatusOr<std::unique_ptr<TestKubelet>> Start(const std::string& dir);
  ~TestKubelet();  // stops serving and removes kubelet.sock

  // Accepted registrations, in order.
  std::vector<Registration> registrations() const;
  // Waits until `resource_name` has registered (at least `count` times in all);
  // kUnavailable on timeout.
  StatusOr<Registration> WaitForRegistration(const std::string& resource_name,
                                             std::chrono::milliseconds timeout, int count = 1);
  const std::string& dir() const;

  // A kubelet-side connection to one registered plugin.
  class Plugin {
   public:
    ~Plugin();
    StatusOr<Registration> Options();  // GetDevicePluginOptions (only the options set)
    // Opens ListAndWatch (once) and returns the next device list it sends;
    // kUnavailable if none comes within `timeout`.
    StatusOr<std::vector<ListedDevice>> NextDeviceList(std::chrono::milliseconds timeout);
    // Allocate for one container; the gRPC error comes back as a Status whose
    // message is the plugin's.
    StatusOr<ContainerDevices> Allocate(const std::vector<std::string>& device_ids);
    // Allocate for several containers in one request.
    StatusOr<std::vector<ContainerDevices>> AllocateMany(
        const std::vector<std::vector<std::string>>& containers);
    StatusOr<std::vector<std::string>> PreferredAllocation(
        const std::vector<std::string>& available, const std::vector<std::string>& must_include,
        int size);
    Status PreStartContainer(const std::vector<std::string>& device_ids);

   private:
    friend class TestKubelet;
    struct Impl;
    explicit Plugin(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
  };
  // Dials <dir>/<endpoint> of the latest registration of `resource_name`.
  StatusOr<std::unique_ptr<Plugin>> Dial(const std::string& resource_name);

 private:
  struct Impl;
  explicit TestKubelet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The kubelet's check of a resource name (v1helper.IsExtendedResourceName):
// empty when valid, else the reason.
std::string ExtendedResourceNameError(const std::string& name);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_TESTING_TEST_KUBELET_H_
