#include "k8s/migration/evictor.h"

#include <spdlog/spdlog.h>

#include "core/text.h"
#include "k8s/extender/extender.h"

namespace migsched::k8s {

namespace {
bool AnnotationTrue(const PodInfo& pod, const char* key) {
  auto it = pod.annotations.find(key);
  return it != pod.annotations.end() && it->second == "true";
}
}  // namespace

Status MayMigrate(const PodInfo& pod) {
  if (AnnotationTrue(pod, kLatencySensitiveAnnotation)) {
    return FailedPreconditionError(pod.key() + " is latency-sensitive (" +
                                   kLatencySensitiveAnnotation + "): it never moves");
  }
  if (!AnnotationTrue(pod, kMigratableAnnotation)) {
    return FailedPreconditionError(pod.key() + " is not annotated " +
                                   std::string(kMigratableAnnotation) + ": \"true\"");
  }
  if (pod.controller_kind.empty()) {
    return FailedPreconditionError(pod.key() +
                                   " has no controller that would recreate it after an eviction");
  }
  return Status::Ok();
}

Evictor::Evictor(KubeClient* api, double retry_after_s)
    : api_(api), retry_after_s_(retry_after_s) {}

StatusOr<Evictor::Result> Evictor::Evict(const PodInfo& pod, double now) {
  if (Status st = MayMigrate(pod); !st.ok()) return st;
  if (auto it = not_before_.find(pod.uid); it != not_before_.end() && now < it->second) {
    return Result{Outcome::kWaiting,
                  "a disruption budget refused the eviction of " + pod.key() + "; next try in " +
                      std::to_string(static_cast<int>(it->second - now + 0.5)) + " s"};
  }
  std::string message;
  double retry_after = -1;
  auto e = api_->Evict(pod.ns, pod.name, pod.uid, &message, &retry_after);
  if (!e.ok()) return e.status();
  switch (*e) {
    case KubeClient::Eviction::kEvicted:
      not_before_.erase(pod.uid);
      spdlog::info("evicted {} to migrate it", OneLine(pod.key()));
      return Result{Outcome::kEvicted, "evicted " + pod.key() + " to migrate it"};
    case KubeClient::Eviction::kBlockedByBudget:
      not_before_[pod.uid] = now + (retry_after >= 0 ? retry_after : retry_after_s_);
      return Result{Outcome::kWaiting, "eviction of " + pod.key() + " waits: " + message};
    case KubeClient::Eviction::kGone:
      not_before_.erase(pod.uid);
      return Result{Outcome::kGone, pod.key() + " is gone already"};
  }
  return InternalError("unknown eviction outcome");
}

}  // namespace migsched::k8s
