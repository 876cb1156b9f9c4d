// Rendezvous store client: one authenticated connection, one request at a time.
#include "rendezvous/store_client.h"

#include <mutex>

#include "net/auth.h"
#include "net/socket.h"
#include "rendezvous/store_protocol.h"

namespace cohort {
namespace {

namespace sp = store_protocol;

class StoreClientImpl : public StoreClient {
 public:
  StoreClientImpl(Socket socket, std::string where)
      : socket_(std::move(socket)), where_(std::move(where)) {}

  Status Set(const std::string& key, const std::string& value) override {
    Result<std::string> reply = Call(sp::EncodeRequest('S', key, value), Deadline::AfterSeconds(60));
    return reply.status();
  }

  Result<std::string> Get(const std::string& key, Deadline deadline) override {
    int64_t wait_ms = deadline.RemainingMs();
    Result<std::string> reply =
        Call(sp::EncodeRequest('G', key, sp::EncodeI64(wait_ms)),
             Deadline(deadline.at() + std::chrono::seconds(30)));
    if (reply.status().code() == Status::Code::kTimeout) {
      return Status::Timeout("waited " + std::to_string(wait_ms / 1000.0) +
                             " s for key '" + key + "' in the rendezvous store at " + where_);
    }
    return reply;
  }

  Result<int64_t> Add(const std::string& key, int64_t delta) override {
    Result<std::string> reply =
        Call(sp::EncodeRequest('A', key, sp::EncodeI64(delta)), Deadline::AfterSeconds(60));
    if (!reply.ok()) return reply.status();
    return sp::DecodeI64(*reply, 0);
  }

  Status Barrier(const std::string& name, int count, Deadline deadline) override {
    Result<int64_t> arrived = Add("barrier/" + name, 1);
    if (!arrived.ok()) return arrived.status();
    if (*arrived == count) COHORT_RETURN_IF_ERROR(Set("barrier/" + name + "/done", "1"));
    Result<std::string> done = Get("barrier/" + name + "/done", deadline);
    return done.status();
  }

 private:
  // Sends one request and returns the reply payload; 'T' becomes kTimeout.
  Result<std::string> Call(const std::string& request, Deadline deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    Status sent = socket_.SendMessage(request, deadline);
    if (!sent.ok()) return sent.WithContext("rendezvous store at " + where_);
    Result<std::string> reply = socket_.RecvMessage(deadline, sp::kMaxMessage);
    if (!reply.ok()) return reply.status().WithContext("rendezvous store at " + where_);
    if (reply->empty()) return Status::IoError("empty reply from rendezvous store at " + where_);
    switch ((*reply)[0]) {
      case 'K': return reply->substr(1);
      case 'T': return Status::Timeout("rendezvous store wait timed out");
      default: return Status::IoError("rendezvous store at " + where_ + ": " + reply->substr(1));
    }
  }

  std::mutex mu_;
  Socket socket_;
  const std::string where_;
};

}  // namespace

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const std::string& host, int port,
                                                          const std::string& secret,
                                                          Deadline deadline) {
  const std::string where = host + ":" + std::to_string(port);
  Result<Socket> socket = Socket::Connect(host, port, deadline);
  if (!socket.ok()) return socket.status().WithContext("rendezvous store");
  Status auth = AuthenticateClient(*socket, secret, "store", deadline);
  if (!auth.ok()) return auth.WithContext("rendezvous store at " + where);
  return std::unique_ptr<StoreClient>(new StoreClientImpl(std::move(socket).value(), where));
}

}  // namespace cohort
