#include "k8s/api/leader_election.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace migsched::k8s {

using nlohmann::json;

namespace {

// The wall clock as a Kubernetes MicroTime, e.g. "2026-12-02T11:30:00.123456Z".
std::string MicroTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()) %
                  std::chrono::seconds(1);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06ldZ", static_cast<long>(us.count()));
  return buf;
}

Status HttpError(const std::string& method, const std::string& path,
                 const KubeClient::Response& r) {
  const std::string what =
      method + " " + path + ": HTTP " + std::to_string(r.status) + ": " + ApiMessage(r.body);
  if (r.status == 401 || r.status == 403) return Status(StatusCode::kUnauthenticated, what);
  return UnavailableError(what);
}

}  // namespace

LeaderElector::LeaderElector(KubeClient* api, LeaseOptions options)
    : api_(api), options_(std::move(options)) {}

std::string LeaderElector::Path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.lease_namespace + "/leases/" +
         options_.lease_name;
}

json LeaderElector::Spec(int transitions, const std::string& acquire_time) const {
  return {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", static_cast<int>(std::ceil(options_.lease_duration_s))},
          {"acquireTime", acquire_time},
          {"renewTime", MicroTimeNow()},
          {"leaseTransitions", transitions}};
}

StatusOr<bool> LeaderElector::TryAcquireOrRenew(double now_s) {
  const std::string path = Path();
  ASSIGN_OR_RETURN(KubeClient::Response got, api_->Send("GET", path));
  if (got.status == 404) {
    const std::string collection = path.substr(0, path.rfind('/'));
    const std::string acquired = MicroTimeNow();
    const json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
        {"spec", Spec(0, acquired)}};
    ASSIGN_OR_RETURN(KubeClient::Response made,
                     api_->Send("POST", collection, lease.dump(), "application/json"));
    std::lock_guard lock(mu_);
    if (made.status == 409) {  // another replica created it first
      leading_ = false;
      return false;
    }
    if (made.status != 200 && made.status != 201) return HttpError("POST", collection, made);
    leading_ = true;
    renewed_at_ = observed_at_ = now_s;
    holder_ = options_.identity;
    acquire_time_ = acquired;
    observed_record_.clear();
    return true;
  }
  if (got.status != 200) return HttpError("GET", path, got);
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object() || !lease.contains("metadata")) {
    return UnavailableError("GET " + path + ": not a Lease: " + ApiMessage(got.body));
  }
  const json spec = lease.value("spec", json::object());
  const std::string holder = spec.value("holderIdentity", std::string());
  const double duration = spec.value("leaseDurationSeconds", options_.lease_duration_s);
  const std::string record = holder + "|" + spec.value("renewTime", std::string()) + "|" +
                             lease["metadata"].value("resourceVersion", std::string());
  int transitions = spec.value("leaseTransitions", 0);
  std::string acquired;
  {
    std::lock_guard lock(mu_);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now_s;
    }
    holder_ = holder;
    if (!holder.empty() && holder != options_.identity && now_s < observed_at_ + duration) {
      leading_ = false;  // held by another replica that renews it
      return false;
    }
    if (holder == options_.identity && !acquire_time_.empty()) {
      acquired = acquire_time_;
    } else {
      acquired = MicroTimeNow();
      if (holder != options_.identity) ++transitions;
    }
  }
  lease["spec"] = Spec(transitions, acquired);
  ASSIGN_OR_RETURN(KubeClient::Response put,
                   api_->Send("PUT", path, lease.dump(), "application/json"));
  std::lock_guard lock(mu_);
  if (put.status == 409) {  // another replica wrote the Lease since our read
    leading_ = false;
    return false;
  }
  if (put.status != 200) return HttpError("PUT", path, put);
  leading_ = true;
  renewed_at_ = observed_at_ = now_s;
  holder_ = options_.identity;
  acquire_time_ = acquired;
  return true;
}

Status LeaderElector::Release() {
  {
    std::lock_guard lock(mu_);
    if (!leading_) return Status::Ok();
    leading_ = false;
    acquire_time_.clear();
  }
  const std::string path = Path();
  ASSIGN_OR_RETURN(KubeClient::Response got, api_->Send("GET", path));
  if (got.status != 200) return HttpError("GET", path, got);
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object() || !lease.contains("spec")) return Status::Ok();
  if (lease["spec"].value("holderIdentity", std::string()) != options_.identity) {
    return Status::Ok();  // taken over already
  }
  // As client-go: no holder, and a duration of 1 s, so the next round of any
  // replica takes it.
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = MicroTimeNow();
  ASSIGN_OR_RETURN(KubeClient::Response put,
                   api_->Send("PUT", path, lease.dump(), "application/json"));
  if (put.status != 200 && put.status != 409) return HttpError("PUT", path, put);
  return Status::Ok();
}

bool LeaderElector::IsLeader(double now_s) const {
  std::lock_guard lock(mu_);
  return leading_ && now_s - renewed_at_ < options_.renew_deadline_s;
}

std::string LeaderElector::NotLeaderReason(double now_s) const {
  std::lock_guard lock(mu_);
  if (leading_ && now_s - renewed_at_ < options_.renew_deadline_s) return "";
  const std::string lease = options_.lease_namespace + "/" + options_.lease_name;
  if (leading_) {
    return "not the leader (the lease " + lease + " was not renewed for " +
           std::to_string(static_cast<int>(now_s - renewed_at_)) + " s)";
  }
  if (!holder_.empty() && holder_ != options_.identity) {
    return "not the leader (the lease " + lease + " is held by " + holder_ + ")";
  }
  return "not the leader (the lease " + lease + " is not acquired yet)";
}

}  // namespace migsched::k8s
