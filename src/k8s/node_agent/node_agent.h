// The node agent's side of Allocate (`migsched k8s node-agent`): the kubelet
// names only device tokens, so the agent finds the pod through its
// reservation on this node's daemon (the extender reserved it at bind, under
// "k8s:<pod uid>") and asks the daemon to bind it: the instance is created
// (or an idle one at that placement reused) and the allocation is durable
// before the kubelet gets the container's environment:
//
//   NVIDIA_VISIBLE_DEVICES = CUDA_VISIBLE_DEVICES = MIG-<uuid>[,MIG-<uuid>...]
//   MIGSCHED_ALLOCATION_ID = the daemon's allocation id
//   MIGSCHED_POD_KEY       = the reservation's owner key, k8s:<pod uid>
//
// plus the configured device nodes (default /dev/nvidiactl, /dev/nvidia-uvm,
// /dev/nvidia-uvm-tools; the NVIDIA container toolkit adds the GPU's and the
// MIG capability device nodes from NVIDIA_VISIBLE_DEVICES) and, with `cdi`,
// the CDI device nvidia.com/gpu=<MIG UUID> per instance.
//
// Which reservation: one of "k8s:" with at least as many unbound placements of
// the profile as the kubelet asks for; the extender keeps it to one per
// profile and node at a time (a bind waits while another is pending there).
// When there are several (a bind that did not wait, e.g. after its wait
// timed out), the one that expires first is taken and a warning is logged.
// A pod with several containers gets one Allocate per container: each binds
// its part of the pod's reservation.
//
// The device ids are tokens the kubelet reuses for later pods, so nothing is
// cached by them: a second Allocate of the same devices is a new container.
// The instances are released by the extender's reclaim loop once the pod is
// gone (k8s/engine/reclaimer.h): the kubelet tells a device plugin nothing
// when a pod ends.
//
// Thread-safety: Allocate may be called concurrently (the daemon serialises
// binds); `mu_` guards `tables_`.
#ifndef MIGSCHED_K8S_NODE_AGENT_NODE_AGENT_H_
#define MIGSCHED_K8S_NODE_AGENT_NODE_AGENT_H_

#include <mutex>
#include <string>
#include <vector>

#include "cluster/node_daemons.h"
#include "core/catalog.h"
#include "core/config_table.h"
#include "k8s/config.h"
#include "k8s/device_plugin/device_plugin.h"

namespace migsched::k8s {

class NodeAgent : public DeviceAllocator {
 public:
  // `daemon` (this node's daemon, as node `node`) and `catalog` must outlive the agent.
  NodeAgent(NodeDaemons* daemon, std::string node, const Catalog* catalog, NodeAgentConfig config);

  // One resource per base profile of the node's GPUs, with as many devices as
  // the GPUs hold of it at once (cluster/capacity.h). kUnavailable when the
  // daemon does not answer; kNotFound for a GPU model the catalog lacks.
  StatusOr<std::vector<MigResource>> Resources();

  StatusOr<ContainerDevices> Allocate(const std::string& profile,
                                      const std::vector<std::string>& device_ids) override;

  // Whether the daemon answers now.
  bool Healthy();

 private:
  NodeDaemons* const daemon_;
  const std::string node_;
  const Catalog* const catalog_;
  const NodeAgentConfig config_;
  std::mutex mu_;
  ConfigTableCache tables_;  // guarded by mu_
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_NODE_AGENT_NODE_AGENT_H_
