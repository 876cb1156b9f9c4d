// Status formatting.
#include "cohort/status.h"

namespace cohort {

const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kMismatch: return "mismatch across ranks";
    case Status::Code::kTimeout: return "timeout";
    case Status::Code::kPeerFailure: return "peer failure";
    case Status::Code::kUnauthenticated: return "unauthenticated";
    case Status::Code::kIoError: return "I/O error";
    case Status::Code::kNotInitialized: return "not initialized";
    case Status::Code::kInternal: return "internal error";
    case Status::Code::kInterrupted: return "interrupted";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kAlreadyExists: return "already exists";
    case Status::Code::kPermissionDenied: return "permission denied";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kAborted: return "aborted";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace cohort
