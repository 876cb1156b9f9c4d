// HttpConnection: one client connection of the HTTP server, as a state
// machine driven by the event loop: it reads a request's head and body as
// bytes arrive (never blocking), hands the complete request out, writes the
// answer, and keeps the connection for the next request or closes it. Each
// phase has a deadline the loop enforces through OnDeadline.
#ifndef COHORT_HTTP_SERVER_HTTP_CONNECTION_H_
#define COHORT_HTTP_SERVER_HTTP_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/deadline.h"
#include "http/server/chunked_decoder.h"
#include "http/server/http_server.h"

namespace cohort::http {

class HttpConnection {
 public:
  enum class Phase {
    kIdle,       // between requests: nothing of the next one yet
    kHead,       // part of a head
    kBody,       // the head, part of the body
    kHandling,   // a handler has the request
    kWriting,    // the answer is being sent
    kLingering,  // answered and half-closed: reading what the client still sends, then close
  };
  // What the loop does next.
  enum class Next { kWait, kDispatch, kClose };

  HttpConnection(Fd fd, const HttpServerOptions& options, Clock::time_point now);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // The socket is readable: reads into `scratch` (shared by the loop's
  // connections) and parses what arrived.
  Next OnReadable(char* scratch, size_t scratch_size, Clock::time_point now);
  // The socket is writable: sends more of the answer.
  Next OnWritable(Clock::time_point now);
  // The handler's answer to the request TakeRequest gave out.
  Next Respond(ServerResponse response, Clock::time_point now);
  // deadline() has passed.
  Next OnDeadline(Clock::time_point now);
  // True when a next request has arrived (pipelined) but is not parsed yet:
  // call Resume.
  bool HasBufferedRequest() const { return phase_ == Phase::kIdle && !in_.empty(); }
  Next Resume(Clock::time_point now);

  // The complete request, after kDispatch.
  ServerRequest TakeRequest() { return std::move(request_); }
  // Answers the next response with "Connection: close" (the server stops).
  void CloseAfterAnswer() { keep_alive_ = false; }

  Phase phase() const { return phase_; }
  int fd() const { return fd_.get(); }
  // When the current phase times out; meaningless while kHandling.
  Clock::time_point deadline() const;
  // When the current head started (kHead), to evict the slowest first.
  Clock::time_point phase_start() const { return phase_start_; }

 private:
  // Parses what is in in_ as far as it goes.
  Next Advance(Clock::time_point now);
  // Starts a request from in_[0, head_end): framing, admission, body sink.
  Next BeginRequest(size_t head_end, Clock::time_point now);
  // Consumes body bytes from `data`; *used says how many.
  Next FeedBody(std::string_view data, size_t* used, Clock::time_point now);
  Next BodyComplete(Clock::time_point now);
  // Answers `response` (an error of ours, or the handler's) and sends what fits.
  Next StartAnswer(const ServerResponse& response, bool keep_alive, Clock::time_point now);
  Next Flush(Clock::time_point now);
  Next FinishAnswer(Clock::time_point now);
  Next Refuse(int status, const std::string& message, Clock::time_point now);

  Fd fd_;
  const HttpServerOptions& options_;
  Phase phase_ = Phase::kIdle;
  Clock::time_point phase_start_;
  std::string in_;           // received bytes not yet consumed
  size_t head_scanned_ = 0;  // in_ holds no blank line before this offset

  // The request being read.
  ServerRequest request_;
  bool keep_alive_ = true;
  bool head_method_ = false;  // a HEAD request: its answer has no body
  bool chunked_ = false;
  uint64_t body_left_ = 0;  // Content-Length framing: bytes still to come
  uint64_t body_limit_ = 0;
  uint64_t body_received_ = 0;
  std::unique_ptr<ChunkedDecoder> chunked_decoder_;
  std::unique_ptr<SpooledFile> spool_;  // the body's file, for spooled uploads

  // The answer being written.
  std::string out_;
  size_t out_sent_ = 0;
  std::shared_ptr<FileBody> out_file_;
  uint64_t file_sent_ = 0;
  bool answer_keep_alive_ = false;
  uint64_t drained_ = 0;  // bytes read and dropped while lingering
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_HTTP_CONNECTION_H_
