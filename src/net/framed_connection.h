// A non-blocking connection for event loops that serve many sockets on one
// thread: assembles the length-prefixed messages of Socket::SendMessage as
// bytes arrive, and queues outgoing ones until the socket takes them.
#ifndef COHORT_NET_FRAMED_CONNECTION_H_
#define COHORT_NET_FRAMED_CONNECTION_H_

#include <cstddef>
#include <string>

#include "cohort/status.h"
#include "net/socket.h"

namespace cohort {

class FramedConnection {
 public:
  explicit FramedConnection(Socket socket) : socket_(std::move(socket)) {}

  Socket& socket() { return socket_; }
  int fd() const { return socket_.fd(); }

  // Reads what has arrived of the next message, never past its end (the
  // bytes after it may belong to someone else, e.g. a link that takes the
  // socket over). True once the whole message is in `*message`; false while
  // more is to come. A message longer than `max_len` is an error.
  Result<bool> ReadMessage(size_t max_len, std::string* message);
  // The same for `count` raw bytes without a length prefix.
  Result<bool> ReadBytes(size_t count, std::string* bytes);

  // Queues `message` with its length prefix; Flush sends it.
  void QueueMessage(const std::string& message);
  // Sends as much queued output as the socket takes. True when none is left.
  Result<bool> Flush();
  bool has_output() const { return sent_ < out_.size(); }

 private:
  // Reads until `in_` holds `count` bytes. True when it does.
  Result<bool> Fill(size_t count);

  Socket socket_;
  std::string in_;  // bytes of the message being assembled
  bool have_length_ = false;
  size_t length_ = 0;  // of the message being assembled, once have_length_
  std::string out_;    // queued output; out_[0, sent_) has gone
  size_t sent_ = 0;
};

}  // namespace cohort

#endif  // COHORT_NET_FRAMED_CONNECTION_H_
