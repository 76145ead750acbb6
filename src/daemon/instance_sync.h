// InstanceSync: keeps the MIG instances on the hardware (the MigBackend)
// in step with the model (NodeModel's Cluster). The scheduler applies a plan
// to the model at once; InstanceSync carries out its kCreate/kDestroy steps
// on the backend afterwards, on a thread of its own, so that a backend call
// (NVML can take seconds) never runs under the daemon's state lock.
//
// * Plans are carried out in the order they were queued (Execute), one
//   backend call at a time; steps already true on the backend are skipped
//   (creates of an instance that is there, destroys of one that is not), so
//   recovery can replay them.
// * A plan stops at its first failed step. Then the plans still queued that
//   touch the same GPUs were planned on a model that assumed the failed step
//   succeeded: they are not attempted (their callbacks get kAborted-like
//   kUnavailable "not attempted: ..." and are not the job's fault), and the
//   GPUs are resynced at once, before any later plan.
// * Resync(GPU): the backend's list is the truth. Idle model instances the
//   backend lacks leave the model; backend instances the model lacks (a
//   destroy that answered "in use", an instance made by someone else) are put
//   in the model held by a placeholder (Holder::kPlaceholder, one per
//   instance, never two) and destroyed with back-off (50 ms doubling to 5 s);
//   when the destroy succeeds, or the instance goes by itself, the
//   placeholder is released and the instance leaves the model. A busy model
//   instance the backend lacks is reported (the job goes on; its owner
//   learns it from the log and the node view).
// * A GPU the backend cannot list (kUnavailable) is drained as unreachable
//   (NodeModel::DrainReason::kUnreachable) until a resync lists it again;
//   resyncs also run every `resync_interval_s`, and every `unreachable_probe_s`
//   for the unreachable GPUs alone (so a GPU back from a reset takes work again soon). A GPU that
//   needs a reset (kNeedsReset) is such a GPU: the drain's reason carries the operator's command.
// * The backend's list is re-read after every failed change, so a doubtful answer
//   (a create whose compute instance failed, a destroy that said success and left
//   the instance) never leaves the model holding an instance the GPU lacks. A GPU
//   instance without a compute instance is not an instance the model can hand out:
//   it is treated as an unwanted instance (held by a placeholder and destroyed).
// * A GPU whose changes fail `refusing_after` times in a row (creates or destroys,
//   retries of pending destroys included) "keeps refusing": logged once as an error,
//   shown by refusing() (the daemon's /healthz and metrics), cleared by the next
//   change that succeeds.
// * Every backend change is timed (clock_) into DaemonCounters::reconfig_seconds,
//   pending destroys' retries included. This thread is the only caller of the
//   backend's changes, so they reach the backend one at a time.
// * PCIe throughput is sampled here (once a second per GPU when asked for)
//   and cached for the views.
//
// Locks: the daemon's state lock (passed in; state_lock.h) guards the model
// and the members marked MIGSCHED_GUARDED_BY(kStateLock) below; InstanceSync
// takes it around its own model changes and callbacks and never holds it
// during a backend call. `queue_mu_` guards the queue (lock order: state
// lock, then queue_mu_).
//
// Thread-safety: as above; the methods marked MIGSCHED_REQUIRES(kStateLock)
// require the state lock held by the caller.
#ifndef MIGSCHED_DAEMON_INSTANCE_SYNC_H_
#define MIGSCHED_DAEMON_INSTANCE_SYNC_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/plan.h"
#include "daemon/metrics.h"
#include "daemon/mig_backend.h"
#include "daemon/node_model.h"
#include "daemon/state_lock.h"

namespace migsched {

class InstanceSync {
 public:
  using Done = std::function<void(const Status&)>;

  struct Options {
    double first_backoff_s = 0.05;   // destroy retries: 50 ms doubling ...
    double max_backoff_s = 5.0;      // ... up to 5 s
    double resync_interval_s = 30;   // every GPU is listed again this often; 0: never
    double pcie_interval_s = 1;      // PCIe samples per GPU when wanted
    int refusing_after = 5;          // failed changes in a row before a GPU "keeps refusing"
    double unreachable_probe_s = 1;  // unreachable GPUs are listed again this often
  };

  // Nothing is owned but the thread; all must outlive the sync.
  InstanceSync(MigBackend* backend, NodeModel* model, StateMutex* state_mu, Clock* clock,
               DaemonCounters* counters, Options options);
  ~InstanceSync();  // Stop()s
  InstanceSync(const InstanceSync&) = delete;
  InstanceSync& operator=(const InstanceSync&) = delete;

  void Start();
  // Ends the thread after the plan it is carrying out; queued plans are
  // dropped (the model keeps them; a restart resyncs with the hardware).
  void Stop();
  // Wakes the thread when something it carries out is done (the daemon's tick).
  void SetOnProgress(std::function<void()> f) { on_progress_ = std::move(f); }

  // ---- the state lock held ----

  // What the backend has at (cluster GPU, start), or nullptr.
  const BackendInstance* Live(int gpu, int start) const MIGSCHED_REQUIRES(kStateLock);
  // Records an instance the backend has (found at start-up).
  void Record(int gpu, const BackendInstance& in) MIGSCHED_REQUIRES(kStateLock);
  // Queues the backend side of `plan` (already applied to the model) after
  // everything queued before; `done` (may be empty) is then called, with the
  // state lock held (a lambda marked MIGSCHED_REQUIRES(kStateLock)), with OK
  // or the first failure (the step named).
  void Execute(Plan plan, Done done) MIGSCHED_REQUIRES(kStateLock);
  // Asks for a resync of `gpu` (done by the thread).
  void RequestResync(int gpu) MIGSCHED_REQUIRES(kStateLock);
  // Pending destroys (backend instances held by placeholders), and whether
  // anything is queued or being carried out.
  size_t pending_destroys() const MIGSCHED_REQUIRES(kStateLock) { return pending_.size(); }
  bool idle() const MIGSCHED_REQUIRES(kStateLock);
  // The latest PCIe sample of `gpu`, or nullopt (not measured). Asking
  // turns sampling on.
  std::optional<PcieThroughput> Pcie(int gpu) MIGSCHED_REQUIRES(kStateLock);
  // Why cluster GPU `gpu` keeps refusing changes (the last error), or "" when it does not.
  std::string refusing(int gpu) const MIGSCHED_REQUIRES(kStateLock);

  // ---- start-up, before Start(), without the state lock ----

  // Carries out `plan` on the backend now. Used by recovery.
  Status ExecuteNow(const Plan& plan) MIGSCHED_EXCLUDES(kStateLock);
  // Resyncs every GPU now.
  void ResyncAllNow() MIGSCHED_EXCLUDES(kStateLock);

 private:
  struct Item {
    Plan plan;
    Done done;
    bool aborted = false;
    Status abort_reason;
  };
  struct PendingDestroy {
    int gpu = 0;  // cluster index
    int start = 0;
    JobId placeholder = kNoJob;  // kNoJob: not in the model (unknown profile)
    double next_try_s = 0;       // clock seconds
    double backoff_s = 0;
    int attempts = 0;
  };

  void Run() MIGSCHED_EXCLUDES(kStateLock);
  // Carries out one item (no lock held on entry).
  void RunItem(Item item) MIGSCHED_EXCLUDES(kStateLock);
  // The backend call of one step, with the idempotence checks (no lock held).
  Status RunStep(const Step& step) MIGSCHED_EXCLUDES(kStateLock);
  // Lists `gpu` on the backend and makes the model match (no lock held).
  void Resync(int gpu) MIGSCHED_EXCLUDES(kStateLock);
  // The model side of Resync, given the backend's answer.
  void Reconcile(int gpu, const StatusOr<std::vector<BackendInstance>>& listed)
      MIGSCHED_REQUIRES(kStateLock);
  void RetryDueDestroys() MIGSCHED_EXCLUDES(kStateLock);
  // Counts a backend change's outcome on cluster GPU `gpu` (refusing()).
  void NoteChange(int gpu, const Status& st) MIGSCHED_REQUIRES(kStateLock);
  void SamplePcie() MIGSCHED_EXCLUDES(kStateLock);
  double Now() const { return static_cast<double>(clock_->NowNanos()) / 1e9; }

  MigBackend* backend_;
  NodeModel* model_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  StateMutex* state_mu_;
  Clock* clock_;
  DaemonCounters* counters_;
  Options options_;
  std::function<void()> on_progress_;

  // (cluster GPU, start) -> instance
  std::map<std::pair<int, int>, BackendInstance> live_ MIGSCHED_GUARDED_BY(kStateLock);
  std::vector<PendingDestroy> pending_ MIGSCHED_GUARDED_BY(kStateLock);
  JobId next_placeholder_ MIGSCHED_GUARDED_BY(kStateLock) = 1;
  // Busy model instances reported lost.
  std::set<std::pair<int, int>> reported_missing_ MIGSCHED_GUARDED_BY(kStateLock);
  std::map<int, PcieThroughput> pcie_ MIGSCHED_GUARDED_BY(kStateLock);
  struct Refusals {
    int in_a_row = 0;
    std::string last;
    bool reported = false;
  };
  // Cluster GPU -> its failed changes in a row.
  std::map<int, Refusals> refusals_ MIGSCHED_GUARDED_BY(kStateLock);
  bool pcie_wanted_ MIGSCHED_GUARDED_BY(kStateLock) = false;

  // queue_mu_
  mutable std::mutex queue_mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::set<int> resync_;
  bool busy_ = false;  // an item is being carried out
  bool stop_ = false;

  std::thread thread_;  // the executor
  double next_resync_s_ = 0;
  double next_probe_s_ = 0;
  double next_pcie_s_ = 0;
};

// Instance `ref` of the model as the API shows it (NVML index,
// profile, start, size), with the MIG UUID and GI/CI ids of the backend's
// instance there when it is of that profile (empty / 0 until it exists).
JobInstance DescribeInstance(const NodeModel& model, const InstanceSync& sync,
                             const InstanceRef& ref) MIGSCHED_REQUIRES(kStateLock);
// The instances job or allocation `id` holds in the scheduler, so described
// (empty if none).
std::vector<JobInstance> DescribeInstancesOf(const NodeModel& model, const InstanceSync& sync,
                                             DaemonJobId id) MIGSCHED_REQUIRES(kStateLock);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_INSTANCE_SYNC_H_
