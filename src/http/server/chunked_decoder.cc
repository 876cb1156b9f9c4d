// Incremental decoding of chunked request bodies.
#include "http/server/chunked_decoder.h"

#include <algorithm>

#include "http/server/http_message.h"

namespace cohort::http {
namespace {

constexpr size_t kMaxSizeDigits = 15;  // 2^60 bytes: past any limit, and no overflow

}  // namespace

ChunkedDecoder::State ChunkedDecoder::Feed(std::string_view in, size_t* used, BodySink* sink) {
  *used = 0;
  if (failed_ != State::kNeedMore) return failed_;
  if (step_ == Step::kDone) return State::kDone;
  size_t i = 0;
  while (i < in.size()) {
    if (step_ == Step::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_left_, in.size() - i));
      Status s = sink->Append(in.substr(i, n));
      i += n;
      scanned_ += n;
      chunk_left_ -= n;
      body_bytes_ += n;
      *used = i;
      if (!s.ok()) {
        sink_status_ = s;
        return Fail(State::kSinkFailed, s.message());
      }
      if (chunk_left_ == 0) step_ = Step::kDataCr;
      continue;
    }
    const char c = in[i++];
    ++scanned_;
    *used = i;
    switch (step_) {
      case Step::kSize: {
        int digit = HexDigitValue(c);
        if (digit >= 0) {
          if (++size_digits_ > kMaxSizeDigits)
            return Fail(State::kMalformed, "chunk size too long");
          chunk_size_ = chunk_size_ * 16 + static_cast<uint64_t>(digit);
        } else if (size_digits_ > 0 && c == ';') {
          step_ = Step::kExtension;
        } else if (size_digits_ > 0 && c == '\r') {
          step_ = Step::kSizeLf;
        } else {
          return Fail(State::kMalformed, "malformed chunk size");
        }
        break;
      }
      case Step::kExtension:
        if (c == '\r') {
          step_ = Step::kSizeLf;
        } else if (c == '\n' || c == '\0' || ++line_bytes_ > max_line_) {
          return Fail(State::kMalformed, "malformed chunk extension");
        }
        break;
      case Step::kSizeLf:
        if (c != '\n') return Fail(State::kMalformed, "malformed chunk size line");
        if (chunk_size_ > limit_ - body_bytes_) {
          return Fail(State::kTooLarge,
                      "the chunked body exceeds " + std::to_string(limit_) + " bytes");
        }
        chunk_left_ = chunk_size_;
        step_ = chunk_size_ == 0 ? Step::kTrailer : Step::kData;
        chunk_size_ = 0;
        size_digits_ = 0;
        line_bytes_ = 0;
        break;
      case Step::kDataCr:
        if (c != '\r') return Fail(State::kMalformed, "chunk data not followed by CRLF");
        step_ = Step::kDataLf;
        break;
      case Step::kDataLf:
        if (c != '\n') return Fail(State::kMalformed, "chunk data not followed by CRLF");
        step_ = Step::kSize;
        break;
      case Step::kTrailer:
        if (c == '\r') {
          step_ = Step::kTrailerLf;
        } else if (c == '\n' || c == '\0' || ++line_bytes_ > max_line_ ||
                   ++trailer_bytes_ > max_trailer_) {
          return Fail(State::kMalformed, "malformed or oversized trailer");
        }
        break;
      case Step::kTrailerLf:
        if (c != '\n') return Fail(State::kMalformed, "malformed trailer line");
        if (line_bytes_ == 0) {
          step_ = Step::kDone;
          return State::kDone;
        }
        line_bytes_ = 0;
        step_ = Step::kTrailer;
        break;
      case Step::kData:
      case Step::kDone:
        break;  // handled above
    }
  }
  return State::kNeedMore;
}

}  // namespace cohort::http
