// One connection's requests and answers, read and written without blocking.
#include "http/server/http_connection.h"

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "http/server/request_head.h"

namespace cohort::http {
namespace {

constexpr uint64_t kDefaultBodyLimit = 16 << 20;
constexpr size_t kInitialBodyReserve = 1 << 20;  // grown as bytes arrive, never past the length
constexpr size_t kReadBudget = 4 << 20;          // per wake-up, so one client cannot starve others
constexpr uint64_t kMaxLingerBytes = 1 << 20;    // read and dropped after a refusal
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kKeptBufferBytes = 16 << 10;  // an idle connection keeps at most this

// Whether a comma-separated header value holds `token` (lower case).
bool HasToken(const std::string& value, const std::string& token) {
  std::string v = AsciiLower(value);
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    size_t b = v.find_first_not_of(" \t", pos);
    size_t e = v.find_last_not_of(" \t", comma == 0 ? 0 : comma - 1);
    if (b != std::string::npos && b < comma && e != std::string::npos && e >= b &&
        v.compare(b, e - b + 1, token) == 0) {
      return true;
    }
    pos = comma + 1;
  }
  return false;
}

// Digits only; a value past 2^64 reads as the largest (refused as too large).
std::optional<uint64_t> ParseContentLength(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (char c : text) {
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return UINT64_MAX;
    value = value * 10 + digit;
  }
  return value;
}

std::string Mebibytes(uint64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// "20 s", or "300 ms" for what is not whole seconds.
std::string Duration(int ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

std::string SerializeHead(const ServerResponse& r, uint64_t body_size, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(body_size) +
                    "\r\nX-Content-Type-Options: nosniff" +
                    (keep_alive ? "\r\nConnection: keep-alive" : "\r\nConnection: close");
  for (const auto& [name, value] : r.headers) out += "\r\n" + name + ": " + value;
  out += "\r\n\r\n";
  return out;
}

}  // namespace

HttpConnection::HttpConnection(Fd fd, const HttpServerOptions& options, Clock::time_point now)
    : fd_(std::move(fd)), options_(options), phase_start_(now) {}

Clock::time_point HttpConnection::deadline() const {
  using std::chrono::milliseconds;
  switch (phase_) {
    case Phase::kIdle:
      return phase_start_ + milliseconds(options_.idle_timeout_ms);
    case Phase::kHead:
      return phase_start_ + milliseconds(options_.header_timeout_ms);
    case Phase::kBody: {
      uint64_t rate = std::max<uint64_t>(options_.min_body_rate, 1);
      return phase_start_ + milliseconds(options_.body_timeout_ms) +
             milliseconds(body_received_ * 1000 / rate);
    }
    case Phase::kWriting:
      return phase_start_ + milliseconds(options_.send_timeout_ms);
    case Phase::kLingering:
      return phase_start_ + kLingerTime;
    case Phase::kHandling:
      break;
  }
  return Clock::time_point::max();
}

HttpConnection::Next HttpConnection::OnReadable(char* scratch, size_t scratch_size,
                                                Clock::time_point now) {
  size_t read = 0;
  while (phase_ != Phase::kHandling && phase_ != Phase::kWriting) {
    ssize_t n = ::recv(fd_.get(), scratch, scratch_size, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Next::kWait;
    if (n <= 0) return Next::kClose;  // the client left (mid-request: nothing to answer)
    if (phase_ == Phase::kLingering) {
      drained_ += static_cast<uint64_t>(n);
      if (drained_ > kMaxLingerBytes) return Next::kClose;
      continue;
    }
    std::string_view data(scratch, static_cast<size_t>(n));
    Next next;
    if (phase_ == Phase::kBody && in_.empty()) {
      // Body bytes go straight from the read to their sink.
      size_t used = 0;
      next = FeedBody(data, &used, now);
      if (phase_ == Phase::kHandling) in_.append(data.substr(used));  // the next request
    } else {
      in_.append(data);
      next = Advance(now);
    }
    if (next != Next::kWait) return next;
    read += static_cast<size_t>(n);
    if (read >= kReadBudget) return Next::kWait;  // level-triggered: the loop comes back
  }
  return Next::kWait;
}

HttpConnection::Next HttpConnection::Advance(Clock::time_point now) {
  while (true) {
    switch (phase_) {
      case Phase::kIdle:
        if (in_.empty()) return Next::kWait;
        phase_ = Phase::kHead;
        phase_start_ = now;
        head_scanned_ = 0;
        [[fallthrough]];
      case Phase::kHead: {
        size_t end = in_.find("\r\n\r\n", head_scanned_ >= 3 ? head_scanned_ - 3 : 0);
        if (end == std::string::npos || end > options_.max_header_bytes) {
          if (in_.size() > options_.max_header_bytes) {
            return Refuse(
                431,
                "request head larger than " + std::to_string(options_.max_header_bytes) + " bytes",
                now);
          }
          head_scanned_ = in_.size();
          return Next::kWait;
        }
        Next next = BeginRequest(end, now);
        if (phase_ != Phase::kBody) return next;
        break;
      }
      case Phase::kBody: {
        if (in_.empty()) return Next::kWait;
        size_t used = 0;
        Next next = FeedBody(in_, &used, now);
        in_.erase(0, used);
        return next;
      }
      case Phase::kHandling:
      case Phase::kWriting:
      case Phase::kLingering:
        return Next::kWait;
    }
  }
}

HttpConnection::Next HttpConnection::BeginRequest(size_t head_end, Clock::time_point now) {
  request_ = ServerRequest();
  chunked_ = false;
  body_left_ = 0;
  body_received_ = 0;
  std::optional<ServerResponse> malformed =
      ParseRequestHead(std::string_view(in_).substr(0, head_end), &request_);
  in_.erase(0, head_end + 4);
  head_method_ = request_.method == "HEAD";
  if (malformed) return StartAnswer(*malformed, /*keep_alive=*/false, now);
  std::string connection = request_.Header("connection");
  keep_alive_ =
      request_.http10 ? HasToken(connection, "keep-alive") : !HasToken(connection, "close");
  if (!request_.http10 && request_.Header("host").empty()) {
    return Refuse(400, "missing Host header (HTTP/1.1 requires one)", now);
  }
  std::string encoding = request_.Header("transfer-encoding");
  if (!encoding.empty()) {
    if (AsciiLower(encoding) != "chunked") {
      return Refuse(501, "unsupported Transfer-Encoding '" + encoding + "' (only chunked)", now);
    }
    chunked_ = true;
  } else if (request_.headers.count("content-length")) {
    std::optional<uint64_t> length = ParseContentLength(request_.Header("content-length"));
    if (!length) return Refuse(400, "malformed Content-Length", now);
    body_left_ = *length;
  }
  const bool has_body = chunked_ || body_left_ > 0;
  Admission admission;
  admission.body_limit = kDefaultBodyLimit;
  if (options_.admit) admission = options_.admit(request_);
  if (admission.refuse) return StartAnswer(*admission.refuse, keep_alive_ && !has_body, now);
  body_limit_ = admission.body_limit;
  if (!chunked_ && body_left_ > body_limit_) {
    return Refuse(413,
                  "request body too large: " + request_.method + " " + request_.path +
                      " takes at most " + std::to_string(body_limit_) + " bytes (" +
                      Mebibytes(body_limit_) + "); this one is " + std::to_string(body_left_),
                  now);
  }
  std::string expect = request_.Header("expect");
  if (!expect.empty()) {
    if (AsciiLower(expect) != "100-continue")
      return Refuse(417, "unsupported Expect: " + expect, now);
    if (has_body && !request_.http10) {
      // The client waits for this before sending the body (curl, large uploads).
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      ssize_t n = ::send(fd_.get(), kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n != static_cast<ssize_t>(sizeof kContinue - 1)) return Next::kClose;
    }
  }
  if (has_body && !admission.spool_dir.empty()) {
    auto spool = SpooledFile::Create(admission.spool_dir);
    if (!spool.ok()) return Refuse(500, "cannot take the upload: " + spool.status().message(), now);
    spool_ = std::move(*spool);
  } else if (!chunked_) {
    request_.body.reserve(static_cast<size_t>(std::min<uint64_t>(body_left_, kInitialBodyReserve)));
  }
  if (chunked_) chunked_decoder_ = std::make_unique<ChunkedDecoder>(body_limit_);
  phase_ = Phase::kBody;
  phase_start_ = now;
  if (!has_body) return BodyComplete(now);
  return Next::kWait;
}

HttpConnection::Next HttpConnection::FeedBody(std::string_view data, size_t* used,
                                              Clock::time_point now) {
  *used = 0;
  StringSink memory(&request_.body);
  BodySink* sink = spool_ ? static_cast<BodySink*>(spool_.get()) : &memory;
  if (chunked_) {
    ChunkedDecoder::State state = chunked_decoder_->Feed(data, used, sink);
    body_received_ = chunked_decoder_->body_bytes();
    switch (state) {
      case ChunkedDecoder::State::kNeedMore:
        return Next::kWait;
      case ChunkedDecoder::State::kDone:
        return BodyComplete(now);
      case ChunkedDecoder::State::kMalformed:
        return Refuse(400, "malformed chunked body: " + chunked_decoder_->problem(), now);
      case ChunkedDecoder::State::kTooLarge:
        return Refuse(413,
                      "request body too large: " + request_.method + " " + request_.path +
                          " takes at most " + std::to_string(body_limit_) + " bytes (" +
                          Mebibytes(body_limit_) + "); the chunked body exceeded it",
                      now);
      case ChunkedDecoder::State::kSinkFailed:
        return Refuse(500, "cannot take the upload: " + chunked_decoder_->problem(), now);
    }
  }
  size_t n = static_cast<size_t>(std::min<uint64_t>(body_left_, data.size()));
  if (!spool_) {
    // Grows by doubling, never past the announced length: peak under twice the body.
    size_t need = request_.body.size() + n;
    if (need > request_.body.capacity()) {
      uint64_t total = body_received_ + body_left_;
      request_.body.reserve(static_cast<size_t>(
          std::min<uint64_t>(total, std::max<uint64_t>(need, 2 * request_.body.capacity()))));
    }
  }
  Status s = sink->Append(data.substr(0, n));
  if (!s.ok()) return Refuse(500, "cannot take the upload: " + s.message(), now);
  *used = n;
  body_left_ -= n;
  body_received_ += n;
  if (body_left_ == 0) return BodyComplete(now);
  return Next::kWait;
}

HttpConnection::Next HttpConnection::BodyComplete(Clock::time_point now) {
  if (spool_) request_.body_file = std::shared_ptr<SpooledFile>(std::move(spool_));
  chunked_decoder_.reset();
  phase_ = Phase::kHandling;
  phase_start_ = now;
  return Next::kDispatch;
}

HttpConnection::Next HttpConnection::Respond(ServerResponse response, Clock::time_point now) {
  return StartAnswer(response, keep_alive_, now);
}

HttpConnection::Next HttpConnection::Refuse(int status, const std::string& message,
                                            Clock::time_point now) {
  return StartAnswer(PlainError(status, message), /*keep_alive=*/false, now);
}

HttpConnection::Next HttpConnection::StartAnswer(const ServerResponse& response, bool keep_alive,
                                                 Clock::time_point now) {
  const bool head_only = head_method_;
  // What is left of a refused request goes now (its spool file with it).
  spool_.reset();
  chunked_decoder_.reset();
  request_ = ServerRequest();
  answer_keep_alive_ = keep_alive;
  uint64_t size = response.file ? response.file->size : response.body.size();
  out_ = SerializeHead(response, size, keep_alive);
  out_sent_ = 0;
  file_sent_ = 0;
  out_file_ = nullptr;
  if (!head_only) {
    out_ += response.body;
    out_file_ = response.file;
  }
  phase_ = Phase::kWriting;
  phase_start_ = now;
  return Flush(now);
}

HttpConnection::Next HttpConnection::OnWritable(Clock::time_point now) {
  if (phase_ != Phase::kWriting) return Next::kWait;
  return Flush(now);
}

HttpConnection::Next HttpConnection::Flush(Clock::time_point now) {
  while (out_sent_ < out_.size()) {
    ssize_t n = ::send(fd_.get(), out_.data() + out_sent_, out_.size() - out_sent_,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Next::kWait;
    if (n <= 0) return Next::kClose;
    out_sent_ += static_cast<size_t>(n);
    phase_start_ = now;  // progress: the send deadline starts again
  }
  while (out_file_ && file_sent_ < out_file_->size) {
    off_t offset = static_cast<off_t>(file_sent_);
    size_t piece = static_cast<size_t>(std::min<uint64_t>(out_file_->size - file_sent_, 1 << 20));
    ssize_t n = ::sendfile(fd_.get(), out_file_->fd.get(), &offset, piece);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Next::kWait;
    if (n <= 0) return Next::kClose;  // an error, or the file shrank: the length was promised
    file_sent_ += static_cast<uint64_t>(n);
    phase_start_ = now;
  }
  return FinishAnswer(now);
}

HttpConnection::Next HttpConnection::FinishAnswer(Clock::time_point now) {
  out_.clear();
  if (out_.capacity() > kKeptBufferBytes) out_.shrink_to_fit();
  out_file_ = nullptr;
  request_ = ServerRequest();
  head_method_ = false;
  phase_start_ = now;
  if (!answer_keep_alive_) {
    // Half-close and read what the client still sends for a moment: closing
    // with unread bytes would reset the connection and could lose the answer.
    ::shutdown(fd_.get(), SHUT_WR);
    phase_ = Phase::kLingering;
    drained_ = 0;
    in_.clear();
    return Next::kWait;
  }
  phase_ = Phase::kIdle;
  if (in_.empty() && in_.capacity() > kKeptBufferBytes) in_.shrink_to_fit();
  // A request that came right behind this one waits for Resume: the loop
  // takes them one after another, never by recursion (a client may pipeline
  // thousands).
  return Next::kWait;
}

HttpConnection::Next HttpConnection::Resume(Clock::time_point now) { return Advance(now); }

HttpConnection::Next HttpConnection::OnDeadline(Clock::time_point now) {
  using std::chrono::duration_cast;
  switch (phase_) {
    case Phase::kHead:
      return Refuse(408, "request head not complete within " + Duration(options_.header_timeout_ms),
                    now);
    case Phase::kBody:
      return Refuse(
          408,
          "request body too slow: " + std::to_string(body_received_) + " bytes in " +
              std::to_string(duration_cast<std::chrono::seconds>(now - phase_start_).count()) +
              " s",
          now);
    case Phase::kHandling:
      return Next::kWait;
    case Phase::kIdle:
    case Phase::kWriting:
    case Phase::kLingering:
      break;
  }
  return Next::kClose;
}

}  // namespace cohort::http
