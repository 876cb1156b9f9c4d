// Status and Result<T>: how every cohort function reports success or failure.
//
// Errors are values inside the library. A Status is either OK or carries a
// code and a message that says what went wrong and where (which rank, which
// host, which argument). Bindings turn a failed Status into an exception.
#ifndef COHORT_STATUS_H_
#define COHORT_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace cohort {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // the caller passed something wrong
    kMismatch,         // ranks passed arguments that disagree
    kTimeout,          // a deadline passed while waiting for a peer
    kPeerFailure,      // a peer died, disconnected or aborted
    kUnauthenticated,  // a connection failed the job-secret handshake
    kIoError,          // an operating-system call failed
    kNotInitialized,   // the runtime is not (or no longer) running
    kInternal,         // a broken invariant inside cohort
    kInterrupted,      // the caller's interrupt check ended a wait (the operation goes on)
    kNotFound,         // what the caller named does not exist
    kAlreadyExists,    // what the caller would create exists already
    kPermissionDenied, // the caller is known but may not do this
    kUnavailable,      // the service cannot answer now; the same request may work later
    kAborted,          // lost a race (a compare-and-swap): read again and redo the change
  };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status Mismatch(std::string m) { return {Code::kMismatch, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status PeerFailure(std::string m) { return {Code::kPeerFailure, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status NotInitialized(std::string m) { return {Code::kNotInitialized, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status Interrupted(std::string m) { return {Code::kInterrupted, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsAlreadyExists() const { return code_ == Code::kAlreadyExists; }
  bool IsPermissionDenied() const { return code_ == Code::kPermissionDenied; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  bool IsAborted() const { return code_ == Code::kAborted; }

  // "<code name>: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

// Either a value or the Status saying why there is none. Never both.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace cohort

// Returns early from the enclosing function when `expr` yields a failed Status.
#define COHORT_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::cohort::Status cohort_status_ = (expr); \
    if (!cohort_status_.ok()) return cohort_status_; \
  } while (0)

#endif  // COHORT_STATUS_H_
