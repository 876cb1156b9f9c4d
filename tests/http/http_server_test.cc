// HttpServer, the event loop under `cohort server`, with a handler of the
// test's own and short deadlines: keep-alive and pipelining, a throwing
// handler, the head and body deadlines against slow clients, the idle cap
// (oldest first), Expect: 100-continue, refusals before the body, limits,
// and bodies spooled to a file (issue 25 items 6-8).
#include "http/server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/deadline.h"
#include "data/data_test_util.h"

namespace cohort::http {
namespace {

using cohort::data::testing::TempDir;

// A blocking test client on one connection; every wait has a deadline.
class Client {
 public:
  explicit Client(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  bool connected() const { return connected_; }

  bool Send(const std::string& bytes) {
    return ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // One whole response (head and Content-Length body), or what arrived
  // before EOF or the deadline.
  std::string Response(double seconds = 10) {
    Deadline deadline = Deadline::AfterSeconds(seconds);
    while (true) {
      size_t head_end = buffer_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        size_t at = buffer_.find("Content-Length: ");
        if (at != std::string::npos && at < head_end) length = std::stoul(buffer_.substr(at + 16));
        if (buffer_.size() >= head_end + 4 + length) {
          std::string response = buffer_.substr(0, head_end + 4 + length);
          buffer_.erase(0, response.size());
          return response;
        }
      }
      if (!Fill(deadline)) {
        std::string partial;
        partial.swap(buffer_);
        return partial;
      }
    }
  }

  // True when the server closes the connection before the deadline.
  bool Closed(double seconds = 10) {
    Deadline deadline = Deadline::AfterSeconds(seconds);
    while (Fill(deadline)) {
    }
    return eof_;
  }

 private:
  bool Fill(const Deadline& deadline) {
    if (eof_) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, deadline.RemainingMs()) <= 0) return false;
    char chunk[65536];
    ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  Fd fd_;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

std::string Status(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}
std::string Body(const std::string& response) {
  size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

ServerResponse Echo(const ServerRequest& request) {
  ServerResponse r;
  r.content_type = "text/plain";
  r.body = request.method + " " + request.path + " " + std::to_string(request.body.size());
  if (request.body_file) r.body += " file " + std::to_string(request.body_file->size());
  return r;
}

std::unique_ptr<HttpServer> StartServer(HttpHandler handler, HttpServerOptions options = {}) {
  auto server = HttpServer::Start("127.0.0.1", 0, std::move(handler), std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

const std::string kGet = "GET /health HTTP/1.1\r\nHost: h\r\n\r\n";

TEST(HttpServer, KeepAliveAndPipelinedRequests) {
  auto server = StartServer(Echo);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\n"
             "Content-Length: 3\r\n\r\nxyzGET /c HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(Body(c.Response()), "GET /a 0");
  EXPECT_EQ(Body(c.Response()), "POST /b 3");
  std::string third = c.Response();
  EXPECT_EQ(Body(third), "GET /c 0");
  EXPECT_NE(third.find("Connection: keep-alive"), std::string::npos);
  ASSERT_TRUE(c.Send("HEAD /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  std::string head = c.Response();
  EXPECT_NE(head.find("Content-Length: 9\r\n"), std::string::npos) << head;  // "HEAD /d 0", unsent
  EXPECT_EQ(Body(head), "");
  EXPECT_TRUE(c.Closed());
}

TEST(HttpServer, ThousandsOfPipelinedRefusalsAreAnsweredWithoutRecursion) {
  // Refusals are answered on the event loop itself; a client that pipelines
  // many must not grow the loop's stack (once it did, one frame set each).
  HttpServerOptions options;
  options.admit = [](const ServerRequest&) {
    Admission a;
    a.refuse = PlainError(403, "no");
    return a;
  };
  auto server = StartServer(Echo, options);
  Client c(server->port());
  const int n = 20000;
  std::string requests;
  for (int i = 0; i < n; ++i) requests += kGet;
  std::thread sender([&] { c.Send(requests); });
  int answered = 0;
  while (answered < n && Status(c.Response()) == "HTTP/1.1 403 Forbidden") ++answered;
  sender.join();
  EXPECT_EQ(answered, n);
}

TEST(HttpServer, AThrowingHandlerAnswers500AndTheServerGoesOn) {
  auto server = StartServer([](const ServerRequest& r) -> ServerResponse {
    if (r.path == "/throw") throw std::runtime_error("a bug");
    return Echo(r);
  });
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /throw HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::string answer = c.Response();
  EXPECT_EQ(Status(answer), "HTTP/1.1 500 Internal Server Error");
  EXPECT_EQ(Body(answer), "internal error: the request failed (the server's log says why)\n");
  ASSERT_TRUE(c.Send("GET /after HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(Body(c.Response()), "GET /after 0");
}

TEST(HttpServer, ASlowHeadIsCutAtTheHeaderDeadline) {
  HttpServerOptions options;
  options.header_timeout_ms = 300;
  auto server = StartServer(Echo, options);
  Client slow(server->port());
  auto start = Clock::now();
  ASSERT_TRUE(slow.Send("GET / HTTP/1.1\r\n"));
  std::string answer;
  // One header byte every 50 ms, as slowloris does (every 10 s in the wild).
  for (int i = 0; i < 40 && answer.empty(); ++i) {
    slow.Send("X");
    answer = slow.Response(0.05);
  }
  double took = SecondsSince(start);
  EXPECT_EQ(Status(answer), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(Body(answer), "request head not complete within 300 ms\n");
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 1.5);
  EXPECT_TRUE(slow.Closed());
}

TEST(HttpServer, ASlowBodyIsCutAtTheBodyDeadline) {
  HttpServerOptions options;
  options.body_timeout_ms = 300;
  options.min_body_rate = 1 << 20;
  auto server = StartServer(Echo, options);
  Client slow(server->port());
  ASSERT_TRUE(slow.Send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\nab"));
  std::string answer = slow.Response(5);
  EXPECT_EQ(Status(answer), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(Body(answer), "request body too slow: 2 bytes in 0 s\n");
}

TEST(HttpServer, IdleConnectionsPastTheCapCloseOldestFirst) {
  HttpServerOptions options;
  options.max_idle_connections = 10;
  auto server = StartServer(Echo, options);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    ASSERT_TRUE(clients.back()->connected());
    // In order: the server has accepted this one before the next connects.
    ASSERT_TRUE(clients.back()->Send(kGet));
    ASSERT_EQ(Status(clients.back()->Response()), "HTTP/1.1 200 OK");
  }
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(clients[i]->Closed(5)) << i;
  for (int i = 10; i < 20; ++i) {
    ASSERT_TRUE(clients[i]->Send(kGet)) << i;
    EXPECT_EQ(Status(clients[i]->Response()), "HTTP/1.1 200 OK") << i;
  }
}

TEST(HttpServer, WhenFullTheSlowestHeadMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 20;
  options.max_idle_connections = 20;
  auto server = StartServer(Echo, options);
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<Client>(server->port()));
    ASSERT_TRUE(slow.back()->Send("GET / HTTP/1.1\r\n"));
  }
  // Every place holds a slow head; a new client still gets in and is served.
  auto start = Clock::now();
  Client normal(server->port());
  ASSERT_TRUE(normal.Send(kGet));
  EXPECT_EQ(Status(normal.Response()), "HTTP/1.1 200 OK");
  EXPECT_LT(SecondsSince(start), 1.0);
  // One slow head made room (which: the one that started first, as far as
  // the server saw their first bytes).
  int closed = 0;
  for (auto& c : slow) closed += c->Closed(0.05) ? 1 : 0;
  EXPECT_EQ(closed, 1);
}

TEST(HttpServer, ExpectContinueAndRefusalsBeforeTheBody) {
  HttpServerOptions options;
  options.admit = [](const ServerRequest& head) {
    Admission a;
    a.body_limit = 100;
    if (head.path == "/refused") {
      a.refuse = ServerResponse();
      a.refuse->status = 403;
      a.refuse->body = "no";
    }
    return a;
  };
  auto server = StartServer(Echo, options);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("PUT /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(c.Response(), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send("hello"));
  EXPECT_EQ(Body(c.Response()), "PUT /up 5");
  // Refused: no 100, the answer at once, and the connection closes (its body is unread).
  ASSERT_TRUE(c.Send(
      "PUT /refused HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  std::string refused = c.Response();
  EXPECT_EQ(Status(refused), "HTTP/1.1 403 Forbidden");
  EXPECT_NE(refused.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(c.Closed());
  // Over the limit, by Content-Length and chunked.
  Client big(server->port());
  ASSERT_TRUE(big.Send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n"));
  std::string answer = big.Response();
  EXPECT_EQ(Status(answer), "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(
      Body(answer),
      "request body too large: POST /x takes at most 100 bytes (100 bytes); this one is 101\n");
  Client chunked(server->port());
  ASSERT_TRUE(
      chunked.Send("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "40\r\n" +
                   std::string(64, 'a') + "\r\n40\r\n"));
  EXPECT_EQ(Body(chunked.Response()),
            "request body too large: POST /x takes at most 100 bytes (100 bytes); the chunked "
            "body exceeded it\n");
}

TEST(HttpServer, HttpLevelErrors) {
  auto server = StartServer(Echo);
  for (auto [request, status] : std::vector<std::pair<std::string, std::string>>{
           {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},  // no Host
           {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK"},
           {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
            "HTTP/1.1 501 Not Implemented"},
           {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "HTTP/1.1 413 Payload Too Large"},
           {"GET / HTTP/1.1\r\nHost: h\r\nExpect: magic\r\n\r\n",
            "HTTP/1.1 417 Expectation Failed"},
           {"GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(70 << 10, 'a') + "\r\n\r\n",
            "HTTP/1.1 431 Request Header Fields Too Large"},
       }) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(request));
    EXPECT_EQ(Status(c.Response()), status) << request.substr(0, 60);
  }
}

TEST(HttpServer, SpooledBodiesGoToAFileThatGoesAfterTheHandler) {
  TempDir dir;
  std::string seen_path;
  HttpServerOptions options;
  options.admit = [&](const ServerRequest&) {
    Admission a;
    a.body_limit = 1 << 20;
    a.spool_dir = dir.path();
    return a;
  };
  auto server = StartServer(
      [&](const ServerRequest& r) {
        ServerResponse response = Echo(r);
        if (r.body_file) {
          seen_path = r.body_file->path();
          std::ifstream in(seen_path);
          response.body += " " + std::string(std::istreambuf_iterator<char>(in), {});
        }
        return response;
      },
      options);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("PUT /f HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
             "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  EXPECT_EQ(Body(c.Response()), "PUT /f 0 file 5 abcde");
  EXPECT_EQ(seen_path.rfind(dir.path() + "/.upload.tmp.", 0), 0u) << seen_path;
  EXPECT_NE(::access(seen_path.c_str(), F_OK), 0);  // removed with the request
}

TEST(HttpServer, StopClosesConnectionsAndWaitsForHandlers) {
  std::atomic<bool> release{false};
  auto server = StartServer([&](const ServerRequest& r) {
    Deadline deadline = Deadline::AfterSeconds(10);
    while (r.path == "/block" && !release && !deadline.Expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Echo(r);
  });
  Client idle(server->port());
  Client busy(server->port());
  ASSERT_TRUE(busy.Send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n"));
  Client other(server->port());
  ASSERT_TRUE(other.Send(kGet));  // served while /block holds a handler
  EXPECT_EQ(Status(other.Response()), "HTTP/1.1 200 OK");
  release = true;
  server->Stop();  // returns once /block's handler has
  EXPECT_TRUE(idle.Closed(5));
  EXPECT_TRUE(busy.Closed(5));
}

}  // namespace
}  // namespace cohort::http
