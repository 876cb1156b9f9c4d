// Non-blocking message framing (see framed_connection.h).
#include "net/framed_connection.h"

#include <algorithm>

namespace cohort {

Result<bool> FramedConnection::Fill(size_t count) {
  while (in_.size() < count) {
    char buffer[4096];
    const size_t want = std::min(count - in_.size(), sizeof(buffer));
    Result<size_t> n = socket_.TryRecv(buffer, want);
    if (!n.ok()) return n.status();
    if (*n == 0) return false;
    in_.append(buffer, *n);
  }
  return true;
}

Result<bool> FramedConnection::ReadMessage(size_t max_len, std::string* message) {
  if (!have_length_) {
    Result<bool> header = Fill(4);
    if (!header.ok() || !*header) return header;
    const auto* h = reinterpret_cast<const unsigned char*>(in_.data());
    length_ = h[0] | (h[1] << 8) | (h[2] << 16) | (size_t{h[3]} << 24);
    if (length_ > max_len) {
      return Status::IoError("message of " + std::to_string(length_) +
                             " bytes exceeds the limit of " + std::to_string(max_len));
    }
    have_length_ = true;
    in_.clear();
  }
  Result<bool> body = Fill(length_);
  if (!body.ok() || !*body) return body;
  *message = std::move(in_);
  in_.clear();
  have_length_ = false;
  return true;
}

Result<bool> FramedConnection::ReadBytes(size_t count, std::string* bytes) {
  Result<bool> filled = Fill(count);
  if (!filled.ok() || !*filled) return filled;
  *bytes = std::move(in_);
  in_.clear();
  return true;
}

void FramedConnection::QueueMessage(const std::string& message) {
  if (sent_ == out_.size()) {
    out_.clear();
    sent_ = 0;
  }
  const uint32_t len = static_cast<uint32_t>(message.size());
  for (int i = 0; i < 4; ++i) out_ += static_cast<char>((len >> (8 * i)) & 0xff);
  out_ += message;
}

Result<bool> FramedConnection::Flush() {
  while (sent_ < out_.size()) {
    Result<size_t> n = socket_.TrySend(out_.data() + sent_, out_.size() - sent_);
    if (!n.ok()) return n.status();
    if (*n == 0) return false;
    sent_ += *n;
  }
  return true;
}

}  // namespace cohort
