// The HTTP/1.1 server: accept loop, per-connection request parsing and
// keep-alive.
#include "server/http_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "net/socket.h"

namespace cohort::server {
namespace {

// Bytes of one connection, read as requests need them.
class ConnectionReader {
 public:
  ConnectionReader(int fd, int idle_timeout_ms) : fd_(fd), timeout_ms_(idle_timeout_ms) {}

  // Reads more bytes; false on EOF, error or timeout.
  bool Fill() {
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms_);
    if (r <= 0) return false;
    char chunk[64 << 10];
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  std::string& buffer() { return buffer_; }

 private:
  int fd_;
  int timeout_ms_;
  std::string buffer_;
};

bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 30000) <= 0) return false;
      continue;
    }
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

HttpResponse PlainError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = message + "\n";
  return r;
}

std::string Serialize(const HttpResponse& r, bool keep_alive, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    (keep_alive ? "\r\nConnection: keep-alive" : "\r\nConnection: close");
  for (const auto& [name, value] : r.headers) out += "\r\n" + name + ": " + value;
  out += "\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

// Parses the head (request line and headers); an error is the response to send.
std::optional<HttpResponse> ParseHead(const std::string& head, HttpRequest* req, bool* http10) {
  size_t line_end = head.find("\r\n");
  std::string line = head.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return PlainError(400, "malformed request line");
  req->method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return PlainError(version.rfind("HTTP/", 0) == 0 ? 505 : 400, "unsupported HTTP version");
  }
  *http10 = version == "HTTP/1.0";
  for (char c : req->method) {
    if (!std::isupper(static_cast<unsigned char>(c))) return PlainError(400, "malformed method");
  }
  if (target.empty() || target[0] != '/') return PlainError(400, "malformed request target");
  size_t q = target.find('?');
  req->path = PercentDecode(target.substr(0, q));
  if (q != std::string::npos) req->query = target.substr(q + 1);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    std::string h = head.substr(pos, end - pos);
    pos = end + 2;
    if (h.empty()) continue;
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) return PlainError(400, "malformed header");
    req->headers[Lower(Trim(h.substr(0, colon)))] = Trim(h.substr(colon + 1));
  }
  return std::nullopt;
}

// Decodes a chunked body from `in` starting at *pos; nullopt while incomplete,
// an error message when malformed.
enum class ChunkResult { kDone, kNeedMore, kBad, kTooLarge };
ChunkResult DecodeChunked(const std::string& in, size_t* pos, size_t limit, std::string* body) {
  while (true) {
    size_t line_end = in.find("\r\n", *pos);
    if (line_end == std::string::npos) return ChunkResult::kNeedMore;
    std::string size_text = in.substr(*pos, line_end - *pos);
    size_t semi = size_text.find(';');
    if (semi != std::string::npos) size_text.resize(semi);
    if (size_text.empty() || size_text.size() > 15 ||
        size_text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return ChunkResult::kBad;
    }
    size_t size = std::stoul(size_text, nullptr, 16);
    if (body->size() + size > limit) return ChunkResult::kTooLarge;
    if (size == 0) {
      size_t end = in.find("\r\n\r\n", line_end);  // trailers end with an empty line
      if (end == std::string::npos) {
        if (in.compare(line_end, 4, "\r\n\r\n") != 0) return ChunkResult::kNeedMore;
      }
      *pos = (end == std::string::npos ? line_end : end) + 4;
      return ChunkResult::kDone;
    }
    if (in.size() < line_end + 2 + size + 2) return ChunkResult::kNeedMore;
    body->append(in, line_end + 2, size);
    if (in.compare(line_end + 2 + size, 2, "\r\n") != 0) return ChunkResult::kBad;
    *pos = line_end + 2 + size + 2;
  }
}

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string PercentDecode(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::multimap<std::string, std::string> ParseQuery(const std::string& query) {
  std::multimap<std::string, std::string> out;
  size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string pair = query.substr(pos, amp - pos);
    for (char& c : pair) {
      if (c == '+') c = ' ';
    }
    size_t eq = pair.find('=');
    if (!pair.empty()) {
      out.emplace(PercentDecode(pair.substr(0, eq)),
                  eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1)));
    }
    pos = amp + 1;
  }
  return out;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& host, int port,
                                                      HttpHandler handler,
                                                      HttpServerOptions options) {
  auto listener = Socket::Listen(host, port);
  if (!listener.ok()) return listener.status().WithContext("cohort server");
  auto bound = listener->LocalPort();
  if (!bound.ok()) return bound.status();
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  std::unique_ptr<HttpServer> server(
      new HttpServer(listener->Release(), wake, *bound, std::move(handler), options));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

HttpServer::HttpServer(int listen_fd, int wake_fd, int port, HttpHandler handler,
                       HttpServerOptions options)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port),
      handler_(std::move(handler)),
      options_(options) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [fd, thread] : connections_) shutdown(fd, SHUT_RDWR);
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  // Connection threads remove themselves; wait for the last to go.
  while (true) {
    std::vector<std::thread> done;
    bool empty;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done.swap(finished_);
      empty = connections_.empty();
    }
    for (std::thread& t : done) t.join();
    if (empty && done.empty()) break;
    if (done.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(listen_fd_);
  close(wake_fd_);
}

void HttpServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    if (static_cast<int>(connections_.size()) >= options_.max_connections) {
      SendAll(fd, Serialize(PlainError(503, "too many connections"), false, false));
      close(fd);
      continue;
    }
    for (std::thread& t : finished_) t.join();  // each has left Serve already
    finished_.clear();
    connections_[fd] = std::thread([this, fd] { Serve(fd); });
  }
}

void HttpServer::Serve(int fd) {
  ConnectionReader reader(fd, options_.idle_timeout_ms);
  std::string& buf = reader.buffer();
  bool keep_alive = true;
  while (keep_alive) {
    size_t head_end;
    while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > options_.max_header_bytes) break;
      if (!reader.Fill()) {
        keep_alive = false;
        break;
      }
    }
    if (!keep_alive) break;
    if (head_end == std::string::npos || head_end > options_.max_header_bytes) {
      SendAll(fd, Serialize(PlainError(431, "request header too large"), false, false));
      break;
    }
    HttpRequest req;
    bool http10 = false;
    if (auto error = ParseHead(buf.substr(0, head_end), &req, &http10)) {
      SendAll(fd, Serialize(*error, false, false));
      break;
    }
    size_t pos = head_end + 4;
    if (Lower(req.Header("transfer-encoding")) == "chunked") {
      ChunkResult r;
      while ((r = DecodeChunked(buf, &pos, options_.max_body_bytes, &req.body)) ==
             ChunkResult::kNeedMore) {
        req.body.clear();
        pos = head_end + 4;
        if (!reader.Fill()) break;
      }
      if (r != ChunkResult::kDone) {
        if (r != ChunkResult::kNeedMore) {
          SendAll(fd, Serialize(PlainError(r == ChunkResult::kBad ? 400 : 413,
                                           r == ChunkResult::kBad ? "malformed chunked body"
                                                                  : "request body too large"),
                                false, false));
        }
        break;
      }
    } else if (!req.Header("transfer-encoding").empty()) {
      SendAll(fd, Serialize(PlainError(501, "unsupported transfer-encoding"), false, false));
      break;
    } else {
      std::string length_text = req.Header("content-length");
      size_t length = 0;
      if (!length_text.empty()) {
        if (length_text.size() > 15 ||
            length_text.find_first_not_of("0123456789") != std::string::npos) {
          SendAll(fd, Serialize(PlainError(400, "malformed Content-Length"), false, false));
          break;
        }
        length = std::stoull(length_text);
      }
      if (length > options_.max_body_bytes) {
        SendAll(fd,
                Serialize(PlainError(413, "request body too large (limit " +
                                              std::to_string(options_.max_body_bytes) + " bytes)"),
                          false, false));
        break;
      }
      bool complete = true;
      while (buf.size() < pos + length) {
        if (!reader.Fill()) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      req.body = buf.substr(pos, length);
      pos += length;
    }
    buf.erase(0, pos);
    std::string connection = Lower(req.Header("connection"));
    keep_alive = http10 ? connection == "keep-alive" : connection != "close";
    HttpResponse response = handler_(req);
    if (!SendAll(fd, Serialize(response, keep_alive, req.method == "HEAD"))) break;
  }
  // Closed under the lock: once the fd number is free, accept may reuse it
  // for a new entry in connections_.
  std::lock_guard<std::mutex> lock(mu_);
  close(fd);
  auto it = connections_.find(fd);
  if (it != connections_.end()) {
    finished_.push_back(std::move(it->second));
    connections_.erase(it);
  }
}

}  // namespace cohort::server
