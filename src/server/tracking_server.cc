// The tracking server: routing between the API, static files and /health.
#include "server/tracking_server.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/sweep_journal_api.h"
#include "track/errors.h"

namespace cohort::server {
namespace {

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
  std::string uri = options.store_uri.empty() ? track::DefaultStoreUri() : options.store_uri;
  auto store = track::OpenStore(uri);
  if (!store.ok()) return store.status();
  server->store_ = std::move(*store);
  if (!options.artifacts.empty()) {
    auto artifacts = data::OpenStorage(options.artifacts, /*create=*/true);
    if (!artifacts.ok()) return artifacts.status().WithContext("--artifacts " + options.artifacts);
    server->artifacts_ = std::move(*artifacts);
  }
  server->api_ = std::make_unique<MlflowApi>(server->store_.get(), server->artifacts_.get());
  server->access_ = std::make_unique<AccessControl>(server->store_.get());
  auto http = HttpServer::Start(options.host, options.port,
                                [s = server.get()](const HttpRequest& r) { return s->Handle(r); });
  if (!http.ok()) return http.status();
  server->http_ = std::move(*http);
  return server;
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
  std::string header = request.Header("authorization");
  const std::string bearer = "Bearer ";
  if (header.rfind(bearer, 0) != 0 || header.size() == bearer.size()) {
    return MlflowError("UNAUTHENTICATED",
                       "This server requires a token: send 'Authorization: Bearer TOKEN' "
                       "(tokens come from `cohort token create USER`)");
  }
  auto user = store_->UserForToken(header.substr(bearer.size()));
  if (!user.ok()) {
    if (track::KindOf(user.status()) == track::ErrorKind::kNotFound) {
      return MlflowError("UNAUTHENTICATED", "Invalid token");
    }
    return MlflowError(user.status());
  }
  *user_name = *user;
  return std::nullopt;
}

HttpResponse TrackingServer::ServeStatic(const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return NotFound(request.path);
  if (options_.web_dir.empty()) return NotFound(request.path);
  std::string relative = request.path == "/" ? "index.html" : request.path.substr(1);
  std::filesystem::path root = std::filesystem::weakly_canonical(options_.web_dir);
  std::filesystem::path file = std::filesystem::weakly_canonical(root / relative);
  // Nothing outside the web directory, whatever the path says.
  auto [r, f] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (r != root.end() || !std::filesystem::is_regular_file(file)) return NotFound(request.path);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  HttpResponse response;
  response.content_type = ContentType(file.string());
  response.body = bytes.str();
  return response;
}

}  // namespace cohort::server
