// The tracking server: its services composed on one Router, the checks on
// each request's head, then authentication and the route.
#include "server/tracking_server.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "server/api_response.h"
#include "server/artifact_api.h"
#include "server/dashboard_files.h"
#include "server/mlflow_api.h"
#include "server/pipeline_status_api.h"
#include "server/sweep_journal_api.h"
#include "track/sqlite_store.h"

namespace cohort::server {
namespace {

// How often the server looks for runs whose heartbeats stopped, and how long
// after its start before deadlines that passed while it was down count.
constexpr double kLostRunCheckS = 1;
constexpr double kLostRunSettleS = 60;

const char kBearer[] = "Bearer ";

bool HasBearerToken(const http::ServerRequest& request) {
  std::string header = request.Header("authorization");
  return header.rfind(kBearer, 0) == 0 && header.size() > sizeof kBearer - 1;
}

http::ServerResponse MissingToken() {
  return ErrorResponse(
      Status::Unauthenticated("This server requires a token: send 'Authorization: Bearer TOKEN' "
                              "(tokens come from `cohort token create USER`)"));
}

}  // namespace

Result<std::unique_ptr<TrackingServer>> TrackingServer::Start(
    const TrackingServerOptions& options) {
  std::unique_ptr<TrackingServer> server(new TrackingServer());
  server->options_ = options;
  server->guard_.emplace(options.host, options.allowed_hosts);
  std::string uri = options.store_uri.empty() ? track::DefaultStoreUri() : options.store_uri;
  auto store = track::OpenStore(uri);
  if (!store.ok()) return store.status();
  server->store_ = std::move(*store);
  std::string artifacts_location = options.artifacts;
  if (artifacts_location.empty() && uri.rfind("sqlite:", 0) == 0) {
    // As an embedded client keeps them: artifacts/ beside the store's file.
    artifacts_location =
        (std::filesystem::path(track::ExpandHome(uri.substr(7))).parent_path() / "artifacts")
            .string();
  }
  if (!artifacts_location.empty()) {
    auto artifacts = artifacts::OpenArtifactStore(artifacts_location);
    if (!artifacts.ok()) {
      return artifacts.status().WithContext(
          options.artifacts.empty() ? "artifacts beside the store, " + artifacts_location
                                    : "--artifacts " + options.artifacts);
    }
    server->artifacts_ = std::move(*artifacts);
  }
  server->access_ = std::make_unique<AccessControl>(server->store_.get());
  server->ComposeServices();
  http::HttpServerOptions http = options.http;
  http.admit = [s = server.get()](const http::ServerRequest& head) { return s->Admit(head); };
  auto started = http::HttpServer::Start(
      options.host, options.port,
      [s = server.get()](const http::ServerRequest& r) { return s->Handle(r); }, http);
  if (!started.ok()) return started.status();
  server->http_ = std::move(*started);
  server->reaper_ = std::thread([s = server.get()] { s->EndLostRuns(); });
  return server;
}

void TrackingServer::EndLostRuns() {
  using Clock = std::chrono::system_clock;
  const auto started = Clock::now();
  auto millis = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  std::unique_lock<std::mutex> lock(reaper_mu_);
  while (!reaper_wake_.wait_for(lock, std::chrono::duration<double>(kLostRunCheckS),
                                [&] { return stopping_; })) {
    lock.unlock();
    const auto now = Clock::now();
    // Deadlines that passed while this server was down are left to the
    // clients' next beats until every live client has had time to beat.
    const int64_t since = now - started >= std::chrono::duration<double>(kLostRunSettleS)
                              ? std::numeric_limits<int64_t>::min()
                              : millis(started);
    auto ended = store_->EndLostRuns(millis(now), since);
    if (!ended.ok()) {
      std::fprintf(stderr, "cohort server: ending runs whose heartbeats stopped: %s\n",
                   ended.status().message().c_str());
    }
    lock.lock();
  }
}

void TrackingServer::StopReaper() {
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    stopping_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

void TrackingServer::Stop() {
  StopReaper();
  http_->Stop();
}

TrackingServer::~TrackingServer() { StopReaper(); }

void TrackingServer::ComposeServices() {
  AccessControl* access = options_.auth ? access_.get() : nullptr;
  services_.push_back(std::make_unique<MlflowApi>(store_.get(), access));
  services_.push_back(std::make_unique<ArtifactApi>(artifacts_.get(), access));
  services_.push_back(std::make_unique<SweepJournalApi>(store_.get(), access));
  services_.push_back(std::make_unique<PipelineStatusApi>(store_.get()));
  services_.push_back(std::make_unique<DashboardFiles>(options_.web_dir));
  for (const auto& service : services_) service->Register(router_);
  for (Service* service : options_.services) service->Register(router_);
}

http::Admission TrackingServer::Admit(const http::ServerRequest& head) const {
  http::Admission admission;
  const Mount* mount = router_.MountOf(head.path);
  if (std::optional<http::Refusal> refused = guard_->Check(head, mount->body)) {
    admission.refuse =
        JsonResponse(refused->status,
                     {{"error_code", refused->status == 403 ? "PERMISSION_DENIED" : "BAD_REQUEST"},
                      {"message", refused->message}});
    return admission;
  }
  // Without a token there is no need to read a body (the token itself is
  // checked against the store later, off the event loop).
  if (options_.auth && mount->auth == Auth::kServer && !HasBearerToken(head)) {
    admission.refuse = MissingToken();
    return admission;
  }
  switch (mount->size) {
    case BodySize::kJson:
      admission.body_limit = options_.max_json_bytes;
      break;
    case BodySize::kUpload:
      admission.body_limit = options_.max_artifact_bytes;
      break;
    case BodySize::kSmall:
      admission.body_limit = options_.max_other_bytes;
      break;
  }
  if (head.method == "PUT") admission.spool_dir = mount->upload_spool_dir;
  return admission;
}

http::ServerResponse TrackingServer::Handle(const http::ServerRequest& request) {
  const Mount* mount = router_.MountOf(request.path);
  std::string user;
  if (mount->auth == Auth::kServer) {
    if (auto refused = Authenticate(request, &user)) return *refused;
  }
  return router_.Dispatch(*mount, request, user);
}

std::optional<http::ServerResponse> TrackingServer::Authenticate(const http::ServerRequest& request,
                                                                 std::string* user_name) {
  if (!options_.auth) return std::nullopt;
  if (!HasBearerToken(request)) return MissingToken();
  std::string header = request.Header("authorization");
  auto user = store_->UserForToken(header.substr(sizeof kBearer - 1));
  if (!user.ok()) {
    if (user.status().IsNotFound()) return ErrorResponse(Status::Unauthenticated("Invalid token"));
    return ErrorResponse(user.status());
  }
  *user_name = *user;
  return std::nullopt;
}

}  // namespace cohort::server
