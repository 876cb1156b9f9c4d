// ChunkedDecoder: a "Transfer-Encoding: chunked" request body decoded as it
// arrives. It keeps its place between reads, so every byte is looked at once
// however the body is split (a body sent in 1-byte chunks costs linear work,
// not a rescan from the start on every read).
#ifndef COHORT_HTTP_SERVER_CHUNKED_DECODER_H_
#define COHORT_HTTP_SERVER_CHUNKED_DECODER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "http/server/body_sink.h"

namespace cohort::http {

class ChunkedDecoder {
 public:
  enum class State { kNeedMore, kDone, kMalformed, kTooLarge, kSinkFailed };

  // `limit`: the most body bytes accepted; `max_line`: the longest chunk-size
  // or trailer line; `max_trailer`: the most trailer bytes in all.
  explicit ChunkedDecoder(uint64_t limit, size_t max_line = 4096, size_t max_trailer = 16 << 10)
      : limit_(limit), max_line_(max_line), max_trailer_(max_trailer) {}

  // Decodes from `in`, sending body bytes to `sink`. *used: how many bytes
  // of `in` were consumed (all of them unless the body ended inside `in`;
  // what follows is the next request). Call again with the next bytes while
  // kNeedMore.
  State Feed(std::string_view in, size_t* used, BodySink* sink);

  // What was wrong, for kMalformed; the sink's error, for kSinkFailed.
  const std::string& problem() const { return problem_; }
  const Status& sink_status() const { return sink_status_; }
  uint64_t body_bytes() const { return body_bytes_; }
  // Bytes examined so far, to show the work is linear in the input.
  uint64_t scanned() const { return scanned_; }

 private:
  enum class Step {
    kSize,
    kExtension,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailer,
    kTrailerLf,
    kDone
  };

  State Fail(State state, std::string problem) {
    problem_ = std::move(problem);
    failed_ = state;
    return state;
  }

  uint64_t limit_;
  size_t max_line_;
  size_t max_trailer_;
  Step step_ = Step::kSize;
  uint64_t chunk_size_ = 0;  // of the chunk being read
  uint64_t chunk_left_ = 0;  // its bytes still to come
  size_t size_digits_ = 0;
  size_t line_bytes_ = 0;  // of the size or trailer line being read
  size_t trailer_bytes_ = 0;
  uint64_t body_bytes_ = 0;
  uint64_t scanned_ = 0;
  State failed_ = State::kNeedMore;
  std::string problem_;
  Status sink_status_;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_CHUNKED_DECODER_H_
