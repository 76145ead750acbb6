// Test helpers: node states written compactly.
//   MakeNode("n1", 2, "A100 40GB", {"0:3g.20gb@4=alloc:slurm:7", "1:1g.5gb@0=idle"})
// An instance is "GPU:PROFILE@START=KIND[:OWNER]" with KIND one of idle, job,
// alloc, resv, placeholder; a reservation of one placement is added with
// AddReservation.
#ifndef MIGSCHED_CLUSTER_TESTING_NODES_H_
#define MIGSCHED_CLUSTER_TESTING_NODES_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/node_state.h"

namespace migsched::testing {

inline NodeInstance ParseInstance(const std::string& s) {
  NodeInstance in;
  const size_t colon = s.find(':');
  const size_t at = s.find('@');
  const size_t eq = s.find('=');
  EXPECT_TRUE(colon != std::string::npos && at != std::string::npos && eq != std::string::npos)
      << s;
  in.gpu = std::stoi(s.substr(0, colon));
  in.profile = s.substr(colon + 1, at - colon - 1);
  in.start = std::stoi(s.substr(at + 1, eq - at - 1));
  const std::string rest = s.substr(eq + 1);
  const size_t c2 = rest.find(':');
  const std::string kind = rest.substr(0, c2);
  in.owner = c2 == std::string::npos ? "" : rest.substr(c2 + 1);
  if (kind == "idle") {
    in.holder = HolderKind::kIdle;
  } else if (kind == "job") {
    in.holder = HolderKind::kJob;
  } else if (kind == "alloc") {
    in.holder = HolderKind::kAllocation;
  } else if (kind == "resv") {
    in.holder = HolderKind::kReservation;
  } else if (kind == "placeholder") {
    in.holder = HolderKind::kPlaceholder;
  } else {
    ADD_FAILURE() << "unknown holder kind in " << s;
  }
  in.mig_uuid = "MIG-" + s;
  return in;
}

inline NodeState MakeNode(const std::string& name, int gpus, const std::string& model,
                          const std::vector<std::string>& instances) {
  NodeState n;
  n.node = name;
  n.generation = 1;
  for (int i = 0; i < gpus; ++i) {
    n.gpus.push_back({i, "GPU-" + name + "-" + std::to_string(i), model, false});
  }
  for (const std::string& s : instances) n.instances.push_back(ParseInstance(s));
  n.policy = "full";
  return n;
}

inline void AddReservation(NodeState* n, const std::string& key, int gpu,
                           const std::string& profile, int start, double expires = 1e12) {
  n->reservations.push_back(
      {.owner = key, .placements = {{gpu, profile, start}}, .expires_at = expires});
}

}  // namespace migsched::testing

#endif  // MIGSCHED_CLUSTER_TESTING_NODES_H_
