// The node parts that the service tests (JobService, NodeService) drive for
// real: a fake backend of one A100 40GB, its NodeModel and the InstanceSync
// thread, all under the test's own state lock `mu_`. A fixture derives from
// it, calls StartNode from its SetUp and builds its service on the members;
// StubServiceHost stands in for the daemon.
// Test-only; not thread-safe beyond what InstanceSync itself guards.
#ifndef MIGSCHED_DAEMON_FAKE_NODE_TEST_BASE_H_
#define MIGSCHED_DAEMON_FAKE_NODE_TEST_BASE_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "daemon/config.h"
#include "daemon/discovery.h"
#include "daemon/fake_backend.h"
#include "daemon/instance_sync.h"
#include "daemon/metrics.h"
#include "daemon/node_model.h"
#include "daemon/service_host.h"
#include "daemon/state_lock.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {

// The daemon's side of a service (Host: ServiceHost or one that extends
// it): every store write answers `store` at once, with the state lock still
// held, as the writer's callbacks run; `accepting` is what Accepting says.
template <class Host>
class StubServiceHost : public Host {
 public:
  Status Accepting() const override { return accepting; }
  void Persist(std::vector<StoreOp> ops, bool retry,
               std::function<void(const Status&)> then) override {
    (void)retry;
    writes += ops.size();
    if (then) then(store);
  }
  void Wake() override {}

  Status accepting;
  Status store;
  size_t writes = 0;  // store operations asked for
};

class FakeNodeTestBase : public ::testing::Test {
 protected:
  // Discovers the fake A100 40GB, builds the model with `policy` and
  // config_.scheduler, and starts the sync thread. Fails the test on error.
  void StartNode(const std::string& policy) {
    StatusOr<std::vector<const GpuModel*>> models =
        ParseClusterSpec("1xA100-40GB", testing::BundledCatalog());
    ASSERT_OK(models);
    backend_ = std::make_unique<FakeBackend>(*models);
    ASSERT_OK_AND_ASSIGN(NodeInventory inv,
                         DiscoverNode(backend_.get(), testing::BundledCatalog(), {}));
    ASSERT_OK_AND_ASSIGN(
        model_, NodeModel::Create(std::move(inv), policy, config_.scheduler, SteadyClock()));
    sync_ = std::make_unique<InstanceSync>(backend_.get(), model_.get(), &mu_, SteadyClock(),
                                           &counters_, InstanceSync::Options{});
    sync_->Start();
  }
  void TearDown() override {
    if (sync_) sync_->Stop();
  }

  DaemonConfig config_;
  StateMutex mu_;  // the daemon's state lock
  DaemonCounters counters_;
  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<NodeModel> model_;
  std::unique_ptr<InstanceSync> sync_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_FAKE_NODE_TEST_BASE_H_
