// HttpTestServer: a small HTTP/1.1 server for storage tests. It serves a
// directory on 127.0.0.1 (GET and HEAD, single Range requests, keep-alive,
// one thread per connection) and can inject faults: a 503 answer or a
// connection dropped halfway through the body, on chosen requests or on all.
#ifndef COHORT_TESTS_SUPPORT_HTTP_TEST_SERVER_H_
#define COHORT_TESTS_SUPPORT_HTTP_TEST_SERVER_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cohort::testing {

class HttpTestServer {
 public:
  enum class Fault { kNone, kStatus503, kDropMidBody };

  // Starts serving `root` on a free port; check ok() (a test fails otherwise).
  explicit HttpTestServer(std::string root);
  ~HttpTestServer();  // stops the server and joins every thread
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  bool ok() const { return listen_fd_ >= 0; }
  std::string url() const;  // "http://127.0.0.1:PORT"

  // Request number `nth` (1-based, counting every request since the server
  // started) gets `fault`.
  void InjectFault(int nth, Fault fault);
  // Every request from now on gets `fault` (kNone clears it).
  void FailAll(Fault fault);
  int requests() const { return requests_.load(); }
  // The head (request line and headers) of the latest request.
  std::string last_head();

 private:
  void AcceptLoop();
  void Serve(int fd);
  // Answers one request; false when the connection must close.
  bool Answer(int fd, const std::string& head);

  std::string root_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_fd_ = -1;  // eventfd that ends AcceptLoop
  std::thread acceptor_;
  std::atomic<int> requests_{0};

  std::mutex mu_;
  std::map<int, Fault> faults_;
  Fault fail_all_ = Fault::kNone;
  std::string last_head_;
  std::vector<int> connections_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_HTTP_TEST_SERVER_H_
