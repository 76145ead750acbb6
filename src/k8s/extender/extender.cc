#include "k8s/extender/extender.h"

#include <spdlog/spdlog.h>

#include "core/text.h"

namespace migsched::k8s {

using nlohmann::json;

namespace {
constexpr size_t kPodCacheSize = 10000;  // pods between a filter and their bind
}  // namespace

std::string PodOwnerKey(const std::string& uid) { return "k8s:" + uid; }

json PodReservation::ToJson() const {
  json instances_json = json::array();
  for (const auto& i : instances) {
    instances_json.push_back({{"container", i.container},
                              {"gpu", i.gpu},
                              {"gpu_uuid", i.gpu_uuid},
                              {"profile", i.profile},
                              {"start", i.start},
                              {"size", i.size}});
  }
  return {{"node", node}, {"reservation", key}, {"instances", instances_json}};
}

StatusOr<PodReservation> PodReservation::FromJson(const json& j) {
  try {
    PodReservation r;
    r.node = j.at("node").get<std::string>();
    r.key = j.at("reservation").get<std::string>();
    for (const auto& i : j.at("instances")) {
      r.instances.push_back({{i.at("gpu").get<NvmlIndex>(), i.at("profile").get<std::string>(),
                              i.at("start").get<int>()},
                             i.at("container").get<std::string>(),
                             i.value("gpu_uuid", std::string()),
                             i.at("size").get<int>()});
    }
    return r;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string(kPlacementAnnotation) + ": " + e.what());
  }
}

Extender::Extender(PlacementEngine* engine, KubeClient* api) : engine_(engine), api_(api) {}

void Extender::Remember(const PodInfo& pod) {
  if (pod.uid.empty()) return;
  std::lock_guard lock(mu_);
  if (cache_.insert_or_assign(pod.uid, pod).second) order_.push_back(pod.uid);
  while (order_.size() > kPodCacheSize) {
    cache_.erase(order_.front());
    order_.pop_front();
  }
}

Extender::Counters Extender::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

namespace {

// The reason every node gets for a pod migsched does not place at all.
std::string InitContainerReason(const PodInfo& pod) {
  std::string names;
  for (const auto& n : pod.init_containers_with_mig)
    names += (names.empty() ? "'" : ", '") + n + "'";
  return "migsched places MIG instances for containers only, not for init containers (" + names +
         " of " + pod.key() + ")";
}

}  // namespace

Extender::Answer Extender::Filter(std::string_view body) {
  auto args = ParseExtenderArgs(body);
  {
    std::lock_guard lock(mu_);
    ++counters_.filter;
    if (!args.ok()) ++counters_.bad_requests;
  }
  if (!args.ok()) {
    spdlog::warn("filter: {}", OneLine(args.status().message()));
    return {200, FilterErrorJson("migsched: " + args.status().message()).dump()};
  }
  FilterOutcome outcome;
  const PodInfo& pod = args->pod;
  if (!pod.has_mig()) {
    outcome.passed = args->node_names;
  } else if (!pod.init_containers_with_mig.empty()) {
    const std::string why = InitContainerReason(pod);
    for (const auto& n : args->node_names) outcome.unresolvable[n] = why;
  } else if (!pod.bad_annotations.empty()) {
    // An on/off annotation it cannot read: refused with what is wrong, never taken as false.
    const std::string why = pod.key() + ": " + pod.bad_annotations.front();
    for (const auto& n : args->node_names) outcome.unresolvable[n] = why;
  } else {
    Remember(pod);
    const auto verdicts = engine_->Filter(pod, args->node_names);
    for (size_t i = 0; i < args->node_names.size(); ++i) {
      const std::string& n = args->node_names[i];
      if (i < verdicts.size() && verdicts[i].fits) {
        outcome.passed.push_back(n);
      } else {
        outcome.unresolvable[n] = i < verdicts.size() ? verdicts[i].reason : "no verdict";
      }
    }
    spdlog::debug("filter {}: {} of {} nodes fit", OneLine(pod.key()), outcome.passed.size(),
                  args->node_names.size());
  }
  return {200, FilterResultJson(outcome, *args).dump()};
}

Extender::Answer Extender::Prioritize(std::string_view body) {
  auto args = ParseExtenderArgs(body);
  {
    std::lock_guard lock(mu_);
    ++counters_.prioritize;
    if (!args.ok()) ++counters_.bad_requests;
  }
  std::vector<HostScore> scores;
  if (!args.ok()) {
    // HostPriorityList has no error field; kube-scheduler ignores a failed
    // prioritize, so an empty list (no opinion) is the clear answer.
    spdlog::warn("prioritize: {}", OneLine(args.status().message()));
    return {200, HostPriorityListJson(scores).dump()};
  }
  const PodInfo& pod = args->pod;
  std::vector<int64_t> s;
  if (pod.has_mig() && pod.init_containers_with_mig.empty()) {
    Remember(pod);
    s = engine_->Prioritize(pod, args->node_names);
  }
  for (size_t i = 0; i < args->node_names.size(); ++i) {
    scores.push_back({args->node_names[i], i < s.size() ? s[i] : 0});
  }
  return {200, HostPriorityListJson(scores).dump()};
}

StatusOr<PodInfo> Extender::PodForBind(const BindingArgs& args) {
  if (!args.pod_uid.empty()) {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(args.pod_uid); it != cache_.end()) return it->second;
  }
  if (api_ == nullptr) {
    return FailedPreconditionError(
        "the pod's requests are unknown (no filter call for it) and "
        "no API server is configured");
  }
  auto j = api_->GetPod(args.pod_namespace, args.pod_name);
  if (!j.ok()) return j.status();
  auto pod = ParsePod(*j);
  if (!pod.ok()) return pod.status();
  if (!args.pod_uid.empty() && pod->uid != args.pod_uid) {
    return FailedPreconditionError("pod " + pod->key() + " now has uid " + pod->uid + ", not " +
                                   args.pod_uid + " (recreated)");
  }
  return pod;
}

void Extender::KeepRoomWhereBound(const PodInfo& pod, const std::string& who,
                                  const std::string& node) {
  // The pod's own room there is found again (a repeated bind keeps it) and annotated.
  auto there = engine_->Reserve(pod, node);
  if (!there.ok()) {
    spdlog::warn("{} is bound to {}, but its MIG reservation there cannot be read back: {}",
                 OneLine(who), OneLine(node), OneLine(there.status().message()));
    return;
  }
  Status st = api_->PatchPodMetadata(pod.ns, pod.name, pod.uid,
                                     {{kPlacementAnnotation, there->ToJson().dump()}},
                                     {{kManagedLabel, "true"}});
  if (!st.ok()) {
    spdlog::warn("{}: cannot annotate its MIG reservation on {}: {}", OneLine(who), OneLine(node),
                 OneLine(st.message()));
  }
  engine_->ReleaseElsewhere(pod, node);
  spdlog::info("{} was bound to {} by an earlier bind: its MIG reservation there is kept",
               OneLine(who), OneLine(node));
}

std::string Extender::BindPod(const BindingArgs& args) {
  const std::string who = args.pod_namespace + "/" + args.pod_name;
  if (api_ == nullptr) return "no API server configured: cannot post the Binding";
  auto pod = PodForBind(args);
  if (!pod.ok()) return "cannot read pod " + who + ": " + pod.status().message();

  // A pod already bound (read from the API server, or bound by this extender since its filter
  // call): a retried or repeated bind reserves nothing again (regression:
  // repeated_bind_of_a_bound_pod reserved a second instance and overwrote the annotation).
  if (!pod->node_name.empty()) {
    if (pod->node_name == args.node) {
      spdlog::info("{} is already bound to {}: nothing to do", OneLine(who), OneLine(args.node));
      return "";
    }
    return "pod " + who + " is already bound to " + pod->node_name;
  }
  const bool mig = pod->has_mig();
  if (mig && !pod->init_containers_with_mig.empty()) return InitContainerReason(*pod);
  // The reservation's owner is k8s:<uid>, and "k8s:" alone is a prefix of every pod's (regression:
  // bind_without_a_pod_uid reserved under "k8s:").
  if (mig && pod->uid.empty()) return "pod " + who + " has no metadata.uid: nothing reserved";
  // One bind of a pod at a time (regression: concurrent_binds_left_a_wrong_annotation: two binds
  // of one pod to two nodes each reserved and annotated; one Binding won, and the pod could keep
  // the loser's annotation, for a reservation released on another node).
  if (!pod->uid.empty()) {
    std::lock_guard lock(mu_);
    if (!binding_.insert(pod->uid).second) {
      return "a bind of pod " + who + " is already in progress; try again when it has ended";
    }
  }
  struct Unmark {
    Extender* self;
    std::string uid;
    ~Unmark() {
      if (uid.empty()) return;
      std::lock_guard lock(self->mu_);
      self->binding_.erase(uid);
    }
  } unmark{this, pod->uid};
  std::string annotation;  // what this bind wrote as kPlacementAnnotation
  if (mig) {
    auto reservation = engine_->Reserve(*pod, args.node);
    if (!reservation.ok()) {
      return "cannot reserve the MIG instances of " + who + " on " + args.node + ": " +
             reservation.status().message();
    }
    annotation = reservation->ToJson().dump();
    Status st =
        api_->PatchPodMetadata(args.pod_namespace, args.pod_name, pod->uid,
                               {{kPlacementAnnotation, annotation}}, {{kManagedLabel, "true"}});
    if (!st.ok()) {
      (void)engine_->Release(*pod, args.node);
      return "cannot annotate " + who + ": " + st.message();
    }
  }
  Status st = api_->PostBinding(args.pod_namespace, args.pod_name, pod->uid, args.node);
  if (!st.ok()) {
    // The pod read back decides: a retried bind whose first Binding went through
    // (AlreadyExists), or an answer lost to a time-out or a 5xx after the Binding was stored
    // (regression: binding_stored_despite_an_error_lost_its_reservation: the reservation was
    // released, and the kubelet's Allocate then found none for the bound pod).
    auto now = api_->GetPod(args.pod_namespace, args.pod_name);
    // A Binding sent whose answer never came may still be stored after this read-back (regression
    // trial_late_binding_lost_its_reservation): whether it was is unknown, as when the pod
    // cannot be read.
    bool unknown = (!now.ok() && now.status().code() != StatusCode::kNotFound) ||
                   st.reason() == StatusReason::kOutcomeUnknown;
    bool ours = false;            // the same pod, read back with this bind's annotation
    std::string bound_elsewhere;  // the node an earlier bind's Binding landed on
    if (now.ok()) {
      auto info = ParsePod(*now);
      if (info.ok() && info->uid == pod->uid && !info->node_name.empty() &&
          info->node_name != args.node) {
        bound_elsewhere = info->node_name;
      }
      if (info.ok() && info->uid == pod->uid) {
        auto a = info->annotations.find(std::string(kPlacementAnnotation));
        ours = a != info->annotations.end() && a->second == annotation;
      }
      if (info.ok() && info->uid == pod->uid && info->node_name == args.node) {
        if (st.code() != StatusCode::kAlreadyExists) {
          spdlog::warn("{}: the Binding to {} was stored although the API server answered: {}",
                       OneLine(who), OneLine(args.node), OneLine(st.message()));
        }
        st = Status::Ok();
      }
      unknown = unknown || !info.ok();
    }
    if (!st.ok()) {
      if (mig && !unknown) {
        (void)engine_->Release(*pod, args.node);
        // Not bound here: the placement this bind's annotation names is released, so the pod
        // does not keep it (regression: annotation_kept_after_a_failed_binding). A pod gone,
        // recreated, or annotated since by another binder is left as it is.
        if (ours) {
          Status clear = api_->PatchPodMetadata(args.pod_namespace, args.pod_name, pod->uid,
                                                {{kPlacementAnnotation, std::nullopt}},
                                                {{kManagedLabel, std::nullopt}});
          if (!clear.ok()) {
            spdlog::warn("{}: cannot take the released placement's annotation off: {}",
                         OneLine(who), OneLine(clear.message()));
          }
        }
        // Bound elsewhere by an earlier bind whose Binding landed late (its outcome was unknown,
        // so that node's room was kept): the pod gets that room's annotation back (regression:
        // trial_retried_bind_released_the_room_of_the_binding_that_landed).
        if (!bound_elsewhere.empty()) KeepRoomWhereBound(*pod, who, bound_elsewhere);
      } else if (mig) {
        // Neither bound nor known not to be: the room stays; the pod's next bind takes it (a
        // node holding its room fits first), else it expires after reservation_ttl_s.
        spdlog::warn(
            "{}: whether the Binding to {} was stored is unknown ({}); its MIG "
            "reservation is kept",
            OneLine(who), OneLine(args.node),
            OneLine(now.ok() ? st.message() : now.status().message()));
      }
      return "cannot bind " + who + " to " + args.node + ": " + st.message();
    }
  }
  spdlog::info("bound {} to {}{}", OneLine(who), OneLine(args.node),
               mig ? " with its MIG reservation" : "");
  if (mig) engine_->ReleaseElsewhere(*pod, args.node);
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(pod->uid); it != cache_.end()) it->second.node_name = args.node;
  }
  return "";
}

Extender::Answer Extender::Bind(std::string_view body) {
  auto args = ParseBindingArgs(body);
  std::string error;
  if (!args.ok()) {
    error = args.status().message();
  } else {
    error = BindPod(*args);
  }
  {
    std::lock_guard lock(mu_);
    ++counters_.bind;
    if (!args.ok()) ++counters_.bad_requests;
    if (!error.empty()) ++counters_.bind_errors;
  }
  if (!error.empty()) {
    // Client text (a pod's name, a node's) is escaped: a newline or an escape sequence in it
    // cannot forge a log line (regression: pod_name_log_injection).
    spdlog::warn("bind: {}", OneLine(error));
    error = "migsched: " + error;
  }
  return {200, BindingResultJson(error).dump()};
}

}  // namespace migsched::k8s
