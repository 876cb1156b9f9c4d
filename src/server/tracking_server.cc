// The tracking server: the checks on each request's head, then routing
// between the API, static files and /health.
#include "server/tracking_server.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "server/sweep_journal_api.h"
#include "track/errors.h"
#include "track/sqlite_store.h"

namespace cohort::server {
namespace {

// How often the server looks for runs whose heartbeats stopped, and how long
// after its start before deadlines that passed while it was down count.
constexpr double kLostRunCheckS = 1;
constexpr double kLostRunSettleS = 60;

const char* ContentType(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

const char kBearer[] = "Bearer ";

bool HasBearerToken(const HttpRequest& request) {
  std::string header = request.Header("authorization");
  return header.rfind(kBearer, 0) == 0 && header.size() > sizeof kBearer - 1;
}

HttpResponse MissingToken() {
  return MlflowError("UNAUTHENTICATED",
                     "This server requires a token: send 'Authorization: Bearer TOKEN' "
                     "(tokens come from `cohort token create USER`)");
}

HttpResponse NotFound(const std::string& path) {
  HttpResponse r;
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "404 not found: " + path + "\n";
  return r;
}

}  // namespace

Result<std::unique_ptr<TrackingServer>> TrackingServer::Start(
    const TrackingServerOptions& options) {
  std::unique_ptr<TrackingServer> server(new TrackingServer());
  server->options_ = options;
  server->guard_.emplace(options.host, options.allowed_hosts);
  if (!options.web_dir.empty()) {
    std::error_code ec;
    std::filesystem::path root =
        std::filesystem::weakly_canonical(std::filesystem::absolute(options.web_dir, ec), ec);
    if (!ec) server->web_root_ = root.string();
  }
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
    auto artifacts = OpenArtifactStore(artifacts_location);
    if (!artifacts.ok()) {
      return artifacts.status().WithContext(
          options.artifacts.empty() ? "artifacts beside the store, " + artifacts_location
                                    : "--artifacts " + options.artifacts);
    }
    server->artifacts_ = std::move(*artifacts);
  }
  server->api_ = std::make_unique<MlflowApi>(server->store_.get(), server->artifacts_.get());
  server->access_ = std::make_unique<AccessControl>(server->store_.get());
  HttpServerOptions http = options.http;
  http.admit = [s = server.get()](const HttpRequest& head) { return s->Admit(head); };
  auto started = HttpServer::Start(
      options.host, options.port, [s = server.get()](const HttpRequest& r) { return s->Handle(r); },
      http);
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

Admission TrackingServer::Admit(const HttpRequest& head) const {
  Admission admission;
  const bool artifacts = MlflowApi::ServesArtifacts(head.path);
  const bool hook =
      std::any_of(options_.routes.begin(), options_.routes.end(),
                  [&](const RouteHook& r) { return head.path.rfind(r.prefix, 0) == 0; });
  const bool api =
      hook || MlflowApi::Serves(head.path) || head.path.rfind(kSweepJournalPrefix, 0) == 0;
  // Uploads are bytes; a hooked service (the queue) parses its own bodies.
  BodyKind kind = artifacts || hook ? BodyKind::kBytes : BodyKind::kJson;
  if (std::optional<Refusal> refused = guard_->Check(head, kind)) {
    admission.refuse =
        JsonResponse(refused->status,
                     {{"error_code", refused->status == 403 ? "PERMISSION_DENIED" : "BAD_REQUEST"},
                      {"message", refused->message}});
    return admission;
  }
  // Without a token there is no need to read a body (the token itself is
  // checked against the store later, off the event loop). A hooked service
  // authenticates its own requests.
  if (options_.auth && api && !hook && !HasBearerToken(head)) {
    admission.refuse = MissingToken();
    return admission;
  }
  admission.body_limit = artifacts ? options_.max_artifact_bytes
                         : api     ? options_.max_json_bytes
                                   : options_.max_other_bytes;
  if (artifacts && head.method == "PUT" && artifacts_ != nullptr) {
    admission.spool_dir = artifacts_->spool_dir();
  }
  return admission;
}

HttpResponse TrackingServer::Handle(const HttpRequest& request) {
  if (MlflowApi::Serves(request.path)) {
    std::string user;
    if (auto refused = Authenticate(request, &user)) return *refused;
    if (!options_.auth) return api_->Handle(request);
    if (auto denied = access_->Check(request, user)) return *denied;
    HttpResponse response = api_->Handle(request);
    access_->After(request, user, &response);
    return response;
  }
  if (request.path.rfind(kSweepJournalPrefix, 0) == 0) {
    std::string user;
    if (auto refused = Authenticate(request, &user)) return *refused;
    return HandleSweepJournal(*store_, options_.auth ? access_.get() : nullptr, request, user);
  }
  for (const RouteHook& route : options_.routes) {
    if (request.path.rfind(route.prefix, 0) != 0) continue;
    std::string user;
    if (route.own_auth) return route.handle(request, user);
    if (auto refused = Authenticate(request, &user)) return *refused;
    return route.handle(request, user);
  }
  if (request.path == "/health") {
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "OK";
    return r;
  }
  return ServeStatic(request);
}

std::optional<HttpResponse> TrackingServer::Authenticate(const HttpRequest& request,
                                                         std::string* user_name) {
  if (!options_.auth) return std::nullopt;
  if (!HasBearerToken(request)) return MissingToken();
  std::string header = request.Header("authorization");
  auto user = store_->UserForToken(header.substr(sizeof kBearer - 1));
  if (!user.ok()) {
    if (track::KindOf(user.status()) == track::ErrorKind::kNotFound) {
      return MlflowError("UNAUTHENTICATED", "Invalid token");
    }
    return MlflowError(user.status());
  }
  *user_name = *user;
  return std::nullopt;
}

// A file of the web folder, sent from the open file. Nothing outside the
// folder, whatever the path says; every failure (a name too long, a loop of
// links) is a 404, never an exception.
HttpResponse TrackingServer::ServeStatic(const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return NotFound(request.path);
  if (web_root_.empty() || request.path.find('\0') != std::string::npos) {
    return NotFound(request.path);
  }
  std::string relative = request.path == "/" ? "index.html" : request.path.substr(1);
  const std::filesystem::path root(web_root_);
  std::error_code ec;
  std::filesystem::path file = std::filesystem::weakly_canonical(root / relative, ec);
  if (ec) return NotFound(request.path);
  auto [r, f] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (r != root.end()) return NotFound(request.path);
  auto body = std::make_shared<FileBody>();
  body->fd = Fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!body->fd.valid() || ::fstat(body->fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound(request.path);
  }
  body->size = static_cast<uint64_t>(st.st_size);
  HttpResponse response;
  response.content_type = ContentType(file.string());
  response.file = std::move(body);
  return response;
}

}  // namespace cohort::server
