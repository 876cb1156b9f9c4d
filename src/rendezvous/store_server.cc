// Rendezvous store server: one accept thread and one thread per client
// connection (jobs have at most a few thousand ranks, each with one
// connection, and the store is idle after start-up).
#include "rendezvous/store_server.h"

#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "net/auth.h"
#include "net/socket.h"
#include "rendezvous/store_protocol.h"

namespace cohort {
namespace {

namespace sp = store_protocol;

// A reply message: one status byte, then the payload. (Built by appending:
// GCC 12 warns falsely on `"K" + std::string&&`.)
std::string Reply(char code, const std::string& payload = "") {
  std::string out(1, code);
  out += payload;
  return out;
}

Deadline Forever() { return Deadline::After(std::chrono::hours(24 * 365)); }

class StoreServerImpl : public StoreServer {
 public:
  StoreServerImpl(Socket listener, int port, std::string secret)
      : listener_(std::move(listener)), port_(port), secret_(std::move(secret)) {
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~StoreServerImpl() override { Stop(); }

  int port() const override { return port_; }
  int refused_connections() const override { return refused_.load(); }

  void WaitUntilIdle(Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_until(lock, deadline.at(), [&] { return stopping_ || clients_.empty(); });
  }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      for (Socket* s : clients_) s->Shutdown();
    }
    changed_.notify_all();
    listener_.Shutdown();
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(client_threads_);
    }
    for (std::thread& t : threads) t.join();
    listener_.Close();
  }

 private:
  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  void AcceptLoop() {
    while (!Stopping()) {
      pollfd p{listener_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      Result<Socket> client = listener_.Accept(Deadline::After(std::chrono::milliseconds(100)));
      if (!client.ok()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
      client_threads_.emplace_back(
          [this, s = std::make_shared<Socket>(std::move(client).value())] { Serve(*s); });
    }
  }

  void Serve(Socket& socket) {
    Status auth = AuthenticateServer(socket, secret_, "store", Deadline::AfterSeconds(30),
                                     [&](const Status& why) {
                                       COHORT_LOG(kWarning)
                                           << "rendezvous store refused connection from "
                                           << socket.PeerName() << ": " << why.message();
                                       ++refused_;
                                     });
    if (!auth.ok()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      clients_.push_back(&socket);
    }
    for (;;) {
      Result<std::string> message = socket.RecvMessage(Forever(), sp::kMaxMessage);
      if (!message.ok()) break;
      std::string reply = Handle(*message);
      if (!socket.SendMessage(reply, Deadline::AfterSeconds(30)).ok()) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(clients_, &socket);
    changed_.notify_all();
  }

  std::string Handle(const std::string& message) {
    sp::Request request;
    if (!sp::DecodeRequest(message, &request)) return "Emalformed request";
    std::unique_lock<std::mutex> lock(mu_);
    switch (request.op) {
      case 'S':
        values_[request.key] = request.argument;
        changed_.notify_all();
        return "K";
      case 'A': {
        int64_t now = (values_.count(request.key) ? sp::DecodeI64(values_[request.key], 0) : 0) +
                      sp::DecodeI64(request.argument, 0);
        values_[request.key] = sp::EncodeI64(now);
        changed_.notify_all();
        return Reply('K', sp::EncodeI64(now));
      }
      case 'G': {
        auto until = Clock::now() + std::chrono::milliseconds(sp::DecodeI64(request.argument, 0));
        bool found = changed_.wait_until(lock, until, [&] {
          return stopping_ || values_.count(request.key) > 0;
        });
        if (stopping_) return "Estore is shutting down";
        if (!found) return "T";
        return Reply('K', values_[request.key]);
      }
    }
    std::string error = "Eunknown op ";
    error += std::to_string(static_cast<int>(request.op));
    return error;
  }

  Socket listener_;
  const int port_;
  const std::string secret_;
  std::thread accept_thread_;
  std::atomic<int> refused_{0};

  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;                  // guarded by mu_
  std::map<std::string, std::string> values_;  // guarded by mu_
  std::vector<Socket*> clients_;           // guarded by mu_; sockets owned by their threads
  std::vector<std::thread> client_threads_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<StoreServer>> StoreServer::Start(const std::string& bind_host, int port,
                                                        const std::string& secret) {
  if (secret.empty()) return Status::InvalidArgument("rendezvous store needs a job secret");
  Result<Socket> listener = Socket::Listen(bind_host, port);
  if (!listener.ok()) return listener.status().WithContext("starting the rendezvous store");
  Result<int> bound = listener->LocalPort();
  if (!bound.ok()) return bound.status();
  return std::unique_ptr<StoreServer>(
      new StoreServerImpl(std::move(listener).value(), *bound, secret));
}

}  // namespace cohort
