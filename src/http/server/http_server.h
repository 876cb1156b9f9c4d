// HttpServer: the HTTP/1.1 server of `cohort server`. One event-loop thread
// accepts connections and reads every request's head and body without
// blocking (so idle or slow clients cost a descriptor and a few bytes, not a
// thread); complete requests go to a bounded pool of handler threads, and
// the loop writes their answers. Each connection has deadlines (its head,
// its body, its idle time between requests, a stalled answer), the idle ones
// are capped (the oldest are closed for new ones), and a malformed request
// gets a 4xx, never a crash.
#ifndef COHORT_HTTP_SERVER_HTTP_SERVER_H_
#define COHORT_HTTP_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cohort/status.h"
#include "http/server/http_message.h"

namespace cohort::http {

// What to do with a request whose head has arrived, decided before its body
// is read (HttpServerOptions::admit).
struct Admission {
  std::optional<ServerResponse> refuse;  // answered at once; the body is never read
  uint64_t body_limit = 0;               // the most body bytes the request may send
  std::string spool_dir;                 // non-empty: stream the body to a file there
};

struct HttpServerOptions {
  int handler_threads = 32;         // requests handled at once
  int max_connections = 10000;      // open at once (also kept below RLIMIT_NOFILE)
  int max_idle_connections = 1000;  // kept alive between requests; past it the oldest close
  size_t max_header_bytes = 64 << 10;
  int idle_timeout_ms = 60000;    // between requests (and before the first)
  int header_timeout_ms = 20000;  // from a request's first byte to the end of its head
  // A body must arrive within body_timeout_ms plus one second per
  // min_body_rate bytes received (a slow upload goes on while it moves).
  int body_timeout_ms = 30000;
  uint64_t min_body_rate = 16 << 10;
  int send_timeout_ms = 60000;  // an answer the client stops reading is dropped
  // Called on the event loop (so it must not block) for each request's head
  // (method, path, query, headers). Absent: bodies up to 16 MiB, in memory.
  std::function<Admission(const ServerRequest& head)> admit;
};

class HttpServer {
 public:
  // Listens on host:port (0 = a free port) and serves on background threads.
  // Raises this process's soft RLIMIT_NOFILE to its hard limit (each
  // connection is a descriptor).
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& host, int port,
                                                   HttpHandler handler,
                                                   HttpServerOptions options = {});
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Stops accepting, closes every connection, waits for running handlers.
  void Stop();

 private:
  class Loop;
  explicit HttpServer(int port);

  int port_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_HTTP_SERVER_H_
