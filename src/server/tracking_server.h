// TrackingServer: what `cohort server` runs. The MLflow REST API and the
// artifact proxy over one store, the dashboard's static files from a web
// directory, and /health for readiness checks, on one HttpServer.
#ifndef COHORT_SERVER_TRACKING_SERVER_H_
#define COHORT_SERVER_TRACKING_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "data/storage.h"
#include "server/access_control.h"
#include "server/http_server.h"
#include "server/mlflow_api.h"
#include "track/store.h"

namespace cohort::server {

// Another service's endpoints (the queue's, src/queue) under `prefix`,
// behind the same authentication: `user` is the token's user with --auth,
// else "". A hook with `own_auth` authenticates its requests itself (the
// queue: its token, agents' credentials) and gets "".
struct RouteHook {
  std::string prefix;
  std::function<HttpResponse(const HttpRequest& request, const std::string& user)> handle;
  bool own_auth = false;
};

struct TrackingServerOptions {
  std::string store_uri;  // "sqlite:PATH"; empty = track::DefaultStoreUri()
  std::string host = "127.0.0.1";
  int port = 5000;        // 0 = any free port
  std::string artifacts;  // directory or s3://...; empty = no artifact proxy
  std::string web_dir;    // the dashboard's built files; empty or missing = none
  // Every API and artifact request must carry "Authorization: Bearer TOKEN"
  // of a user of the store (`cohort user add`, `cohort token create`).
  bool auth = false;
  std::vector<RouteHook> routes;
};

class TrackingServer {
 public:
  static Result<std::unique_ptr<TrackingServer>> Start(const TrackingServerOptions& options);
  int port() const { return http_->port(); }
  // The store it serves, for hooks that authenticate themselves.
  track::TrackingStore* store() const { return store_.get(); }
  void Stop() { http_->Stop(); }

 private:
  TrackingServer() = default;
  HttpResponse Handle(const HttpRequest& request);
  HttpResponse ServeStatic(const HttpRequest& request);
  // nullopt when the request may go on (with --auth, *user is who sent
  // it); else the 401 to answer.
  std::optional<HttpResponse> Authenticate(const HttpRequest& request, std::string* user);

  TrackingServerOptions options_;
  std::unique_ptr<track::TrackingStore> store_;
  std::unique_ptr<data::Storage> artifacts_;
  std::unique_ptr<MlflowApi> api_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<HttpServer> http_;  // last: stops before what it uses goes
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_TRACKING_SERVER_H_
