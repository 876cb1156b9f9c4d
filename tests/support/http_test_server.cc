// The storage tests' HTTP/1.1 server (see http_test_server.h).
#include "support/http_test_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "data/sigv4.h"
#include "http/url.h"

namespace cohort::testing {

namespace {

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The value of header `name` (lower case) in a request head, or "".
std::string HeaderValue(const std::string& head, const std::string& name) {
  std::istringstream lines(head);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key != name) continue;
    size_t b = line.find_first_not_of(" \t", colon + 1), e = line.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : line.substr(b, e - b + 1);
  }
  return "";
}

std::string Response(int status, const std::string& reason, const std::vector<std::string>& headers,
                     size_t length) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
  for (const std::string& h : headers) r += h + "\r\n";
  r += "Content-Length: " + std::to_string(length) + "\r\n\r\n";
  return r;
}

}  // namespace

HttpTestServer::HttpTestServer(std::string root) : root_(std::move(root)) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 64) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "HttpTestServer: cannot listen on 127.0.0.1";
    if (fd >= 0) ::close(fd);
    return;
  }
  listen_fd_ = fd;
  port_ = ntohs(addr.sin_port);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

HttpTestServer::~HttpTestServer() {
  if (listen_fd_ < 0) return;
  uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) != sizeof one) ADD_FAILURE() << "cannot wake acceptor";
  acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);  // ends each worker's recv
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::string HttpTestServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void HttpTestServer::InjectFault(int nth, Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_[nth] = fault;
}

void HttpTestServer::FailAll(Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_all_ = fault;
}

void HttpTestServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    connections_.push_back(conn);
    workers_.emplace_back([this, conn] { Serve(conn); });
  }
}

void HttpTestServer::Serve(int fd) {
  std::string buffer;
  char chunk[65536];
  for (;;) {
    size_t end = buffer.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buffer.substr(0, end + 4);
      buffer.erase(0, end + 4);
      // A request body (none expected for GET/HEAD) is read and dropped.
      std::string length = HeaderValue(head, "content-length");
      size_t body = length.empty() ? 0 : std::stoul(length);
      while (buffer.size() < body) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      buffer.erase(0, std::min(body, buffer.size()));
      if (!Answer(fd, head)) break;
      continue;
    }
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // The fd stays open until the destructor's shutdown pass is over, so it is
  // never reused while listed; closed here only when not stopping.
  if (!stopping_) {
    std::erase(connections_, fd);
    ::close(fd);
  } else {
    ::close(fd);
  }
}

std::string HttpTestServer::last_head() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_head_;
}

bool HttpTestServer::Answer(int fd, const std::string& head) {
  const int nth = ++requests_;
  Fault fault;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_head_ = head;
    fault = fail_all_;
    auto it = faults_.find(nth);
    if (it != faults_.end()) fault = it->second;
  }
  std::istringstream first(head);
  std::string method, target;
  first >> method >> target;
  if (fault == Fault::kStatus503) {
    const std::string body = "injected fault";
    return SendAll(
        fd, Response(503, "Service Unavailable", {}, body.size()) + (method == "HEAD" ? "" : body));
  }
  const std::string path = http::UriDecode(target.substr(0, target.find('?')));
  std::string bytes;
  bool found = path.find("..") == std::string::npos;
  if (found) {
    std::ifstream in(root_ + path, std::ios::binary);
    found = in.good() && path.back() != '/';
    if (found) bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (!found) {
    const std::string body = "not found";
    return SendAll(fd,
                   Response(404, "Not Found", {}, body.size()) + (method == "HEAD" ? "" : body));
  }
  int status = 200;
  std::string reason = "OK";
  std::vector<std::string> headers = {"Accept-Ranges: bytes"};
  const std::string range = HeaderValue(head, "range");
  if (range.rfind("bytes=", 0) == 0) {
    const size_t dash = range.find('-');
    const size_t from = std::stoul(range.substr(6, dash - 6));
    if (from >= bytes.size()) {
      return SendAll(fd, Response(416, "Range Not Satisfiable",
                                  {"Content-Range: bytes */" + std::to_string(bytes.size())}, 0));
    }
    size_t to = bytes.size() - 1;
    if (dash + 1 < range.size()) to = std::min(to, std::stoul(range.substr(dash + 1)));
    headers.push_back("Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(to) +
                      "/" + std::to_string(bytes.size()));
    bytes = bytes.substr(from, to - from + 1);
    status = 206;
    reason = "Partial Content";
  }
  const std::string response_head = Response(status, reason, headers, bytes.size());
  if (method == "HEAD") return SendAll(fd, response_head);
  if (fault == Fault::kDropMidBody) {
    SendAll(fd, response_head + bytes.substr(0, bytes.size() / 2));
    return false;  // the connection closes with the body half sent
  }
  return SendAll(fd, response_head + bytes);
}

}  // namespace cohort::testing
