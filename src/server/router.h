// Router: which handler answers a request. Each API of `cohort server` is a
// Service (MLflow REST, artifacts, queue, sweep journal, dashboard files)
// that mounts its part of the path space (prefixes, who authenticates its
// callers, what its bodies carry) and adds its routes there: a method set
// and a pattern of path segments ("jobs/{id}/cancel"; a last "*" takes the
// rest of the path). The server consults the mount of a request's path
// before its body is read (guard, authentication, body limit) and then the
// route. Errors a handler answers go through server/api_response.h.
#ifndef COHORT_SERVER_ROUTER_H_
#define COHORT_SERVER_ROUTER_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "http/server/http_message.h"
#include "http/server/request_guard.h"

namespace cohort::server {

// Who checks a request's caller before its handler runs.
enum class Auth {
  kServer,   // the server: under --auth a user's "Authorization: Bearer" token
  kService,  // the service itself (the queue: its token, agents' credentials)
  kNone,     // nobody (the dashboard's files, /health)
};

// Which of the server's body limits applies (TrackingServerOptions).
enum class BodySize { kJson, kUpload, kSmall };

// One call of a route.
struct Call {
  const http::ServerRequest& request;
  const std::string& user;  // Auth::kServer under --auth: the token's user; else ""
  std::map<std::string, std::string> params;  // "{name}" -> its segment, "*" -> the rest

  // The parameter `name` ("" when the pattern has none).
  const std::string& Param(const std::string& name) const;
};

using Handler = std::function<http::ServerResponse(const Call& call)>;

// A service's part of the path space.
struct Mount {
  std::vector<std::string> prefixes;  // a path starting with one is this mount's
  Auth auth = Auth::kServer;
  http::BodyKind body = http::BodyKind::kJson;  // the Content-Type http::RequestGuard expects
  BodySize size = BodySize::kJson;
  std::string upload_spool_dir;  // non-empty: PUT bodies stream to a file there
  Handler no_route;              // a path under the prefixes that no route has
  Handler wrong_method;          // a route's path, another method; empty = no_route
};

class Router {
 public:
  // Where a Service adds the routes of the mount it made.
  class Routes {
   public:
    // `methods` empty: any method. The first route whose pattern and method
    // match answers.
    Routes& Add(std::set<std::string> methods, const std::string& pattern, Handler handler);

   private:
    friend class Router;
    struct Route {
      std::set<std::string> methods;
      std::vector<std::string> segments;
      Handler handler;
    };
    Mount mount_;
    std::vector<Route> routes_;
  };

  Routes& AddMount(Mount mount);

  // The mount whose longest prefix starts `path`; null when none does.
  const Mount* MountOf(const std::string& path) const;

  // The answer of the route `request` matches in `mount` (MountOf its path),
  // or of the mount's no_route / wrong_method.
  http::ServerResponse Dispatch(const Mount& mount, const http::ServerRequest& request,
                                const std::string& user) const;

 private:
  const Routes* RoutesOf(const std::string& path, std::string* rest) const;

  std::vector<std::unique_ptr<Routes>> mounts_;  // stable addresses
};

// An API of the server: it mounts its part of the path space and adds its routes.
class Service {
 public:
  virtual ~Service() = default;
  virtual void Register(Router& router) = 0;
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_ROUTER_H_
