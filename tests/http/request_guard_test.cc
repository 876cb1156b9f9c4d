// RequestGuard: which Host, Origin and Content-Type a request may carry
// (issue 25 item 1: a web page could make a default `cohort server` run
// commands with a no-cors text/plain POST, and DNS rebinding reaches it
// under another name).
#include "http/server/request_guard.h"

#include <gtest/gtest.h>

namespace cohort::http {
namespace {

ServerRequest Request(const std::string& method, const std::string& host,
                      const std::string& origin = "", const std::string& type = "") {
  ServerRequest r;
  r.method = method;
  r.path = "/api/2.0/mlflow/experiments/create";
  if (!host.empty()) r.headers["host"] = host;
  if (!origin.empty()) r.headers["origin"] = origin;
  if (!type.empty()) r.headers["content-type"] = type;
  return r;
}

int StatusOf(const RequestGuard& guard, const ServerRequest& r, BodyKind kind = BodyKind::kJson) {
  auto refused = guard.Check(r, kind);
  return refused ? refused->status : 0;
}

TEST(RequestGuard, HostMustNameThisServer) {
  RequestGuard guard("127.0.0.1", {"tracking.example.org", ".corp.example"});
  for (const char* ok : {"127.0.0.1:5000", "localhost:5000", "LocalHost", "[::1]:5000", "10.0.0.7",
                         "192.168.1.1:80", "[fe80::1]", "tracking.example.org",
                         "tracking.example.org.:443", "corp.example", "a.b.corp.example:5000"}) {
    EXPECT_EQ(StatusOf(guard, Request("GET", ok)), 0) << ok;
  }
  for (const char* bad : {"evil.example:5000", "localhost.evil.example", "127.0.0.1.nip.io",
                          "xcorp.example", "tracking.example.org.evil", "2130706433", "0x7f.1"}) {
    EXPECT_EQ(StatusOf(guard, Request("GET", bad)), 403) << bad;
  }
  auto refused = guard.Check(Request("GET", "evil.example:5000"), BodyKind::kJson);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->message,
            "Host 'evil.example:5000' does not name this server; start it with --allowed-hosts "
            "evil.example to accept that name");
  for (const char* malformed : {"::1", "a:b", "[::1", "h:99999", "h:", ":80", "a b"}) {
    EXPECT_EQ(StatusOf(guard, Request("GET", malformed)), 400) << malformed;
  }
  EXPECT_EQ(StatusOf(guard, Request("GET", "")), 0);  // HTTP/1.0: the server checks 1.1's
  EXPECT_EQ(StatusOf(RequestGuard("myhost", {}), Request("GET", "MyHost:5000")), 0);
  EXPECT_EQ(StatusOf(RequestGuard("127.0.0.1", {"*"}), Request("GET", "anything.example")), 0);
}

TEST(RequestGuard, OriginMustBeTheServersOwn) {
  RequestGuard guard("127.0.0.1", {"tracking.example.org"});
  const std::string json = "application/json";
  for (auto [host, origin] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:5000", "http://127.0.0.1:5000"},
           {"localhost:5000", "http://LOCALHOST:5000"},
           {"tracking.example.org", "https://tracking.example.org"},
           {"tracking.example.org", "http://tracking.example.org"},
           {"tracking.example.org:443", "https://tracking.example.org"}}) {
    EXPECT_EQ(StatusOf(guard, Request("POST", host, origin, json)), 0) << host << " " << origin;
  }
  for (auto [host, origin] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:5000", "http://127.0.0.1:5001"},
           {"127.0.0.1:5000", "http://localhost:5000"},
           {"127.0.0.1:5000", "null"},
           {"127.0.0.1:5000", "file://"},
           {"127.0.0.1:5000", "http://127.0.0.1:5000.evil.example"},
           {"127.0.0.1:5000", "http://evil.example@127.0.0.1:5000"},
           {"tracking.example.org:443", "http://tracking.example.org"},
           {"", "http://evil.example"}}) {
    EXPECT_EQ(StatusOf(guard, Request("POST", host, origin, json)), 403) << host << " " << origin;
    EXPECT_EQ(StatusOf(guard, Request("GET", host, origin)), 403) << host << " " << origin;
  }
  auto refused = guard.Check(Request("GET", "127.0.0.1:5000", "http://a.example"), BodyKind::kJson);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->message,
            "Origin 'http://a.example' is not this server's origin (http://127.0.0.1:5000): "
            "cross-site requests are refused");
}

TEST(RequestGuard, StateChangesNeedAContentTypeNoFormCanSend) {
  RequestGuard guard("127.0.0.1", {});
  const std::string host = "127.0.0.1:5000";
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    EXPECT_EQ(StatusOf(guard, Request(method, host, "", "application/json")), 0);
    EXPECT_EQ(StatusOf(guard, Request(method, host, "", "Application/JSON; charset=utf-8")), 0);
    for (const char* type :
         {"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
          "multipart/form-data; b=1", "application/octet-stream", "application/jsonx"}) {
      EXPECT_EQ(StatusOf(guard, Request(method, host, "", type)), 415) << method << " " << type;
    }
  }
  EXPECT_EQ(StatusOf(guard, Request("GET", host, "", "text/plain")), 0);
  EXPECT_EQ(guard.Check(Request("POST", host, "", "text/plain"), BodyKind::kJson)->message,
            "POST /api/2.0/mlflow/experiments/create needs Content-Type: application/json "
            "(got text/plain)");
  // Byte endpoints (uploads, an agent's log): anything a form cannot send;
  // PUT and DELETE take any type (browsers preflight them cross-origin).
  for (const char* type : {"application/octet-stream", "application/json", "image/png"}) {
    EXPECT_EQ(StatusOf(guard, Request("POST", host, "", type), BodyKind::kBytes), 0) << type;
  }
  for (const char* type : {"", "text/plain", "TEXT/PLAIN; charset=x", "multipart/form-data"}) {
    EXPECT_EQ(StatusOf(guard, Request("POST", host, "", type), BodyKind::kBytes), 415) << type;
    EXPECT_EQ(StatusOf(guard, Request("PUT", host, "", type), BodyKind::kBytes), 0) << type;
    EXPECT_EQ(StatusOf(guard, Request("DELETE", host, "", type), BodyKind::kBytes), 0) << type;
  }
}

TEST(RequestGuard, AllowedHostsFlag) {
  auto hosts = ParseAllowedHosts("Tracking.Example.org., .corp.example,*");
  ASSERT_TRUE(hosts.ok());
  EXPECT_EQ(*hosts, (std::vector<std::string>{"tracking.example.org", ".corp.example", "*"}));
  for (const char* bad : {"", "a,,b", ",", "."}) {
    EXPECT_EQ(
        ParseAllowedHosts(bad).status().message(),
        std::string("--allowed-hosts '") + bad + "': names are separated by commas, none empty");
  }
}

}  // namespace
}  // namespace cohort::http
