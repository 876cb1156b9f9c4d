// The answers every API of `cohort server` gives: JSON bodies, and errors as
// {"error_code": ..., "message": ...} with the HTTP status of their code
// (http/api_error.h has the one table of codes and statuses).
#ifndef COHORT_SERVER_API_RESPONSE_H_
#define COHORT_SERVER_API_RESPONSE_H_

#include <string>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "http/server/http_message.h"

namespace cohort::server {

// {"error_code": error_code, "message": message} with error_code's status.
http::ServerResponse ErrorResponse(const std::string& error_code, const std::string& message);
// A failed Status as its error.
http::ServerResponse ErrorResponse(const Status& status);
// Why `request`'s fields could not be read (RequestFields::FromRequest):
// a body that is not a JSON object is BAD_REQUEST, a bad query string
// INVALID_PARAMETER_VALUE.
http::ServerResponse UnreadableFields(const http::ServerRequest& request, const Status& status);
// 405 BAD_REQUEST: `request`'s path does not take its method.
http::ServerResponse MethodNotAllowed(const http::ServerRequest& request);
// `body` as the answer, with `status` (invalid UTF-8 in strings replaced).
http::ServerResponse JsonResponse(int status, const nlohmann::json& body);

}  // namespace cohort::server

#endif  // COHORT_SERVER_API_RESPONSE_H_
