// The HTTP server's event loop: epoll over the listener and every
// connection, handler threads for complete requests, deadlines, and the
// caps on connections (the oldest idle ones close for new ones).
#include "http/server/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "http/server/handler_pool.h"
#include "http/server/http_connection.h"
#include "net/socket.h"

namespace cohort::http {
namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
constexpr int kListenBacklog =
    4096;  // a burst of connections waits in the kernel, not in SYN retries
constexpr size_t kScratchBytes = 256 << 10;
constexpr auto kDeadlineScan = std::chrono::milliseconds(100);
constexpr auto kAcceptPause =
    std::chrono::milliseconds(100);  // out of descriptors, nothing to evict

// Raises the soft descriptor limit to the hard one and returns how many
// connections fit, leaving room for the store, files and jobs.
int ConnectionCap(int wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY) return wanted;
  int64_t soft = static_cast<int64_t>(limit.rlim_cur);
  int64_t room = soft - std::max<int64_t>(64, soft / 8);
  return static_cast<int>(std::max<int64_t>(16, std::min<int64_t>(wanted, room)));
}

}  // namespace

class HttpServer::Loop {
 public:
  Loop(Fd listener, Fd epoll, Fd wake, HttpHandler handler, HttpServerOptions options)
      : listener_(std::move(listener)),
        epoll_(std::move(epoll)),
        wake_(std::move(wake)),
        handler_(std::move(handler)),
        options_(std::move(options)),
        max_connections_(ConnectionCap(options_.max_connections)),
        pool_(options_.handler_threads),
        scratch_(kScratchBytes) {}

  void Run();
  void RequestStop() {
    stopping_ = true;
    Wake();
  }
  void StopHandlers() { pool_.Stop(); }

 private:
  struct Slot {
    std::unique_ptr<HttpConnection> conn;
    uint32_t events = 0;  // registered with epoll; 0 = not registered
    bool idle = false;
    std::list<uint64_t>::iterator idle_pos;
  };

  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
  }
  void Accept(Clock::time_point now);
  bool EvictForNewConnection();
  void OnEvent(uint64_t id, uint32_t events, Clock::time_point now);
  // Carries out what a connection asked for, and files it by its new phase.
  void Apply(uint64_t id, HttpConnection::Next next, Clock::time_point now);
  void Dispatch(uint64_t id, HttpConnection& conn);
  ServerResponse RunHandler(const ServerRequest& request);
  void Post(uint64_t id, ServerResponse response);
  void TakeAnswers(Clock::time_point now);
  void ExpireDeadlines(Clock::time_point now);
  void SetInterest(uint64_t id, Slot& slot);
  void SetIdle(uint64_t id, Slot& slot);
  void Close(uint64_t id);
  void PauseAccepting(Clock::time_point now);

  Fd listener_;
  Fd epoll_;
  Fd wake_;
  HttpHandler handler_;
  HttpServerOptions options_;
  const int max_connections_;
  HandlerPool pool_;
  std::vector<char> scratch_;  // every connection reads through it (one thread)

  std::atomic<bool> stopping_{false};
  std::unordered_map<uint64_t, Slot> slots_;
  std::list<uint64_t> idle_;  // idle connections, the longest idle first
  uint64_t next_id_ = 2;
  bool accepting_ = true;
  Clock::time_point accept_resume_;

  std::mutex answers_mu_;
  std::vector<std::pair<uint64_t, ServerResponse>> answers_;  // from handler threads
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& host, int port,
                                                      HttpHandler handler,
                                                      HttpServerOptions options) {
  auto listener = Socket::Listen(host, port, kListenBacklog);
  if (!listener.ok()) return listener.status().WithContext("cohort server");
  auto bound = listener->LocalPort();
  if (!bound.ok()) return bound.status();
  Fd listen_fd(listener->Release());
  Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) return Status::IoError("epoll_create1: " + ErrnoText(errno));
  Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Status::IoError("eventfd: " + ErrnoText(errno));
  for (auto [fd, id] : {std::pair{listen_fd.get(), kListenerId}, std::pair{wake.get(), kWakeId}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Status::IoError("epoll_ctl: " + ErrnoText(errno));
    }
  }
  std::unique_ptr<HttpServer> server(new HttpServer(*bound));
  server->loop_ = std::make_unique<Loop>(std::move(listen_fd), std::move(epoll), std::move(wake),
                                         std::move(handler), std::move(options));
  server->thread_ = std::thread([loop = server->loop_.get()] { loop->Run(); });
  return server;
}

HttpServer::HttpServer(int port) : port_(port) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  loop_->RequestStop();
  thread_.join();
  loop_->StopHandlers();
}

void HttpServer::Loop::Run() {
  // sendfile(2) has no MSG_NOSIGNAL: a client gone mid-download would raise
  // SIGPIPE and end the process. Blocked here, it stays pending and the call
  // fails with EPIPE instead (a write's SIGPIPE goes to the thread that wrote).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::vector<epoll_event> events(256);
  Clock::time_point next_scan = Clock::now() + kDeadlineScan;
  while (!stopping_) {
    Clock::time_point now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_scan - now).count();
    int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                         static_cast<int>(std::max<int64_t>(0, wait)) + 1);
    if (n < 0 && errno != EINTR) {
      COHORT_LOG(kError) << "cohort server: epoll_wait: " << ErrnoText(errno);
      break;
    }
    now = Clock::now();
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        Accept(now);
      } else if (id == kWakeId) {
        uint64_t count;
        (void)!::read(wake_.get(), &count, sizeof count);
        TakeAnswers(now);
      } else {
        OnEvent(id, events[i].events, now);
      }
    }
    if (now >= next_scan) {
      ExpireDeadlines(now);
      next_scan = now + kDeadlineScan;
    }
    if (!accepting_ && now >= accept_resume_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerId;
      accepting_ = ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) == 0;
      if (!accepting_) accept_resume_ = now + kAcceptPause;
    }
  }
  slots_.clear();  // closes every connection
  idle_.clear();
}

void HttpServer::Loop::Accept(Clock::time_point now) {
  for (int k = 0; k < 256; ++k) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (EvictForNewConnection()) continue;
        PauseAccepting(now);
      }
      return;  // EAGAIN: none left
    }
    if (static_cast<int>(slots_.size()) >= max_connections_ && !EvictForNewConnection()) {
      // Every connection is busy with a request: say so rather than drop it.
      static constexpr char kBusy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::send(fd, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t id = next_id_++;
    Slot& slot = slots_[id];
    slot.conn = std::make_unique<HttpConnection>(Fd(fd), options_, now);
    SetInterest(id, slot);
    SetIdle(id, slot);
  }
}

// Frees a place: the connection idle the longest, else one already answered
// and closing, else the one whose head has been arriving the longest (a
// slow-header client, not a real one whose head takes milliseconds). False
// when every connection is mid-request.
bool HttpServer::Loop::EvictForNewConnection() {
  if (!idle_.empty()) {
    Close(idle_.front());
    return true;
  }
  uint64_t lingering = 0, slowest = 0;
  Clock::time_point since = Clock::time_point::max();
  for (const auto& [id, slot] : slots_) {
    HttpConnection::Phase phase = slot.conn->phase();
    if (phase == HttpConnection::Phase::kLingering) lingering = id;
    if (phase == HttpConnection::Phase::kHead && slot.conn->phase_start() < since) {
      since = slot.conn->phase_start();
      slowest = id;
    }
  }
  uint64_t evicted = lingering != 0 ? lingering : slowest;
  if (evicted == 0) return false;
  Close(evicted);
  return true;
}

void HttpServer::Loop::PauseAccepting(Clock::time_point now) {
  if (!accepting_) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
  accepting_ = false;
  accept_resume_ = now + kAcceptPause;
  COHORT_LOG(kWarning) << "cohort server: out of file descriptors with " << slots_.size()
                       << " connections open; accepting again in 100 ms";
}

void HttpServer::Loop::OnEvent(uint64_t id, uint32_t events, Clock::time_point now) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;  // closed earlier in this round
  HttpConnection& conn = *it->second.conn;
  HttpConnection::Next next = HttpConnection::Next::kWait;
  if (conn.phase() == HttpConnection::Phase::kWriting) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) next = conn.OnWritable(now);
  } else if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
    next = conn.OnReadable(scratch_.data(), scratch_.size(), now);
  }
  Apply(id, next, now);
}

void HttpServer::Loop::Apply(uint64_t id, HttpConnection::Next next, Clock::time_point now) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  Slot& slot = it->second;
  HttpConnection& conn = *slot.conn;
  // Pipelined requests, one after another: their bytes are already read.
  while (next == HttpConnection::Next::kWait && conn.HasBufferedRequest()) next = conn.Resume(now);
  if (next == HttpConnection::Next::kClose) {
    Close(id);
    return;
  }
  if (next == HttpConnection::Next::kDispatch) Dispatch(id, conn);
  SetInterest(id, slot);
  SetIdle(id, slot);
}

void HttpServer::Loop::Dispatch(uint64_t id, HttpConnection& conn) {
  pool_.Submit([this, id, request = conn.TakeRequest()]() mutable {
    ServerResponse response = RunHandler(request);
    request = ServerRequest();  // a spooled body's file goes before the answer does
    Post(id, std::move(response));
  });
}

// The last resort: a handler that throws answers 500 (and is logged) instead
// of ending the process. Handlers report errors as values; this is for bugs.
ServerResponse HttpServer::Loop::RunHandler(const ServerRequest& request) {
  try {
    return handler_(request);
  } catch (const std::exception& e) {
    COHORT_LOG(kError) << "cohort server: " << request.method << " " << request.path
                       << " failed: " << e.what();
  } catch (...) {
    COHORT_LOG(kError) << "cohort server: " << request.method << " " << request.path
                       << " failed with an unknown exception";
  }
  return PlainError(500, "internal error: the request failed (the server's log says why)");
}

void HttpServer::Loop::Post(uint64_t id, ServerResponse response) {
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers_.emplace_back(id, std::move(response));
  }
  Wake();
}

void HttpServer::Loop::TakeAnswers(Clock::time_point now) {
  std::vector<std::pair<uint64_t, ServerResponse>> answers;
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers.swap(answers_);
  }
  for (auto& [id, response] : answers) {
    auto it = slots_.find(id);
    if (it == slots_.end()) continue;  // the connection is gone
    Apply(id, it->second.conn->Respond(std::move(response), now), now);
  }
}

void HttpServer::Loop::ExpireDeadlines(Clock::time_point now) {
  std::vector<uint64_t> expired;
  for (const auto& [id, slot] : slots_) {
    if (slot.conn->phase() != HttpConnection::Phase::kHandling && slot.conn->deadline() <= now) {
      expired.push_back(id);
    }
  }
  for (uint64_t id : expired) {
    auto it = slots_.find(id);
    if (it != slots_.end()) Apply(id, it->second.conn->OnDeadline(now), now);
  }
}

// Reads while a request is arriving, writes while answering, nothing while a
// handler has it (off epoll entirely: a hang-up would be reported again and again).
void HttpServer::Loop::SetInterest(uint64_t id, Slot& slot) {
  uint32_t want = EPOLLIN;
  switch (slot.conn->phase()) {
    case HttpConnection::Phase::kWriting:
      want = EPOLLOUT;
      break;
    case HttpConnection::Phase::kHandling:
      want = 0;
      break;
    default:
      break;
  }
  if (want == slot.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = id;
  int op = want == 0 ? EPOLL_CTL_DEL : slot.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  if (::epoll_ctl(epoll_.get(), op, slot.conn->fd(), &ev) != 0) {
    COHORT_LOG(kError) << "cohort server: epoll_ctl: " << ErrnoText(errno);
  }
  slot.events = want;
}

void HttpServer::Loop::SetIdle(uint64_t id, Slot& slot) {
  bool idle = slot.conn->phase() == HttpConnection::Phase::kIdle;
  if (idle == slot.idle) return;
  if (idle) {
    slot.idle_pos = idle_.insert(idle_.end(), id);
  } else {
    idle_.erase(slot.idle_pos);
  }
  slot.idle = idle;
  while (static_cast<int>(idle_.size()) > std::max(options_.max_idle_connections, 1)) {
    Close(idle_.front());
  }
}

void HttpServer::Loop::Close(uint64_t id) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  if (it->second.idle) idle_.erase(it->second.idle_pos);
  if (it->second.events != 0)
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.conn->fd(), nullptr);
  slots_.erase(it);  // closes the socket
}

}  // namespace cohort::http
