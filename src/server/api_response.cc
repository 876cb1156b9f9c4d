// JSON answers and error answers of the server's APIs.
#include "server/api_response.h"

#include "http/api_error.h"

namespace cohort::server {

using nlohmann::json;

HttpResponse ErrorResponse(const std::string& error_code, const std::string& message) {
  return JsonResponse(http::HttpStatusOf(error_code),
                      {{"error_code", error_code}, {"message", message}});
}

HttpResponse ErrorResponse(const Status& status) {
  const std::string error_code = http::ErrorCodeOf(status.code());
  // The server's own failures keep their code's name: the message alone
  // would not say it was not the caller's fault.
  if (error_code == "INTERNAL_ERROR") return ErrorResponse(error_code, status.ToString());
  return ErrorResponse(error_code, status.message());
}

HttpResponse UnreadableFields(const HttpRequest& request, const Status& status) {
  if (request.method == "GET" || request.method == "HEAD") return ErrorResponse(status);
  return ErrorResponse("BAD_REQUEST", status.message());
}

HttpResponse MethodNotAllowed(const HttpRequest& request) {
  HttpResponse r = ErrorResponse(
      "BAD_REQUEST", "Method " + request.method + " is not allowed for " + request.path);
  r.status = 405;
  return r;
}

HttpResponse JsonResponse(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace cohort::server
