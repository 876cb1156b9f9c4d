// Tagged tracking errors.
#include "track/errors.h"

namespace cohort::track {
namespace {

constexpr char kNotFoundTag[] = "not found: ";
constexpr char kAlreadyExistsTag[] = "already exists: ";

bool HasTag(const Status& s, const char* tag) {
  return s.code() == Status::Code::kInvalidArgument && s.message().rfind(tag, 0) == 0;
}

// Appended, not tag + message: that form trips GCC 12's -Wrestrict false positive.
Status Tagged(const char* tag, const std::string& message) {
  std::string text = tag;
  text += message;
  return Status::InvalidArgument(std::move(text));
}

}  // namespace

Status NotFoundError(const std::string& message) { return Tagged(kNotFoundTag, message); }

Status AlreadyExistsError(const std::string& message) { return Tagged(kAlreadyExistsTag, message); }

ErrorKind KindOf(const Status& status) {
  if (HasTag(status, kNotFoundTag)) return ErrorKind::kNotFound;
  if (HasTag(status, kAlreadyExistsTag)) return ErrorKind::kAlreadyExists;
  if (status.code() == Status::Code::kInvalidArgument) return ErrorKind::kInvalidParameter;
  return ErrorKind::kInternal;
}

std::string ErrorMessage(const Status& status) {
  switch (KindOf(status)) {
    case ErrorKind::kNotFound:
      return status.message().substr(sizeof(kNotFoundTag) - 1);
    case ErrorKind::kAlreadyExists:
      return status.message().substr(sizeof(kAlreadyExistsTag) - 1);
    default:
      return status.message();
  }
}

}  // namespace cohort::track
