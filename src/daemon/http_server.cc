#include "daemon/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <thread>

#include "daemon/request_json.h"
#include "daemon/token.h"

namespace migsched {
namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kJson = "application/json";

std::string Dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

void SendJson(httplib::Response& res, int status, const ojson& j) {
  res.status = status;
  res.set_content(Dump(j) + "\n", kJson);
}

void SendError(httplib::Response& res, const Status& st) {
  res.status = HttpStatusFor(st.code());
  res.set_content(ErrorBody(st) + "\n", kJson);
}

// The id in /v1/jobs/{id}: a positive decimal integer.
StatusOr<DaemonJobId> ParseId(const std::string& s) {
  DaemonJobId id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return InvalidArgumentError(fmt::format("job id '{}' is not a positive integer", s));
  }
  return id;
}

// Reads up to `max` bytes of `path` from `offset`; empty if none (or no file yet).
std::string ReadChunk(const std::filesystem::path& path, size_t offset, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in) return {};
  std::string buf(max, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(max));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

void Histogram(std::string* out, std::string_view name, std::string_view help,
               const std::vector<double>& buckets, const std::vector<double>& samples) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  double sum = 0;
  for (double s : samples) sum += s;
  for (double le : buckets) {
    size_t n = 0;
    for (double s : samples) n += s <= le ? 1 : 0;
    *out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, n);
  }
  *out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, samples.size());
  *out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum, name, samples.size());
}

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

const std::vector<double>& ReconfigurationBuckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return b;
}

const std::vector<double>& DecisionBuckets() {
  static const std::vector<double> b = {1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3,
                                        0.01, 0.05, 0.1,  0.5,  1};
  return b;
}

std::string RenderPrometheus(const DaemonMetrics& m, bool paused) {
  std::string out;
  Header(&out, "migsched_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, n] : m.jobs_by_state) {
    out += fmt::format("migsched_jobs{{state=\"{}\"}} {}\n", state, n);
  }
  Header(&out, "migsched_queue_length", "gauge", "Jobs waiting in the queue.");
  out += fmt::format("migsched_queue_length {}\n", m.queue_length);
  Header(&out, "migsched_scheduler_paused", "gauge", "1 while the queue is paused.");
  out += fmt::format("migsched_scheduler_paused {}\n", paused ? 1 : 0);
  Header(&out, "migsched_gpu_utilisation", "gauge",
         "Busy compute slices over compute slices per GPU, 0 to 1.");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_utilisation{{gpu=\"{}\"}} {}\n", g.index, g.utilisation);
  }
  Header(&out, "migsched_gpu_fragcost", "gauge", "FragCost of each GPU's current state (spec 2).");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_fragcost{{gpu=\"{}\"}} {}\n", g.index, g.frag_cost);
  }
  Header(&out, "migsched_gpu_draining", "gauge", "1 while the GPU is drained.");
  for (const GpuView& g : m.gpus) {
    out += fmt::format("migsched_gpu_draining{{gpu=\"{}\"}} {}\n", g.index, g.draining ? 1 : 0);
  }
  Header(&out, "migsched_reconfigurations_total", "counter",
         "MIG GPU-instance creates and destroys done on the backend.");
  out += fmt::format("migsched_reconfigurations_total {}\n", m.reconfigurations);
  Histogram(&out, "migsched_reconfiguration_seconds",
            "Latency of MIG creates and destroys (most recent 10000).", ReconfigurationBuckets(),
            m.reconfig_seconds);
  Header(&out, "migsched_migrations_total", "counter", "Job migrations by kind (spec 6).");
  out += fmt::format("migsched_migrations_total{{kind=\"intra\"}} {}\n", m.migrations_intra);
  out += fmt::format("migsched_migrations_total{{kind=\"inter\"}} {}\n", m.migrations_inter);
  Histogram(&out, "migsched_decision_seconds", "Scheduler decision latency (most recent 10000).",
            DecisionBuckets(), m.decision_seconds);
  for (const char* dir : {"tx", "rx"}) {
    const std::string name = fmt::format("migsched_gpu_pcie_{}_bytes_per_second", dir);
    Header(&out, name, "gauge",
           fmt::format("PCIe {} throughput per GPU (NVML, 20 ms window).",
                       std::string_view(dir) == "tx" ? "transmit" : "receive"));
    for (const GpuView& g : m.gpus) {
      if (!g.pcie) continue;
      const int64_t kbps = std::string_view(dir) == "tx" ? g.pcie->tx_kbps : g.pcie->rx_kbps;
      out += fmt::format("{}{{gpu=\"{}\"}} {}\n", name, g.index, PcieBytesPerSecond(kbps));
    }
  }
  return out;
}

class HttpServer::Impl {
 public:
  Impl(JobApi* api, HttpServerOptions options) : api_(api), opt_(std::move(options)) {
    const int threads = opt_.threads > 0 ? opt_.threads : 16;
    server_.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    server_.set_payload_max_length(opt_.max_body_bytes);
    // httplib's default also sets SO_REUSEPORT, which lets a second daemon
    // bind the same port and take half the requests: SO_REUSEADDR only.
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
    });
    server_.set_keep_alive_max_count(1000);  // httplib's default of 5 reconnects clients often
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return Authorize(req, res);
    });
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) { return OnError(req, res); }));
    server_.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown exception";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          spdlog::error("internal error serving {} {}: {}", req.method, req.path, what);
          SendError(res, InternalError("internal error: " + what));
        });
    server_.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      spdlog::debug("{} {} from {}:{} -> {}", req.method, req.path, req.remote_addr,
                    req.remote_port, res.status);
    });
    Routes();
  }

  Status Bind(const std::string& listen) {
    if (opt_.token.empty()) return InvalidArgumentError("the API token must not be empty");
    const size_t colon = listen.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      const std::string p = listen.substr(colon + 1);
      auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
      if (p.empty() || ec != std::errc() || ptr != p.data() + p.size()) port = -1;
    }
    if (port < 0 || port > 65535) {
      return InvalidArgumentError(fmt::format("listen address '{}' is not HOST:PORT", listen));
    }
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);  // [::1]:7070
    }
    if (port == 0) {
      port_ = server_.bind_to_any_port(host);
      if (port_ < 0) port_ = 0;
    } else if (server_.bind_to_port(host, port)) {
      port_ = port;
    }
    if (port_ <= 0) {
      return UnavailableError(fmt::format(
          "cannot listen on {} (address in use, or not an address of this host)", listen));
    }
    bound_ = true;
    return Status();
  }

  Status Serve() {
    if (!bound_) return FailedPreconditionError("HttpServer::Serve before a successful Bind");
    if (stopping_) return Status();
    if (!server_.listen_after_bind() && !stopping_) {
      return UnavailableError("the HTTP server stopped accepting connections");
    }
    return Status();
  }

  void Stop() {
    stopping_ = true;
    server_.stop();
  }

  int port() const { return port_; }

 private:
  httplib::Server::HandlerResponse Authorize(const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const bool bearer = auth.size() > 7 &&
                        (auth.compare(0, 7, "Bearer ") == 0 || auth.compare(0, 7, "bearer ") == 0);
    if (bearer && TokensEqual(std::string_view(auth).substr(7), opt_.token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    spdlog::warn("refused {} {} from {}:{}: {}", req.method, req.path, req.remote_addr,
                 req.remote_port,
                 auth.empty() ? "no Authorization header" : "wrong or malformed bearer token");
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"migsched\"");
    res.set_content(ErrorBody("UNAUTHENTICATED",
                              auth.empty() ? "missing bearer token (Authorization: Bearer <token>)"
                                           : "wrong bearer token") +
                        "\n",
                    kJson);
    return httplib::Server::HandlerResponse::Handled;
  }

  // Gives every error without a body (httplib's own 404/413/400...) the JSON error form.
  httplib::Server::HandlerResponse OnError(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string code = "INVALID_ARGUMENT";
    std::string message;
    switch (res.status) {
      case 404:
        code = "NOT_FOUND";
        message = fmt::format("no such endpoint: {} {}", req.method, req.path);
        break;
      case 413:
        code = "RESOURCE_EXHAUSTED";
        message =
            fmt::format("request body larger than max_body_bytes ({} bytes)", opt_.max_body_bytes);
        break;
      case 400:
        message = "malformed HTTP request";
        break;
      default:
        code = res.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
        message = fmt::format("HTTP status {}", res.status);
    }
    res.set_content(ErrorBody(code, message) + "\n", kJson);
    return httplib::Server::HandlerResponse::Handled;
  }

  void Routes() {
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      SendJson(res, 200, ojson{{"status", "ok"}});
    });
    server_.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      auto request = ParseJobRequest(req.body);
      if (!request.ok()) return SendError(res, request.status());
      auto record = api_->Submit(*request);
      if (!record.ok()) return SendError(res, record.status());
      res.set_header("Location", fmt::format("/v1/jobs/{}", record->id));
      SendJson(res, 201, JobRecordToJson(*record));
    });
    server_.Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      std::optional<JobState> filter;
      if (req.has_param("state")) {
        auto s = ParseJobState(req.get_param_value("state"));
        if (!s.ok()) return SendError(res, s.status());
        filter = *s;
      }
      ojson jobs = ojson::array();
      for (const DaemonJobRecord& r : api_->ListJobs()) {
        if (!filter || r.state == *filter) jobs.push_back(JobRecordToJson(r));
      }
      SendJson(res, 200, ojson{{"jobs", std::move(jobs)}});
    });
    server_.Get(R"(/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto id = ParseId(req.matches[1]);
      if (!id.ok()) return SendError(res, id.status());
      auto record = api_->GetJob(*id);
      if (!record.ok()) return SendError(res, record.status());
      SendJson(res, 200, JobRecordToJson(*record));
    });
    server_.Delete(R"(/v1/jobs/([^/]+))",
                   [this](const httplib::Request& req, httplib::Response& res) {
                     auto id = ParseId(req.matches[1]);
                     if (!id.ok()) return SendError(res, id.status());
                     auto record = api_->Cancel(*id);
                     if (!record.ok()) return SendError(res, record.status());
                     SendJson(res, 200, JobRecordToJson(*record));
                   });
    server_.Get(R"(/v1/jobs/([^/]+)/log)",
                [this](const httplib::Request& req, httplib::Response& res) { Log(req, res); });
    server_.Get("/v1/gpus", [this](const httplib::Request&, httplib::Response& res) {
      ojson gpus = ojson::array();
      for (const GpuView& g : api_->Gpus()) gpus.push_back(GpuViewToJson(g));
      SendJson(res, 200, ojson{{"gpus", std::move(gpus)}});
    });
    server_.Post("/v1/plan", [this](const httplib::Request& req, httplib::Response& res) {
      auto request = ParseJobRequest(req.body);
      if (!request.ok()) return SendError(res, request.status());
      auto plan = api_->PreviewPlan(*request);
      if (!plan.ok()) return SendError(res, plan.status());
      SendJson(res, 200, PlanPreviewToJson(*plan));
    });
    server_.Post("/v1/scheduler/pause", [this](const httplib::Request&, httplib::Response& res) {
      api_->Pause();
      spdlog::info("scheduler paused through the API");
      SendJson(res, 200, ojson{{"paused", api_->paused()}});
    });
    server_.Post("/v1/scheduler/resume", [this](const httplib::Request&, httplib::Response& res) {
      api_->Resume();
      spdlog::info("scheduler resumed through the API");
      SendJson(res, 200, ojson{{"paused", api_->paused()}});
    });
    server_.Post(R"(/v1/gpus/([^/]+)/(drain|undrain))",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   const std::string s = req.matches[1];
                   const bool drain = req.matches[2] == "drain";
                   int gpu = -1;
                   auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), gpu);
                   if (ec != std::errc() || p != s.data() + s.size() || gpu < 0) {
                     return SendError(res, InvalidArgumentError(fmt::format(
                                               "GPU index '{}' is not a non-negative integer", s)));
                   }
                   if (Status st = drain ? api_->Drain(gpu) : api_->Undrain(gpu); !st.ok()) {
                     return SendError(res, st);
                   }
                   spdlog::info("GPU {} {} through the API", gpu, drain ? "drained" : "undrained");
                   SendJson(res, 200, ojson{{"gpu", gpu}, {"draining", drain}});
                 });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_content(RenderPrometheus(api_->Metrics(), api_->paused()),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
  }

  void Log(const httplib::Request& req, httplib::Response& res) {
    auto id = ParseId(req.matches[1]);
    if (!id.ok()) return SendError(res, id.status());
    auto record = api_->GetJob(*id);
    if (!record.ok()) return SendError(res, record.status());
    const std::filesystem::path path = api_->LogPath(*id);
    const std::string follow = req.get_param_value("follow");
    res.status = 200;
    if (follow != "1" && follow != "true") {
      std::error_code ec;
      const uintmax_t size = std::filesystem::file_size(path, ec);
      if (ec || size == 0) {
        res.set_content("", "text/plain; charset=utf-8");
        return;
      }
      res.set_content_provider(static_cast<size_t>(size), "text/plain; charset=utf-8",
                               [path](size_t offset, size_t length, httplib::DataSink& sink) {
                                 const std::string chunk =
                                     ReadChunk(path, offset, std::min<size_t>(length, 1 << 16));
                                 if (chunk.empty())
                                   return false;  // the file shrank: end the response
                                 return sink.write(chunk.data(), chunk.size());
                               });
      return;
    }
    const DaemonJobId job = *id;
    const int poll_ms = opt_.follow_poll_ms > 0 ? opt_.follow_poll_ms : 100;
    res.set_chunked_content_provider(
        "text/plain; charset=utf-8",
        [this, path, job, poll_ms](size_t offset, httplib::DataSink& sink) {
          if (stopping_ || !sink.is_writable()) return false;
          // Was the job terminal before this read? Then what is read now is all there is.
          auto r = api_->GetJob(job);
          const bool terminal = !r.ok() || IsTerminal(r->state);
          const std::string chunk = ReadChunk(path, offset, 1 << 16);
          if (!chunk.empty()) return sink.write(chunk.data(), chunk.size());
          if (terminal) {
            sink.done();
            return true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
          return true;
        });
  }

  JobApi* api_;
  HttpServerOptions opt_;
  httplib::Server server_;
  std::atomic<bool> stopping_{false};
  bool bound_ = false;
  int port_ = 0;
};

HttpServer::HttpServer(JobApi* api, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(api, std::move(options))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
Status HttpServer::Bind(const std::string& listen) { return impl_->Bind(listen); }
int HttpServer::port() const { return impl_->port(); }
Status HttpServer::Serve() { return impl_->Serve(); }
void HttpServer::Stop() { impl_->Stop(); }

}  // namespace migsched
