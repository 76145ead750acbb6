// Test helpers: node views (the node API's NodeView) written compactly.
//   MakeNode("n1", 2, "A100 40GB", {"0:3g.20gb@4=alloc:slurm:7", "1:1g.5gb@0=idle"})
// An instance is "GPU:PROFILE@START=KIND[#ID][:OWNER]" with KIND one of idle,
// job, alloc, resv, placeholder. A job's OWNER is its id ("job:3"); an
// allocation's id is ID, or one per owner key from 1 when ID is left out
// ("alloc#11:slurm:1"). A reservation of one placement is added with
// AddReservation.
#ifndef MIGSCHED_CLUSTER_TESTING_NODES_H_
#define MIGSCHED_CLUSTER_TESTING_NODES_H_

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "nodeapi/api_types.h"

namespace migsched::testing {

// A GPU of the node named `node`: NVML index `index`, UUID "GPU-<node>-<index>".
inline GpuView MakeGpu(const std::string& node, int index, const std::string& model) {
  GpuView g;
  g.index = NvmlIndex::Of(index);
  g.uuid = "GPU-" + node + "-" + std::to_string(index);
  g.model = model;
  return g;
}

// Adds the instance `spec` (the form above) to its GPU of `n`, which must list it.
inline void AddInstance(NodeView* n, const std::string& spec) {
  const size_t colon = spec.find(':');
  const size_t at = spec.find('@');
  const size_t eq = spec.find('=');
  if (colon == std::string::npos || at == std::string::npos || eq == std::string::npos) {
    ADD_FAILURE() << "not GPU:PROFILE@START=KIND: " << spec;
    return;
  }
  const int gpu = std::stoi(spec.substr(0, colon));
  InstanceView in;
  in.profile = spec.substr(colon + 1, at - colon - 1);
  in.start = std::stoi(spec.substr(at + 1, eq - at - 1));
  in.mig_uuid = "MIG-" + spec;
  const std::string rest = spec.substr(eq + 1);
  const size_t c2 = rest.find(':');
  std::string kind = rest.substr(0, c2);
  const std::string owner = c2 == std::string::npos ? "" : rest.substr(c2 + 1);
  int64_t id = 0;
  if (const size_t hash = kind.find('#'); hash != std::string::npos) {
    id = std::stoll(kind.substr(hash + 1));
    kind = kind.substr(0, hash);
  }
  in.busy = kind != "idle";
  if (kind == "idle") {
    in.holder = HolderKind::kIdle;
  } else if (kind == "job") {
    in.holder = HolderKind::kJob;
    in.job = std::stoll(owner);
  } else if (kind == "alloc") {
    in.holder = HolderKind::kAllocation;
    in.owner = owner;
    if (id == 0) {  // one id per owner key on the node
      std::map<std::string, int64_t> ids;
      for (const GpuView& g : n->gpus) {
        for (const InstanceView& o : g.instances) {
          if (o.holder == HolderKind::kAllocation) ids.emplace(o.owner, o.job);
        }
      }
      id = ids.count(owner) ? ids[owner] : static_cast<int64_t>(ids.size()) + 1;
    }
    in.job = id;
  } else if (kind == "resv") {
    in.holder = HolderKind::kReservation;
    in.owner = owner;
  } else if (kind == "placeholder") {
    in.holder = HolderKind::kPlaceholder;
    in.owner = owner;
  } else {
    ADD_FAILURE() << "unknown holder kind in " << spec;
    return;
  }
  for (GpuView& g : n->gpus) {
    if (g.index == NvmlIndex::Of(gpu)) {
      g.instances.push_back(std::move(in));
      return;
    }
  }
  ADD_FAILURE() << "the node lists no GPU " << gpu << ": " << spec;
}

// A node with GPUs 0..gpus-1 of `model` and the instances listed.
inline NodeView MakeNode(const std::string& name, int gpus, const std::string& model,
                         const std::vector<std::string>& instances) {
  NodeView n;
  n.name = name;
  n.generation = 1;
  for (int i = 0; i < gpus; ++i) n.gpus.push_back(MakeGpu(name, i, model));
  for (const std::string& s : instances) AddInstance(&n, s);
  n.policy = "full";
  return n;
}

// A reservation as a node's view shows it: its record alone.
inline ReservationView Reserved(ReservationRecord r) {
  ReservationView v;
  v.record = std::move(r);
  return v;
}

inline void AddReservation(NodeView* n, const std::string& key, int gpu, const std::string& profile,
                           int start, double expires = 1e12) {
  n->reservations.push_back(Reserved(
      {.owner = key, .placements = {{NvmlIndex::Of(gpu), profile, start}}, .expires_at = expires}));
}

}  // namespace migsched::testing

#endif  // MIGSCHED_CLUSTER_TESTING_NODES_H_
