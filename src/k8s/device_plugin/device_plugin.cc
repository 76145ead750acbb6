#include "k8s/device_plugin/device_plugin.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace migsched::k8s {

namespace pb = ::v1beta1;

std::vector<std::string> MigResource::device_ids() const {
  std::vector<std::string> ids;
  for (int i = 0; i < device_count; ++i) ids.push_back(profile + "-" + std::to_string(i));
  return ids;
}

namespace {

// The gRPC service of one resource. `mu` guards `healthy`, `version` and
// `stopping`; `cv` wakes the ListAndWatch streams when one of them changes.
class PluginService final : public pb::DevicePlugin::Service {
 public:
  PluginService(MigResource resource, DeviceAllocator* allocator)
      : resource_(std::move(resource)), allocator_(allocator) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const pb::Empty*,
                                      pb::DevicePluginOptions* out) override {
    // Devices are interchangeable tokens: a preference among them would mean
    // nothing, and nothing needs doing before a container starts.
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(false);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const pb::Empty*,
                            grpc::ServerWriter<pb::ListAndWatchResponse>* writer) override {
    std::unique_lock lock(mu_);
    long sent = -1;
    while (!stopping_ && !context->IsCancelled()) {
      if (sent != version_) {
        pb::ListAndWatchResponse response = DeviceList();
        sent = version_;
        lock.unlock();
        const bool ok = writer->Write(response);
        lock.lock();
        if (!ok) break;  // the kubelet went away
        continue;
      }
      // Woken by a change or Stop(); the timeout notices a cancelled stream.
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const pb::PreferredAllocationRequest* request,
                                      pb::PreferredAllocationResponse* out) override {
    // Not advertised (see GetDevicePluginOptions) but answered: the devices the
    // kubelet must include, then the available ones in its order.
    for (const auto& c : request->container_requests()) {
      auto* r = out->add_container_responses();
      std::vector<std::string> chosen(c.must_include_deviceids().begin(),
                                      c.must_include_deviceids().end());
      for (const auto& id : c.available_deviceids()) {
        if (static_cast<int>(chosen.size()) >= c.allocation_size()) break;
        if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) chosen.push_back(id);
      }
      for (const auto& id : chosen) r->add_deviceids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const pb::AllocateRequest* request,
                        pb::AllocateResponse* out) override {
    const std::vector<std::string> known = resource_.device_ids();
    for (const auto& c : request->container_requests()) {
      std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      for (const auto& id : ids) {
        if (std::find(known.begin(), known.end(), id) == known.end()) {
          return grpc::Status(
              grpc::StatusCode::INVALID_ARGUMENT,
              "migsched: unknown device '" + id + "' for " + resource_.resource_name());
        }
      }
      if (ids.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "migsched: a container request without devices");
      }
      StatusOr<ContainerDevices> devices = allocator_->Allocate(resource_.profile, ids);
      if (!devices.ok()) {
        spdlog::warn("Allocate {} x{}: {}", resource_.resource_name(), ids.size(),
                     devices.status().message());
        return grpc::Status(ToGrpcCode(devices.status().code()),
                            "migsched: " + devices.status().message());
      }
      auto* r = out->add_container_responses();
      for (const auto& [k, v] : devices->envs) (*r->mutable_envs())[k] = v;
      for (const auto& [k, v] : devices->annotations) (*r->mutable_annotations())[k] = v;
      for (const auto& d : devices->device_nodes) {
        auto* spec = r->add_devices();
        spec->set_container_path(d.container_path);
        spec->set_host_path(d.host_path);
        spec->set_permissions(d.permissions);
      }
      for (const auto& name : devices->cdi_devices) r->add_cdi_devices()->set_name(name);
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const pb::PreStartContainerRequest*,
                                 pb::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

  void SetHealthy(bool healthy) {
    std::lock_guard lock(mu_);
    if (healthy_ == healthy) return;
    healthy_ = healthy;
    ++version_;
    cv_.notify_all();
  }
  void SetStopping(bool stopping) {
    std::lock_guard lock(mu_);
    stopping_ = stopping;
    cv_.notify_all();
  }
  const MigResource& resource() const { return resource_; }

 private:
  static grpc::StatusCode ToGrpcCode(StatusCode code) {
    switch (code) {
      case StatusCode::kInvalidArgument:
        return grpc::StatusCode::INVALID_ARGUMENT;
      case StatusCode::kNotFound:
        return grpc::StatusCode::NOT_FOUND;
      case StatusCode::kFailedPrecondition:
        return grpc::StatusCode::FAILED_PRECONDITION;
      case StatusCode::kUnavailable:
        return grpc::StatusCode::UNAVAILABLE;
      case StatusCode::kResourceExhausted:
        return grpc::StatusCode::RESOURCE_EXHAUSTED;
      case StatusCode::kAlreadyExists:
        return grpc::StatusCode::ALREADY_EXISTS;
      case StatusCode::kUnauthenticated:
        return grpc::StatusCode::UNAUTHENTICATED;
      default:
        return grpc::StatusCode::INTERNAL;
    }
  }

  pb::ListAndWatchResponse DeviceList() const {
    pb::ListAndWatchResponse response;
    for (const auto& id : resource_.device_ids()) {
      auto* d = response.add_devices();
      d->set_id(id);
      d->set_health(healthy_ ? kDeviceHealthy : kDeviceUnhealthy);
    }
    return response;
  }

  const MigResource resource_;
  DeviceAllocator* const allocator_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool healthy_ = true;
  long version_ = 0;
  bool stopping_ = false;
};

}  // namespace

struct DevicePluginServer::Impl {
  std::string dir;
  PluginService service;
  mutable std::mutex mu;  // guards server
  std::unique_ptr<grpc::Server> server;

  Impl(std::string d, MigResource r, DeviceAllocator* a)
      : dir(std::move(d)), service(std::move(r), a) {}
  std::string socket_path() const {
    return (std::filesystem::path(dir) / service.resource().endpoint()).string();
  }
  void StopLocked() {
    if (!server) return;
    service.SetStopping(true);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server->Wait();
    server.reset();
    std::error_code ec;
    std::filesystem::remove(socket_path(), ec);
  }
};

DevicePluginServer::DevicePluginServer(std::string dir, MigResource resource,
                                       DeviceAllocator* allocator)
    : impl_(std::make_unique<Impl>(std::move(dir), std::move(resource), allocator)) {}

DevicePluginServer::~DevicePluginServer() { Stop(); }

Status DevicePluginServer::Start(std::chrono::milliseconds register_timeout) {
  std::lock_guard lock(impl_->mu);
  impl_->StopLocked();
  const std::string path = impl_->socket_path();
  std::error_code ec;
  std::filesystem::remove(path, ec);  // a stale socket of an earlier run
  impl_->service.SetStopping(false);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&impl_->service);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server) return UnavailableError("cannot serve the device plugin socket " + path);

  const MigResource& r = impl_->service.resource();
  const std::string kubelet = (std::filesystem::path(impl_->dir) / kKubeletSocketName).string();
  auto channel = grpc::CreateChannel("unix:" + kubelet, grpc::InsecureChannelCredentials());
  auto stub = pb::Registration::NewStub(channel);
  pb::RegisterRequest request;
  request.set_version(kDevicePluginApiVersion);
  request.set_endpoint(r.endpoint());
  request.set_resource_name(r.resource_name());
  request.mutable_options()->set_pre_start_required(false);
  request.mutable_options()->set_get_preferred_allocation_available(false);
  pb::Empty reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + register_timeout);
  const grpc::Status s = stub->Register(&context, request, &reply);
  if (!s.ok()) {
    impl_->StopLocked();
    const std::string what = "registering " + r.resource_name() + " with the kubelet at " +
                             kubelet + ": " + s.error_message();
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return UnavailableError(what);
    }
    return FailedPreconditionError(what);
  }
  spdlog::info("registered {} ({} devices) with the kubelet at {}", r.resource_name(),
               r.device_count, kubelet);
  return Status::Ok();
}

void DevicePluginServer::Stop() {
  std::lock_guard lock(impl_->mu);
  impl_->StopLocked();
}

bool DevicePluginServer::serving() const {
  std::lock_guard lock(impl_->mu);
  return impl_->server != nullptr;
}

void DevicePluginServer::SetHealthy(bool healthy) { impl_->service.SetHealthy(healthy); }
const MigResource& DevicePluginServer::resource() const { return impl_->service.resource(); }
std::string DevicePluginServer::socket_path() const { return impl_->socket_path(); }

// ---------------------------------------------------------------------------

namespace {
// Identity of a file (device, inode), or {0, 0} when it does not exist.
std::pair<dev_t, ino_t> FileId(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}
}  // namespace

struct DevicePluginManager::Impl {
  std::string dir;
  std::vector<std::unique_ptr<DevicePluginServer>> servers;
  mutable std::mutex mu;  // guards kubelet_ids, registrations, stop
  std::condition_variable cv;
  std::vector<std::pair<dev_t, ino_t>> kubelet_ids;  // kubelet.sock when each registered
  std::map<std::string, int> registrations;
  bool stop = false;
  std::thread thread;
  bool healthy = true;

  // Starts (again) every server that is not registered with the current
  // kubelet. Returns the first error. Called with `mu` held.
  Status CheckLocked() {
    Status first;
    const auto kubelet = FileId((std::filesystem::path(dir) / kKubeletSocketName).string());
    for (size_t i = 0; i < servers.size(); ++i) {
      DevicePluginServer& s = *servers[i];
      const bool socket_there = FileId(s.socket_path()).second != 0;
      if (s.serving() && socket_there && kubelet_ids[i] == kubelet) continue;
      if (kubelet.second == 0) {
        if (first.ok()) first = UnavailableError("no kubelet socket in " + dir);
        continue;
      }
      Status st = s.Start();
      if (!st.ok()) {
        spdlog::warn("{}", st.message());
        if (first.ok()) first = st;
        continue;
      }
      s.SetHealthy(healthy);
      kubelet_ids[i] = kubelet;
      ++registrations[s.resource().resource_name()];
    }
    return first;
  }
};

DevicePluginManager::DevicePluginManager(std::string dir, std::vector<MigResource> resources,
                                         DeviceAllocator* allocator)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  for (auto& r : resources) {
    impl_->servers.push_back(std::make_unique<DevicePluginServer>(impl_->dir, r, allocator));
    impl_->kubelet_ids.push_back({0, 0});
  }
}

DevicePluginManager::~DevicePluginManager() { Stop(); }

Status DevicePluginManager::Start(std::chrono::milliseconds interval) {
  Status st;
  {
    std::lock_guard lock(impl_->mu);
    st = impl_->CheckLocked();
    impl_->stop = false;
  }
  impl_->thread = std::thread([this, interval] {
    std::unique_lock lock(impl_->mu);
    while (!impl_->stop) {
      impl_->cv.wait_for(lock, interval, [this] { return impl_->stop; });
      if (impl_->stop) break;
      (void)impl_->CheckLocked();
    }
  });
  return st;
}

void DevicePluginManager::Stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  for (auto& s : impl_->servers) s->Stop();
}

void DevicePluginManager::CheckOnce() {
  std::lock_guard lock(impl_->mu);
  (void)impl_->CheckLocked();
}

void DevicePluginManager::SetHealthy(bool healthy) {
  std::lock_guard lock(impl_->mu);
  impl_->healthy = healthy;
  for (auto& s : impl_->servers) s->SetHealthy(healthy);
}

std::map<std::string, int> DevicePluginManager::registrations() const {
  std::lock_guard lock(impl_->mu);
  return impl_->registrations;
}

}  // namespace migsched::k8s
