// Tracking failures the REST layer must tell apart, in MLflow's terms.
// Status has no "not found" / "already exists" codes (adding them to the
// public header would rebuild every file for one module), so those two are
// kInvalidArgument statuses whose message starts with a fixed tag; ErrorKind
// reads it back and ErrorMessage strips it.
#ifndef COHORT_TRACK_ERRORS_H_
#define COHORT_TRACK_ERRORS_H_

#include <string>

#include "cohort/status.h"

namespace cohort::track {

enum class ErrorKind { kInvalidParameter, kNotFound, kAlreadyExists, kInternal };

Status NotFoundError(const std::string& message);
Status AlreadyExistsError(const std::string& message);

ErrorKind KindOf(const Status& status);
// The message without its tag.
std::string ErrorMessage(const Status& status);

}  // namespace cohort::track

#endif  // COHORT_TRACK_ERRORS_H_
