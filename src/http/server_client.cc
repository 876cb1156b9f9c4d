// The one client of a cohort server: address, headers, retries, refusals.
#include "http/server_client.h"

#include "http/api_error.h"
#include "http/server_address.h"
#include "http/url.h"

namespace cohort::http {

using nlohmann::json;

RetryPolicy TrackingRetryPolicy() {
  return {.max_attempts = 2,
          .initial_backoff_s = 0.05,
          .max_backoff_s = 0.2,
          .request_timeout_s = 30,
          .connect_timeout_s = 2};
}

RetryPolicy QueueRetryPolicy() {
  return {.max_attempts = 1,
          .initial_backoff_s = 0.05,
          .max_backoff_s = 0.2,
          .request_timeout_s = 30,
          .connect_timeout_s = 5};
}

ServerClient::ServerClient(ServerClientOptions options)
    : options_(std::move(options)), client_(options_.retry, /*max_in_flight=*/1) {
  options_.address = WithoutTrailingSlash(std::move(options_.address));
}

Result<HttpResponse> ServerClient::Send(HttpRequest request) {
  request.url = options_.address + request.url;
  if (!bearer_.empty()) request.headers.push_back("Authorization: Bearer " + bearer_);
  request.headers.insert(request.headers.end(), headers_.begin(), headers_.end());
  Result<HttpResponse> response = client_.Perform(request);
  if (response.ok()) return response;
  if (options_.source.empty()) return Status::PeerFailure(response.status().message());
  return Status::PeerFailure("cannot reach " + options_.what + " at " + options_.address + " (" +
                             options_.source + "): " + response.status().message());
}

Result<json> ServerClient::Call(const std::string& method, const std::string& path,
                                const json& body, const std::string& what) {
  HttpRequest request;
  request.method = method;
  request.url = path;
  if (method == "GET") {
    request.url += QueryString(body);
  } else {
    request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    request.headers.push_back("Content-Type: application/json");
  }
  Result<HttpResponse> response = Send(std::move(request));
  if (!response.ok()) return response.status();
  return AnswerJson(response->status, response->body, what);
}

std::string QueryString(const json& body) {
  std::string out;
  for (const auto& [key, value] : body.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    out += out.empty() ? '?' : '&';
    out += UriEncode(key, true);
    out += '=';
    out += UriEncode(text, true);
  }
  return out;
}

Result<json> AnswerJson(long status, const std::string& body, const std::string& what) {
  if (status == 200) {
    json parsed = json::parse(body, nullptr, false);
    if (parsed.is_discarded()) return Status::PeerFailure(what + ": answer is not JSON");
    return parsed;
  }
  if (status >= 500 || status == 0 || status == 429 || status == 408) {
    return Status::PeerFailure(what + ": HTTP " + std::to_string(status));
  }
  return Refusal(body, what);
}

Status Refusal(const std::string& body, const std::string& what) {
  ErrorBody error = ParseErrorBody(body);
  if (!error.parsed) return Status::InvalidArgument(what + ": " + body.substr(0, 500));
  return Status(CodeOfErrorCode(error.error_code),
                what + ": " + error.error_code + ": " + error.message);
}

ErrorBody ParseErrorBody(const std::string& body) {
  ErrorBody error;
  json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("message") || !parsed["message"].is_string()) {
    return error;
  }
  error.parsed = true;
  error.message = parsed["message"].get<std::string>();
  if (parsed.contains("error_code") && parsed["error_code"].is_string()) {
    error.error_code = parsed["error_code"].get<std::string>();
  }
  return error;
}

}  // namespace cohort::http
