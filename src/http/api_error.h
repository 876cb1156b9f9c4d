// The one table between an error kind and the wire. The server answers a
// failed Status as JSON {"error_code": ..., "message": ...} with an HTTP
// status; a client turns that answer back into the same Status code. The
// error_code names are MLflow's (its clients read them); every API of
// `cohort server` (MLflow, artifacts, queue, sweep journal) uses them.
#ifndef COHORT_HTTP_API_ERROR_H_
#define COHORT_HTTP_API_ERROR_H_

#include <string>

#include "cohort/status.h"

namespace cohort::http {

// The error_code a failed Status with `code` is answered with:
// "INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", ...; "INTERNAL_ERROR"
// for a code that is the server's fault (kIoError, kInternal, ...).
const char* ErrorCodeOf(Status::Code code);

// The HTTP status an answer with `error_code` carries; 500 for a name the
// table does not know.
int HttpStatusOf(const std::string& error_code);

// The Status code of a refusal answered with `error_code`, as a client sees
// it: kInvalidArgument for the names that stand for no code of their own
// (BAD_REQUEST, ENDPOINT_NOT_FOUND, NOT_IMPLEMENTED, unknown names).
Status::Code CodeOfErrorCode(const std::string& error_code);

}  // namespace cohort::http

#endif  // COHORT_HTTP_API_ERROR_H_
