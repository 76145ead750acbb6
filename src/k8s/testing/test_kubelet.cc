#include "k8s/testing/test_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace migsched::k8s {

namespace pb = ::v1beta1;

std::string ExtendedResourceNameError(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return "no domain prefix (a native resource)";
  const std::string prefix = name.substr(0, slash);
  const std::string base = name.substr(slash + 1);
  if (name.find("kubernetes.io/") != std::string::npos) return "a kubernetes.io resource";
  if (name.rfind("requests.", 0) == 0) return "starts with \"requests.\"";
  // As quota name "requests.<name>": a DNS subdomain prefix and a qualified name.
  static const std::regex kSubdomain(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  static const std::regex kName(R"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])");
  const std::string quota_prefix = "requests." + prefix;
  if (quota_prefix.size() > 253 || !std::regex_match(quota_prefix, kSubdomain)) {
    return "prefix '" + prefix + "' is not a DNS subdomain";
  }
  if (base.size() > 63 || !std::regex_match(base, kName)) {
    return "name '" + base + "' is not a qualified name";
  }
  return "";
}

namespace {

class RegistrationService final : public pb::Registration::Service {
 public:
  explicit RegistrationService(std::string dir) : dir_(std::move(dir)) {}

  grpc::Status Register(grpc::ServerContext*, const pb::RegisterRequest* r, pb::Empty*) override {
    if (r->version() != kDevicePluginApiVersion) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "requested API version \"" + r->version() +
                              "\" is not supported by kubelet. Supported versions are "
                              "[\"v1beta1\"]");
    }
    if (const std::string why = ExtendedResourceNameError(r->resource_name()); !why.empty()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN, "the ResourceName \"" + r->resource_name() +
                                                         "\" is invalid (" + why + ")");
    }
    if (r->endpoint().empty() || r->endpoint().find('/') != std::string::npos) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "endpoint '" + r->endpoint() + "' is not a file name");
    }
    // The kubelet dials the plugin before it answers.
    const std::string path = (std::filesystem::path(dir_) / r->endpoint()).string();
    auto channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) {
      return grpc::Status(grpc::StatusCode::UNKNOWN, "cannot dial the plugin at " + path);
    }
    Registration reg;
    reg.version = r->version();
    reg.endpoint = r->endpoint();
    reg.resource_name = r->resource_name();
    reg.pre_start_required = r->options().pre_start_required();
    reg.get_preferred_allocation_available = r->options().get_preferred_allocation_available();
    {
      std::lock_guard lock(mu_);
      registrations_.push_back(reg);
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  std::vector<Registration> registrations() const {
    std::lock_guard lock(mu_);
    return registrations_;
  }

  StatusOr<Registration> Wait(const std::string& resource, std::chrono::milliseconds timeout,
                              int count) {
    std::unique_lock lock(mu_);
    std::optional<Registration> found;
    auto have = [&] {
      int n = 0;
      for (const auto& r : registrations_) {
        if (r.resource_name == resource) {
          ++n;
          found = r;
        }
      }
      return n >= count;
    };
    if (!cv_.wait_for(lock, timeout, have)) {
      return UnavailableError("no registration of " + resource + " within " +
                              std::to_string(timeout.count()) + " ms");
    }
    return *found;
  }

 private:
  const std::string dir_;
  mutable std::mutex mu_;  // guards registrations_
  std::condition_variable cv_;
  std::vector<Registration> registrations_;
};

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status::Ok();
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return InvalidArgumentError(s.error_message());
    case grpc::StatusCode::NOT_FOUND:
      return NotFoundError(s.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION:
      return FailedPreconditionError(s.error_message());
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return UnavailableError(s.error_message());
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status(StatusCode::kResourceExhausted, s.error_message());
    default:
      return InternalError(s.error_message());
  }
}

ContainerDevices FromResponse(const pb::ContainerAllocateResponse& r) {
  ContainerDevices d;
  for (const auto& [k, v] : r.envs()) d.envs[k] = v;
  for (const auto& [k, v] : r.annotations()) d.annotations[k] = v;
  for (const auto& spec : r.devices()) {
    d.device_nodes.push_back({spec.container_path(), spec.host_path(), spec.permissions()});
  }
  for (const auto& c : r.cdi_devices()) d.cdi_devices.push_back(c.name());
  return d;
}

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

}  // namespace

struct TestKubelet::Impl {
  std::string dir;
  RegistrationService service;
  std::unique_ptr<grpc::Server> server;
  explicit Impl(std::string d) : dir(d), service(std::move(d)) {}
};

TestKubelet::TestKubelet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TestKubelet::~TestKubelet() {
  impl_->server->Shutdown(In(std::chrono::seconds(1)));
  impl_->server->Wait();
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(impl_->dir) / kKubeletSocketName, ec);
}

StatusOr<std::unique_ptr<TestKubelet>> TestKubelet::Start(const std::string& dir) {
  auto impl = std::make_unique<Impl>(dir);
  const std::string path = (std::filesystem::path(dir) / kKubeletSocketName).string();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&impl->service);
  impl->server = builder.BuildAndStart();
  if (!impl->server) return UnavailableError("cannot serve " + path);
  return std::unique_ptr<TestKubelet>(new TestKubelet(std::move(impl)));
}

std::vector<Registration> TestKubelet::registrations() const {
  return impl_->service.registrations();
}

StatusOr<Registration> TestKubelet::WaitForRegistration(const std::string& resource_name,
                                                        std::chrono::milliseconds timeout,
                                                        int count) {
  return impl_->service.Wait(resource_name, timeout, count);
}

const std::string& TestKubelet::dir() const { return impl_->dir; }

// A plugin connection. The ListAndWatch stream is read by its own thread into
// `lists` (guarded by `mu`), so that NextDeviceList can wait with a timeout.
struct TestKubelet::Plugin::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::DevicePlugin::Stub> stub;
  grpc::ClientContext watch_context;
  std::thread reader;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<ListedDevice>> lists;
  bool watching = false;
  bool ended = false;

  void StartWatch() {
    if (watching) return;
    watching = true;
    reader = std::thread([this] {
      pb::Empty empty;
      auto stream = stub->ListAndWatch(&watch_context, empty);
      pb::ListAndWatchResponse response;
      while (stream->Read(&response)) {
        std::vector<ListedDevice> list;
        for (const auto& d : response.devices()) list.push_back({d.id(), d.health()});
        std::lock_guard lock(mu);
        lists.push_back(std::move(list));
        cv.notify_all();
      }
      (void)stream->Finish();
      std::lock_guard lock(mu);
      ended = true;
      cv.notify_all();
    });
  }
};

TestKubelet::Plugin::Plugin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TestKubelet::Plugin::~Plugin() {
  if (impl_->watching) {
    impl_->watch_context.TryCancel();
    impl_->reader.join();
  }
}

StatusOr<std::unique_ptr<TestKubelet::Plugin>> TestKubelet::Dial(const std::string& resource_name) {
  std::optional<Registration> reg;
  for (const auto& r : registrations()) {
    if (r.resource_name == resource_name) reg = r;
  }
  if (!reg) return NotFoundError(resource_name + " has not registered");
  auto impl = std::make_unique<Plugin::Impl>();
  const std::string path = (std::filesystem::path(impl_->dir) / reg->endpoint).string();
  impl->channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  impl->stub = pb::DevicePlugin::NewStub(impl->channel);
  return std::unique_ptr<Plugin>(new Plugin(std::move(impl)));
}

StatusOr<Registration> TestKubelet::Plugin::Options() {
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(5)));
  pb::Empty empty;
  pb::DevicePluginOptions options;
  Status st = FromGrpc(impl_->stub->GetDevicePluginOptions(&context, empty, &options));
  if (!st.ok()) return st;
  Registration r;
  r.pre_start_required = options.pre_start_required();
  r.get_preferred_allocation_available = options.get_preferred_allocation_available();
  return r;
}

StatusOr<std::vector<ListedDevice>> TestKubelet::Plugin::NextDeviceList(
    std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mu);
  impl_->StartWatch();
  if (!impl_->cv.wait_for(lock, timeout,
                          [this] { return !impl_->lists.empty() || impl_->ended; })) {
    return UnavailableError("no device list within " + std::to_string(timeout.count()) + " ms");
  }
  if (impl_->lists.empty()) return UnavailableError("the ListAndWatch stream ended");
  std::vector<ListedDevice> list = std::move(impl_->lists.front());
  impl_->lists.pop_front();
  return list;
}

StatusOr<std::vector<ContainerDevices>> TestKubelet::Plugin::AllocateMany(
    const std::vector<std::vector<std::string>>& containers) {
  pb::AllocateRequest request;
  for (const auto& ids : containers) {
    auto* c = request.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(60)));
  pb::AllocateResponse response;
  Status st = FromGrpc(impl_->stub->Allocate(&context, request, &response));
  if (!st.ok()) return st;
  if (response.container_responses_size() != static_cast<int>(containers.size())) {
    return InternalError("Allocate answered " +
                         std::to_string(response.container_responses_size()) +
                         " container responses for " + std::to_string(containers.size()));
  }
  std::vector<ContainerDevices> out;
  for (const auto& r : response.container_responses()) out.push_back(FromResponse(r));
  return out;
}

StatusOr<ContainerDevices> TestKubelet::Plugin::Allocate(const std::vector<std::string>& ids) {
  auto many = AllocateMany({ids});
  if (!many.ok()) return many.status();
  return std::move(many->front());
}

StatusOr<std::vector<std::string>> TestKubelet::Plugin::PreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) {
  pb::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const auto& id : available) c->add_available_deviceids(id);
  for (const auto& id : must_include) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(5)));
  pb::PreferredAllocationResponse response;
  Status st = FromGrpc(impl_->stub->GetPreferredAllocation(&context, request, &response));
  if (!st.ok()) return st;
  if (response.container_responses_size() != 1) return InternalError("expected one response");
  const auto& ids = response.container_responses(0).deviceids();
  return std::vector<std::string>(ids.begin(), ids.end());
}

Status TestKubelet::Plugin::PreStartContainer(const std::vector<std::string>& device_ids) {
  pb::PreStartContainerRequest request;
  for (const auto& id : device_ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(5)));
  pb::PreStartContainerResponse response;
  return FromGrpc(impl_->stub->PreStartContainer(&context, request, &response));
}

}  // namespace migsched::k8s
