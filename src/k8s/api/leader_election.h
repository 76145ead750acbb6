// Leader election through a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection package does it, so that several extender replicas can run
// and exactly one of them writes (binds, reclaims, evicts):
//
//   GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}
//   POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases         (when there is none)
//   PUT  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}  (renew or take over,
//        with the metadata.resourceVersion read: a concurrent writer makes it a 409)
//
// A round (TryAcquireOrRenew) takes the lease when nobody holds it, when this
// replica holds it (a renewal), or when its holder has not renewed it for
// lease_duration_s as observed by this replica's own clock (the time the
// record last changed here, not the holder's renewTime, so clock skew between
// nodes does not matter). Leadership ends when a renewal has not succeeded for
// renew_deadline_s (< lease_duration_s, so the old leader stops before another
// replica may take over), when another holder is seen, or on Release (at
// shutdown, so that another replica takes over at once).
//
// Times are seconds of a clock the caller passes in (steady in production,
// simulated in tests); the Lease's acquireTime/renewTime are written from the
// wall clock for people reading it.
//
// Thread-safety: TryAcquireOrRenew and Release from one thread (the election
// loop); IsLeader and NotLeaderReason from any thread (`mu_` guards the state).
#ifndef MIGSCHED_K8S_API_LEADER_ELECTION_H_
#define MIGSCHED_K8S_API_LEADER_ELECTION_H_

#include <mutex>
#include <string>

#include "core/status.h"
#include "k8s/api/kube_client.h"

namespace migsched::k8s {

struct LeaseOptions {
  std::string lease_namespace = "migsched-system";
  std::string lease_name = "migsched-extender";
  std::string identity;          // this replica, e.g. its pod name; must be unique
  double lease_duration_s = 15;  // how long a holder's silence keeps others out
  double renew_deadline_s = 10;  // the leader gives up after this long without renewal
  double retry_s = 2;            // the election loop's period
};

class LeaderElector {
 public:
  LeaderElector(KubeClient* api, LeaseOptions options);

  // One round at time `now_s`. Returns whether this replica leads after it;
  // an error of the API server (other than the 409 of a lost race) is
  // returned, and leadership lasts until renew_deadline_s after the last
  // successful renewal.
  StatusOr<bool> TryAcquireOrRenew(double now_s);
  // Gives the lease up if held (holderIdentity emptied); leadership ends now.
  Status Release();

  bool IsLeader(double now_s) const;
  // "" while leading at `now_s`, else why not, naming the holder.
  std::string NotLeaderReason(double now_s) const;
  const LeaseOptions& options() const { return options_; }

 private:
  std::string Path() const;
  // The Lease's spec for this replica, `transitions` its leaseTransitions.
  nlohmann::json Spec(int transitions, const std::string& acquire_time) const;

  KubeClient* const api_;
  const LeaseOptions options_;
  mutable std::mutex mu_;  // guards everything below
  bool leading_ = false;
  double renewed_at_ = 0;        // now_s of the last successful acquire/renew
  std::string observed_record_;  // holder + renewTime + resourceVersion last seen
  double observed_at_ = 0;       // now_s when observed_record_ last changed
  std::string holder_;           // the holder last seen ("" for none)
  std::string acquire_time_;     // this replica's acquireTime while it leads
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_API_LEADER_ELECTION_H_
