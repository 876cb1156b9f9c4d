// RequestGuard: the checks that keep other web sites away from `cohort
// server`, made on each request's head before anything else.
//  - Host must name this server (DNS rebinding: a page of evil.example whose
//    name now resolves to 127.0.0.1 sends "Host: evil.example:5000"): an IP
//    address, localhost, the --host name, or a name of --allowed-hosts.
//  - Origin, when a browser sends one, must be the server's own (the
//    dashboard's): a page elsewhere may not read or change anything.
//  - A request that changes state must carry a Content-Type a cross-site
//    form or no-cors fetch cannot send (those get text/plain, a form type,
//    or none), so a browser would first ask with a CORS preflight, which
//    this server never grants.
#ifndef COHORT_HTTP_SERVER_REQUEST_GUARD_H_
#define COHORT_HTTP_SERVER_REQUEST_GUARD_H_

#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "http/server/http_message.h"

namespace cohort::http {

// A refused request: the HTTP status and why.
struct Refusal {
  int status;
  std::string message;
};

// What an endpoint takes as a body, for the Content-Type rule.
enum class BodyKind {
  kJson,   // POST/PUT/PATCH/DELETE need application/json
  kBytes,  // POST/PATCH need a type outside the CORS-safelisted three (e.g.
           // application/octet-stream); PUT/DELETE take any (browsers
           // cannot send them cross-origin without a preflight)
};

class RequestGuard {
 public:
  // `listen_host`: the --host the server listens on; `allowed_hosts`: more
  // names ("name", ".domain" for it and its subdomains, "*" for any).
  RequestGuard(std::string listen_host, std::vector<std::string> allowed_hosts);

  // nullopt when the request may go on.
  std::optional<Refusal> Check(const ServerRequest& request, BodyKind body) const;

  // Whether `name` (lower case, no port, IPv6 in brackets) names this server.
  bool AllowedHostName(const std::string& name) const;

 private:
  std::optional<Refusal> CheckHost(const ServerRequest& request) const;
  std::optional<Refusal> CheckOrigin(const ServerRequest& request) const;
  static std::optional<Refusal> CheckContentType(const ServerRequest& request, BodyKind body);

  std::string listen_host_;
  std::vector<std::string> allowed_hosts_;
};

// "--allowed-hosts a,b,.c": the names, lower case; an error for an empty one.
Result<std::vector<std::string>> ParseAllowedHosts(const std::string& text);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_REQUEST_GUARD_H_
