// Host, Origin and Content-Type checks against cross-site requests.
#include "http/server/request_guard.h"

#include <arpa/inet.h>

#include <cctype>

namespace cohort::http {
namespace {

struct HostPort {
  std::string host;  // lower case, IPv6 in brackets, no trailing dot
  std::string port;  // digits, or "" when absent
};

// "name", "name:port", "1.2.3.4:port", "[::1]:port"; nullopt when malformed
// (a bare IPv6 address, an empty name, a port that is not a number).
std::optional<HostPort> SplitHostPort(const std::string& text) {
  HostPort out;
  std::string rest;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return std::nullopt;
    out.host = AsciiLower(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    size_t colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      return std::nullopt;
    }
    out.host = AsciiLower(text.substr(0, colon));
    rest = colon == std::string::npos ? "" : text.substr(colon);
  }
  if (!rest.empty()) {
    out.port = rest.substr(1);
    if (rest[0] != ':' || out.port.empty() || out.port.size() > 5 ||
        out.port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(out.port) > 65535) {
      return std::nullopt;
    }
  }
  if (!out.host.empty() && out.host.back() == '.') out.host.pop_back();
  if (out.host.empty() || out.host.find_first_of("/?#@ \t") != std::string::npos) {
    return std::nullopt;
  }
  return out;
}

// An IP address needs no DNS, so it cannot be rebound to this server.
bool IsIpLiteral(const std::string& host) {
  unsigned char addr[16];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), addr) == 1;
  }
  return inet_pton(AF_INET, host.c_str(), addr) == 1;
}

bool Changes(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

}  // namespace

RequestGuard::RequestGuard(std::string listen_host, std::vector<std::string> allowed_hosts)
    : listen_host_(AsciiLower(std::move(listen_host))), allowed_hosts_(std::move(allowed_hosts)) {}

bool RequestGuard::AllowedHostName(const std::string& name) const {
  if (IsIpLiteral(name) || name == "localhost" || name == listen_host_) return true;
  for (const std::string& allowed : allowed_hosts_) {
    if (allowed == "*" || name == allowed) return true;
    if (allowed[0] == '.' &&
        (name == allowed.substr(1) ||
         (name.size() > allowed.size() &&
          name.compare(name.size() - allowed.size(), allowed.size(), allowed) == 0))) {
      return true;
    }
  }
  return false;
}

std::optional<Refusal> RequestGuard::Check(const ServerRequest& request, BodyKind body) const {
  if (auto refused = CheckHost(request)) return refused;
  if (auto refused = CheckOrigin(request)) return refused;
  return CheckContentType(request, body);
}

std::optional<Refusal> RequestGuard::CheckHost(const ServerRequest& request) const {
  std::string host = request.Header("host");
  if (host.empty()) return std::nullopt;  // HTTP/1.0 (HTTP/1.1 needs one: the server checks)
  std::optional<HostPort> split = SplitHostPort(host);
  if (!split) return Refusal{400, "malformed Host header '" + host + "'"};
  if (AllowedHostName(split->host)) return std::nullopt;
  return Refusal{403, "Host '" + host + "' does not name this server; start it with " +
                          "--allowed-hosts " + split->host + " to accept that name"};
}

std::optional<Refusal> RequestGuard::CheckOrigin(const ServerRequest& request) const {
  auto it = request.headers.find("origin");
  if (it == request.headers.end()) return std::nullopt;  // not a browser, or a same-origin read
  const std::string& origin = it->second;
  std::string host = request.Header("host");
  Refusal refused{403, "Origin '" + origin + "' is not this server's origin (" +
                           (host.empty() ? std::string("no Host header") : "http://" + host) +
                           "): cross-site requests are refused"};
  std::string lower = AsciiLower(origin);
  std::string scheme = lower.rfind("http://", 0) == 0    ? "http"
                       : lower.rfind("https://", 0) == 0 ? "https"
                                                         : "";
  if (scheme.empty()) return refused;  // "null" (sandboxed pages, file:) or another scheme
  std::optional<HostPort> from = SplitHostPort(origin.substr(scheme.size() + 3));
  if (!from) return refused;
  if (host.empty()) return AllowedHostName(from->host) ? std::nullopt : std::optional(refused);
  std::optional<HostPort> to = SplitHostPort(host);
  if (!to || to->host != from->host) return refused;
  // A Host without a port is the scheme's default one (behind a proxy).
  std::string from_port = from->port.empty() ? (scheme == "https" ? "443" : "80") : from->port;
  if (!to->port.empty() && to->port != from_port) return refused;
  return std::nullopt;
}

std::optional<Refusal> RequestGuard::CheckContentType(const ServerRequest& request, BodyKind body) {
  if (!Changes(request.method)) return std::nullopt;
  std::string type = request.Header("content-type");
  std::string media = AsciiLower(TrimSpaces(type.substr(0, type.find(';'))));
  std::string got = " (got " + (type.empty() ? std::string("none") : type) + ")";
  std::string what = request.method + " " + request.path;
  if (body == BodyKind::kJson) {
    if (media == "application/json") return std::nullopt;
    return Refusal{415, what + " needs Content-Type: application/json" + got};
  }
  if (request.method == "PUT" || request.method == "DELETE") return std::nullopt;
  if (!media.empty() && media != "text/plain" && media != "application/x-www-form-urlencoded" &&
      media != "multipart/form-data") {
    return std::nullopt;
  }
  return Refusal{415, what + " needs a Content-Type other than text/plain, " +
                          "application/x-www-form-urlencoded or multipart/form-data" + got +
                          ": any web page can send those"};
}

Result<std::vector<std::string>> ParseAllowedHosts(const std::string& text) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string name = AsciiLower(TrimSpaces(text.substr(pos, comma - pos)));
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (name.empty() || name == ".") {
      return Status::InvalidArgument("--allowed-hosts '" + text +
                                     "': names are separated by commas, none empty");
    }
    names.push_back(name);
    pos = comma + 1;
  }
  return names;
}

}  // namespace cohort::http
