// A NodeDaemons for tests: node views set by the test (cluster/testing/nodes.h),
// allocations recorded on them, answers chosen by the test. Not a node daemon:
// only what the hooks and the controller call is kept. An allocation made here
// puts its k-th instance on GPU k of the node at start 0 (added to the view if
// the node does not list it), as the hooks' tests need and no more: the
// instances are not checked against each other.
//
// Thread-safety: the calls may come from several threads at once (the
// controller reads its nodes in parallel); `mu_` guards every member during a
// call. A test reads and sets the members only while no call is running.
#ifndef MIGSCHED_CLUSTER_TESTING_FAKE_NODE_DAEMONS_H_
#define MIGSCHED_CLUSTER_TESTING_FAKE_NODE_DAEMONS_H_

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/node_daemons.h"
#include "nodeapi/job_record.h"

namespace migsched::testing {

class FakeNodeDaemons : public NodeDaemons {
 public:
  // Allocate on `node` fails with this status (OK: succeeds).
  std::map<std::string, Status> allocate_error;
  // Allocate with a reservation prefix fails with kFailedPrecondition on these nodes.
  std::map<std::string, bool> no_room;
  // The next this many Allocate calls on the node fail with kFailedPrecondition
  // (an instance still held by an ended job whose epilog has not run yet).
  std::map<std::string, int> busy_for;
  // Reserve on `node` fails with this status (OK: succeeds), e.g. a ttl above the daemon's
  // reservation_max_ttl_s.
  std::map<std::string, Status> reserve_error;
  std::map<std::string, NodeView> states;
  std::vector<std::string> calls;  // "allocate n1 slurm:3 prefix=slurm-room:", "release n1 7", ...

  StatusOr<NodeView> State(const std::string& node) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back("state " + node);
    auto it = states.find(node);
    if (it == states.end()) return UnavailableError(node + ": connection refused");
    return it->second;
  }
  Status Reserve(const std::string& node, const std::string& key, const std::vector<PlacementRef>&,
                 double ttl_s, bool anchors) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(
        fmt::format("reserve {} {} ttl={}{}", node, key, ttl_s, anchors ? " anchors" : ""));
    if (auto it = reserve_error.find(node); it != reserve_error.end()) return it->second;
    return Status::Ok();
  }
  Status Unreserve(const std::string& node, const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(fmt::format("unreserve {} {}", node, key));
    return Status::Ok();
  }
  StatusOr<DaemonJobRecord> Allocate(const std::string& node, const BindRequest& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(fmt::format("allocate {} {} prefix={}{}", node, r.owner, r.reservation_prefix,
                                r.anchors ? " anchors" : ""));
    if (auto it = allocate_error.find(node); it != allocate_error.end() && !it->second.ok()) {
      return it->second;
    }
    if (auto it = busy_for.find(node); it != busy_for.end() && it->second > 0) {
      --it->second;
      return FailedPreconditionError("no room for the profile now");
    }
    if (!r.reservation_prefix.empty() && no_room.count(node)) {
      return FailedPreconditionError("no reservation of the profile under " + r.reservation_prefix);
    }
    DaemonJobRecord a = NewJobRecord(++next_id_, JobKind::kAllocation, 0);
    a.allocation.owner = r.owner;
    RETURN_IF_ERROR(TransitionJob(a, JobState::kRunning, 0));
    NodeView& view = states[node];
    int gpu = 0;
    for (const ProfileCount& p : r.instances) {
      for (int i = 0; i < p.count; ++i, ++gpu) {
        JobInstance in;
        in.gpu = NvmlIndex::Of(gpu);
        in.profile = p.profile;
        in.mig_uuid = fmt::format("MIG-{}-{}", node, a.id * 10 + gpu);
        a.instances.push_back(in);
        auto g = std::find_if(view.gpus.begin(), view.gpus.end(),
                              [&](const GpuView& v) { return v.index == in.gpu; });
        if (g == view.gpus.end()) {
          g = view.gpus.insert(view.gpus.end(), GpuView{});
          g->index = in.gpu;
          g->uuid = "GPU-x";
          g->model = "A100 40GB";
        }
        InstanceView& shown = g->instances.emplace_back();
        shown.profile = p.profile;
        shown.mig_uuid = in.mig_uuid;
        shown.busy = true;
        shown.holder = HolderKind::kAllocation;
        shown.job = a.id;
        shown.owner = r.owner;
      }
    }
    return a;
  }
  Status Release(const std::string& node, int64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(fmt::format("release {} {}", node, id));
    for (GpuView& g : states[node].gpus) {
      std::erase_if(g.instances, [&](const InstanceView& in) {
        return in.holder == HolderKind::kAllocation && in.job == id;
      });
    }
    return Status::Ok();
  }

 private:
  // A fresh mutex per copy: tests build a fake and return it by value.
  struct Mutex : std::mutex {
    Mutex() = default;
    Mutex(const Mutex&) {}
    Mutex(Mutex&&) {}
    Mutex& operator=(const Mutex&) { return *this; }
    Mutex& operator=(Mutex&&) { return *this; }
  };
  Mutex mu_;
  int64_t next_id_ = 0;
};

}  // namespace migsched::testing

#endif  // MIGSCHED_CLUSTER_TESTING_FAKE_NODE_DAEMONS_H_
