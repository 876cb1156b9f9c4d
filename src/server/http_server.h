// HttpServer: a small HTTP/1.1 server for `cohort server`. One thread per
// connection up to a bound (more are answered 503 and closed), keep-alive,
// limits on header and body size, and an idle timeout; a malformed request
// gets a 4xx and the connection closes, never a crash.
#ifndef COHORT_SERVER_HTTP_SERVER_H_
#define COHORT_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/status.h"

namespace cohort::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // percent-decoded, without the query
  std::string query;                           // raw, after '?'
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  // The header's value, or "" when absent. `name` in lower case.
  std::string Header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  int max_connections = 64;
  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = 512u << 20;  // artifact uploads
  int idle_timeout_ms = 60000;         // a kept-alive connection quiet this long is closed
};

class HttpServer {
 public:
  // Listens on host:port (0 = a free port) and serves on background threads.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& host, int port,
                                                   HttpHandler handler,
                                                   HttpServerOptions options = {});
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Stops accepting, closes every connection and joins every thread.
  void Stop();

 private:
  HttpServer(int listen_fd, int wake_fd, int port, HttpHandler handler, HttpServerOptions options);
  void AcceptLoop();
  void Serve(int fd);

  int listen_fd_;
  int wake_fd_;
  int port_;
  HttpHandler handler_;
  HttpServerOptions options_;
  std::thread acceptor_;

  std::mutex mu_;
  bool stopping_ = false;
  std::map<int, std::thread> connections_;  // fd -> its thread
  std::vector<std::thread> finished_;       // threads whose connection ended, to join
};

// Percent-decoding of a path or query component ('+' stays '+').
std::string PercentDecode(const std::string& text);
// "a=1&b=x%20y" -> {a: [1], b: ["x y"]} ('+' is a space in a query).
std::multimap<std::string, std::string> ParseQuery(const std::string& query);
const char* ReasonPhrase(int status);

}  // namespace cohort::server

#endif  // COHORT_SERVER_HTTP_SERVER_H_
