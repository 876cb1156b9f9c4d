// Link over a TCP socket.
#include "net/link.h"
#include "net/socket.h"

namespace cohort {
namespace {

class TcpLink : public Link {
 public:
  explicit TcpLink(Socket socket) : socket_(std::move(socket)) { socket_.TuneForBulk(); }

  Result<size_t> TrySend(const void* data, size_t len) override {
    return socket_.TrySend(data, len);
  }
  Result<size_t> TryRecv(void* data, size_t len) override { return socket_.TryRecv(data, len); }
  int send_fd() const override { return socket_.fd(); }
  int recv_fd() const override { return socket_.fd(); }
  void Close() override { socket_.Shutdown(); }
  bool CanMove(bool, bool) const override { return false; }  // poll(2) its fd instead
  const char* kind() const override { return "tcp"; }

 private:
  Socket socket_;
};

}  // namespace

std::unique_ptr<Link> MakeTcpLink(Socket socket) {
  return std::make_unique<TcpLink>(std::move(socket));
}

}  // namespace cohort
