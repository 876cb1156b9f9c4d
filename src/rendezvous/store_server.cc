// Rendezvous store server: one thread runs an event loop (poll(2)) over the
// listener and every connection, so a stranger's connections cost a file
// descriptor and a little memory each, never a thread. A connection first
// has kHandshakeSeconds to prove it holds the job secret; at most
// kMaxHandshaking connections may be at that stage, the oldest is dropped
// for a newcomer. A Get whose key is not set yet parks its connection until
// a Set or Add provides the key or its wait ends.
#include "rendezvous/store_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "net/auth.h"
#include "net/framed_connection.h"
#include "net/socket.h"
#include "rendezvous/store_protocol.h"

namespace cohort {
namespace {

namespace sp = store_protocol;

// A client that connected but has not proved the secret within this long is
// dropped. Generous for a worker on a loaded machine, short against strangers.
constexpr double kHandshakeSeconds = 10;
// Connections still in the handshake; a newcomer beyond this evicts the oldest.
constexpr size_t kMaxHandshaking = 256;
// Every connection, authenticated or not (jobs hold one per rank).
constexpr size_t kMaxConnections = 65536;
// Refusals logged one by one; past this only a count is kept.
constexpr int kLoggedRefusals = 20;
// Longest wait a Get may ask for (its argument comes from the client).
constexpr int64_t kMaxWaitMs = int64_t{365} * 24 * 3600 * 1000;

// A reply message: one status byte, then the payload. (Built by appending:
// GCC 12 warns falsely on `"K" + std::string&&`.)
std::string Reply(char code, const std::string& payload = "") {
  std::string out(1, code);
  out += payload;
  return out;
}

struct Connection {
  explicit Connection(Socket socket, const std::string& secret)
      : link(std::move(socket)),
        peer(link.socket().PeerName()),
        handshake(std::make_unique<ServerHandshake>(secret, "store")),
        handshake_deadline(Deadline::AfterSeconds(kHandshakeSeconds)) {}

  FramedConnection link;
  std::string peer;
  std::unique_ptr<ServerHandshake> handshake;  // null once authenticated
  Deadline handshake_deadline;
  bool closing = false;  // close once the queued output has gone (a refusal)
  bool closed = false;
  bool refused = false;  // counted in refused_connections()
  // A Get waiting for its key.
  std::optional<std::string> wait_key;
  Deadline wait_until = Deadline(Clock::time_point());
};

class StoreServerImpl : public StoreServer {
 public:
  StoreServerImpl(Socket listener, int port, std::string secret, int wake_fd)
      : listener_(std::move(listener)), port_(port), secret_(std::move(secret)), wake_(wake_fd) {
    loop_thread_ = std::thread([this] { Loop(); });
  }
  ~StoreServerImpl() override {
    Stop();
    ::close(wake_);
  }

  int port() const override { return port_; }
  int refused_connections() const override { return refused_.load(); }

  std::vector<std::pair<std::string, std::string>> Published(
      const std::string& prefix) const override {
    std::lock_guard<std::mutex> lock(values_mu_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& key : order_) {
      if (key.rfind(prefix, 0) == 0) out.emplace_back(key, values_.at(key));
    }
    return out;
  }

  void WaitUntilIdle(Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait_until(lock, deadline.at(), [&] { return stopping_ || authenticated_ == 0; });
  }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    idle_.notify_all();
    const uint64_t one = 1;
    ssize_t ignored = ::write(wake_, &one, sizeof(one));
    (void)ignored;
    if (loop_thread_.joinable()) loop_thread_.join();
    listener_.Close();
  }

 private:
  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  void Loop() {
    std::vector<pollfd> fds;
    std::vector<Connection*> polled;
    while (!Stopping()) {
      fds.assign(1, pollfd{wake_, POLLIN, 0});
      const bool accepting = connections_.size() < kMaxConnections && !AcceptPaused();
      fds.push_back(pollfd{accepting ? listener_.fd() : -1, POLLIN, 0});
      polled.clear();
      for (auto& c : connections_) {
        // One request at a time: a parked Get only watches for a hang-up; a
        // refused connection only sends its refusal.
        short events = c->closing ? 0 : c->wait_key ? POLLRDHUP : POLLIN;
        if (c->link.has_output()) events |= POLLOUT;
        fds.push_back(pollfd{c->link.fd(), events, 0});
        polled.push_back(c.get());
      }
      if (::poll(fds.data(), fds.size(), NextTimeoutMs()) < 0 && errno != EINTR) {
        COHORT_LOG(kError) << "rendezvous store: poll: " << std::strerror(errno);
        continue;
      }
      if (fds[1].revents != 0) AcceptAll();
      for (size_t i = 0; i < polled.size(); ++i) {
        if (fds[i + 2].revents != 0) Serve(*polled[i], fds[i + 2].revents);
      }
      ExpireDeadlines();
      RemoveClosed();
    }
    for (auto& c : connections_) {
      if (c->wait_key) Answer(*c, "Estore is shutting down");
      c->link.socket().Shutdown();
    }
    connections_.clear();
    UpdateAuthenticated();
  }

  bool AcceptPaused() const { return accept_paused_ && !accept_paused_->Expired(); }

  // Until the next handshake or wait deadline; at most 1 s.
  int NextTimeoutMs() const {
    Deadline next = Deadline::AfterSeconds(1);
    auto consider = [&](const Deadline& d) {
      if (d.at() < next.at()) next = d;
    };
    if (accept_paused_) consider(*accept_paused_);
    for (const auto& c : connections_) {
      if (c->handshake) consider(c->handshake_deadline);
      if (c->wait_key) consider(c->wait_until);
    }
    return next.RemainingMs();
  }

  void AcceptAll() {
    accept_paused_.reset();
    while (connections_.size() < kMaxConnections) {
      int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: make room by dropping a stranger, or wait.
          if (!EvictOldestHandshake("out of file descriptors")) {
            accept_paused_ = Deadline::AfterSeconds(0.1);
            return;
          }
          continue;
        }
        return;  // EAGAIN: nothing more to accept
      }
      if (Handshaking() >= kMaxHandshaking) EvictOldestHandshake("too many handshakes at once");
      auto c = std::make_unique<Connection>(Socket(fd), secret_);
      c->link.QueueMessage(c->handshake->challenge());
      Flush(*c);
      connections_.push_back(std::move(c));
    }
  }

  size_t Handshaking() const {
    size_t n = 0;
    for (const auto& c : connections_) n += (c->handshake && !c->closed) ? 1 : 0;
    return n;
  }

  bool EvictOldestHandshake(const std::string& why) {
    for (auto& c : connections_) {  // in order of arrival
      if (c->handshake && !c->closed) {
        Drop(*c, "dropped during the handshake: " + why);
        return true;
      }
    }
    return false;
  }

  // Closes `c`; a connection that never authenticated counts as refused.
  void Drop(Connection& c, const std::string& why) {
    if (c.handshake) Refuse(c, why);
    c.closed = true;
  }

  // Counts and logs a refusal (once per connection).
  void Refuse(Connection& c, const std::string& why) {
    if (c.refused) return;
    c.refused = true;
    const int n = ++refused_;
    if (n <= kLoggedRefusals) {
      COHORT_LOG(kWarning) << "rendezvous store refused connection from " << c.peer << ": " << why
                           << (n == kLoggedRefusals ? " (further refusals are not logged)" : "");
    }
  }

  void Serve(Connection& c, short revents) {
    if (c.closed) return;
    if (c.wait_key && (revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      c.closed = true;  // gone while its Get waited
      return;
    }
    if (!Flush(c)) return;
    if (c.closing) return;
    while (!c.closed && !c.wait_key) {
      std::string message;
      const size_t limit = c.handshake ? ServerHandshake::kMaxMessage : sp::kMaxMessage;
      Result<bool> got = c.link.ReadMessage(limit, &message);
      if (!got.ok()) {
        // Hung up, or broke the protocol.
        Drop(c, "no handshake reply: " + got.status().message());
        return;
      }
      if (!*got) return;
      if (c.handshake) {
        FinishHandshake(c, message);
      } else {
        Handle(c, message);
      }
      Flush(c);
    }
  }

  void FinishHandshake(Connection& c, const std::string& reply) {
    std::string verdict;
    Status checked = c.handshake->Check(reply, &verdict);
    if (!checked.ok()) {
      Refuse(c, checked.message());
      c.closing = true;  // after sending the refusal: the client learns why
    } else {
      c.handshake.reset();
    }
    c.link.QueueMessage(verdict);
    UpdateAuthenticated();
  }

  // Sends queued output; false when the connection is gone or done.
  bool Flush(Connection& c) {
    Result<bool> flushed = c.link.Flush();
    if (!flushed.ok()) {
      Drop(c, flushed.status().message());
      return false;
    }
    if (*flushed && c.closing) c.closed = true;
    return !c.closed;
  }

  void Answer(Connection& c, const std::string& reply) {
    c.wait_key.reset();
    c.link.QueueMessage(reply);
    Flush(c);
  }

  // Sets `key`, remembering the order keys first appeared in.
  void Put(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(values_mu_);
    auto [it, added] = values_.insert_or_assign(key, value);
    if (added) order_.push_back(key);
  }

  std::optional<std::string> Lookup(const std::string& key) const {
    std::lock_guard<std::mutex> lock(values_mu_);
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  void Handle(Connection& c, const std::string& message) {
    sp::Request request;
    if (!sp::DecodeRequest(message, &request)) return Answer(c, "Emalformed request");
    switch (request.op) {
      case 'S':
        Put(request.key, request.argument);
        Answer(c, "K");
        return WakeWaiters(request.key);
      case 'A': {
        std::optional<std::string> old = Lookup(request.key);
        const int64_t now = (old ? sp::DecodeI64(*old, 0) : 0) + sp::DecodeI64(request.argument, 0);
        Put(request.key, sp::EncodeI64(now));
        Answer(c, Reply('K', sp::EncodeI64(now)));
        return WakeWaiters(request.key);
      }
      case 'G': {
        if (std::optional<std::string> value = Lookup(request.key)) {
          return Answer(c, Reply('K', *value));
        }
        const int64_t wait_ms =
            std::clamp<int64_t>(sp::DecodeI64(request.argument, 0), 0, kMaxWaitMs);
        c.wait_key = request.key;
        c.wait_until = Deadline::After(std::chrono::milliseconds(wait_ms));
        return;
      }
    }
    std::string error = "Eunknown op ";
    error += std::to_string(static_cast<int>(request.op));
    Answer(c, error);
  }

  void WakeWaiters(const std::string& key) {
    const std::string reply = Reply('K', *Lookup(key));
    for (auto& c : connections_) {
      if (!c->closed && c->wait_key == key) Answer(*c, reply);
    }
  }

  void ExpireDeadlines() {
    for (auto& c : connections_) {
      if (c->closed) continue;
      if (c->handshake && c->handshake_deadline.Expired()) {
        Drop(*c,
             "no handshake within " + std::to_string(static_cast<int>(kHandshakeSeconds)) + " s");
      } else if (c->wait_key && c->wait_until.Expired()) {
        Answer(*c, "T");
      }
    }
  }

  void RemoveClosed() {
    const size_t before = connections_.size();
    connections_.remove_if([](const std::unique_ptr<Connection>& c) { return c->closed; });
    if (connections_.size() != before) UpdateAuthenticated();
  }

  void UpdateAuthenticated() {
    int n = 0;
    for (const auto& c : connections_) n += (!c->handshake && !c->closed) ? 1 : 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      authenticated_ = n;
    }
    idle_.notify_all();
  }

  Socket listener_;
  const int port_;
  const std::string secret_;
  const int wake_;  // eventfd: Stop() wakes the loop through it
  std::thread loop_thread_;
  std::atomic<int> refused_{0};

  // Owned by the loop thread.
  std::list<std::unique_ptr<Connection>> connections_;
  std::optional<Deadline> accept_paused_;

  // Written by the loop thread, read by Published() from any thread.
  mutable std::mutex values_mu_;
  std::map<std::string, std::string> values_;  // guarded by values_mu_
  std::vector<std::string> order_;             // guarded by values_mu_; keys as first set

  std::mutex mu_;
  std::condition_variable idle_;
  bool stopping_ = false;  // guarded by mu_
  int authenticated_ = 0;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<StoreServer>> StoreServer::Start(const std::string& bind_host, int port,
                                                        const std::string& secret) {
  if (secret.empty()) return Status::InvalidArgument("rendezvous store needs a job secret");
  Result<Socket> listener = Socket::Listen(bind_host, port, 4096);
  if (!listener.ok()) {
    Status why = listener.status().WithContext("starting the rendezvous store");
    if (port == 0) return why;
    // A fixed port derived from the launcher's job id: another job (or job
    // step) may hold it.
    return Status(why.code(), why.message() + " (another job may be using port " +
                                  std::to_string(port) +
                                  "; set COHORT_STORE_PORT to a free port on every rank)");
  }
  Result<int> bound = listener->LocalPort();
  if (!bound.ok()) return bound.status();
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  return std::unique_ptr<StoreServer>(
      new StoreServerImpl(std::move(listener).value(), *bound, secret, wake));
}

}  // namespace cohort
