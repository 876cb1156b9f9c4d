// BodySink: where a request body goes as it arrives: a string reserved once
// (JSON API requests) or a spooled file (uploads).
#ifndef COHORT_HTTP_SERVER_BODY_SINK_H_
#define COHORT_HTTP_SERVER_BODY_SINK_H_

#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::http {

class BodySink {
 public:
  virtual ~BodySink() = default;
  virtual Status Append(std::string_view bytes) = 0;
};

// Appends to a string the caller reserved (no reallocation when the
// Content-Length was known: peak memory is the body once).
class StringSink : public BodySink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  Status Append(std::string_view bytes) override {
    out_->append(bytes);
    return Status::OK();
  }

 private:
  std::string* out_;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_BODY_SINK_H_
