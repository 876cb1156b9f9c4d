// JSON answers and error answers of the server's APIs.
#include "server/api_response.h"

#include "http/api_error.h"

namespace cohort::server {

using nlohmann::json;

http::ServerResponse ErrorResponse(const std::string& error_code, const std::string& message) {
  return JsonResponse(http::HttpStatusOf(error_code),
                      {{"error_code", error_code}, {"message", message}});
}

http::ServerResponse ErrorResponse(const Status& status) {
  const std::string error_code = http::ErrorCodeOf(status.code());
  // The server's own failures keep their code's name: the message alone
  // would not say it was not the caller's fault.
  if (error_code == "INTERNAL_ERROR") return ErrorResponse(error_code, status.ToString());
  return ErrorResponse(error_code, status.message());
}

http::ServerResponse UnreadableFields(const http::ServerRequest& request, const Status& status) {
  if (request.method == "GET" || request.method == "HEAD") return ErrorResponse(status);
  return ErrorResponse("BAD_REQUEST", status.message());
}

http::ServerResponse MethodNotAllowed(const http::ServerRequest& request) {
  http::ServerResponse r = ErrorResponse(
      "BAD_REQUEST", "Method " + request.method + " is not allowed for " + request.path);
  r.status = 405;
  return r;
}

http::ServerResponse JsonResponse(int status, const json& body) {
  http::ServerResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace cohort::server
