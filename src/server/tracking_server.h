// TrackingServer: what `cohort server` runs. Services on one Router and one
// HttpServer: the MLflow REST API, the artifact proxy and the sweep journal
// over one store, the dashboard's files and /health, and any the caller
// adds (the job queue). Every request's head passes the RequestGuard (Host,
// Origin, Content-Type) and gets its mount's body limit before its body is
// read; a mount with Auth::kServer needs a user's token under --auth.
#ifndef COHORT_SERVER_TRACKING_SERVER_H_
#define COHORT_SERVER_TRACKING_SERVER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "artifacts/artifact_store.h"
#include "cohort/status.h"
#include "http/server/http_server.h"
#include "http/server/request_guard.h"
#include "server/access_control.h"
#include "server/router.h"
#include "track/store.h"

namespace cohort::server {

struct TrackingServerOptions {
  std::string store_uri;  // "sqlite:PATH"; empty = track::DefaultStoreUri()
  std::string host = "127.0.0.1";
  int port = 5000;  // 0 = any free port
  // Directory or s3://...; empty = artifacts/ beside a SQLite store's file
  // (no artifact proxy for another store).
  std::string artifacts;
  std::string web_dir;  // the dashboard's built files; empty or missing = none
  // Every API and artifact request must carry "Authorization: Bearer TOKEN"
  // of a user of the store (`cohort user add`, `cohort token create`).
  bool auth = false;
  // Services besides the server's own (MLflow, artifacts, sweep journal,
  // dashboard files), not owned: they outlive the server (the queue's).
  std::vector<Service*> services;
  // Host names besides IP addresses, localhost and `host` that requests
  // may name (--allowed-hosts): "name", ".domain" (and its subdomains), "*".
  std::vector<std::string> allowed_hosts;
  uint64_t max_json_bytes = 16 << 20;        // a JSON API request's body
  uint64_t max_artifact_bytes = 512u << 20;  // an artifact upload (streamed to disk)
  uint64_t max_other_bytes = 64 << 10;       // anything else (static files, /health)
  http::HttpServerOptions http;              // connections, deadlines, threads
};

class TrackingServer {
 public:
  static Result<std::unique_ptr<TrackingServer>> Start(const TrackingServerOptions& options);
  int port() const { return http_->port(); }
  // The store it serves, for hooks that authenticate themselves.
  track::TrackingStore* store() const { return store_.get(); }
  void Stop();
  ~TrackingServer();

 private:
  TrackingServer() = default;
  // The head's checks and body limit (HttpServerOptions::admit).
  http::Admission Admit(const http::ServerRequest& head) const;
  http::ServerResponse Handle(const http::ServerRequest& request);
  // The server's own services on router_, then options_.services.
  void ComposeServices();
  // nullopt when the request may go on (with --auth, *user is who sent
  // it); else the 401 to answer.
  std::optional<http::ServerResponse> Authenticate(const http::ServerRequest& request,
                                                   std::string* user);
  // Every kLostRunCheckS: ends the runs whose heartbeats stopped
  // (TrackingStore::EndLostRuns), until Stop.
  void EndLostRuns();
  void StopReaper();

  TrackingServerOptions options_;
  std::optional<http::RequestGuard> guard_;
  std::unique_ptr<track::TrackingStore> store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
  std::unique_ptr<AccessControl> access_;
  std::vector<std::unique_ptr<Service>> services_;
  Router router_;  // complete before the HTTP server starts; read-only after
  std::mutex reaper_mu_;
  std::condition_variable reaper_wake_;
  bool stopping_ = false;                   // under reaper_mu_
  std::thread reaper_;                      // EndLostRuns
  std::unique_ptr<http::HttpServer> http_;  // last: stops before what it uses goes
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_TRACKING_SERVER_H_
