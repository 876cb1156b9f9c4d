// HTTP calls to the queue's endpoints.
#include "queue/queue_client.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "http/client.h"
#include "http/server_address.h"
#include "queue/queue_token.h"

namespace cohort::queue {
namespace {

std::string CurrentUser() {
  const char* user = std::getenv("USER");
  if (user != nullptr && *user != '\0') return user;
  const struct passwd* entry = ::getpwuid(::getuid());
  return entry != nullptr ? entry->pw_name : "anonymous";
}

http::RetryPolicy ClientPolicy() {
  http::RetryPolicy policy;
  policy.max_attempts = 1;  // a submit must not be sent twice
  policy.initial_backoff_s = 0.05;
  policy.max_backoff_s = 0.2;
  policy.request_timeout_s = 30;
  policy.connect_timeout_s = 5;
  return policy;
}

}  // namespace

std::string QueueAnswer::ErrorMessage() const {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    return parsed["message"].get<std::string>();
  }
  return body.empty() ? "HTTP " + std::to_string(status) : body;
}

Result<nlohmann::json> AnswerJson(const Result<QueueAnswer>& answer) {
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) return Status::InvalidArgument(answer->ErrorMessage());
  auto parsed = nlohmann::json::parse(answer->body, nullptr, false);
  if (parsed.is_discarded()) return Status::InvalidArgument("the server's answer is not JSON");
  return parsed;
}

QueueClient::QueueClient() : QueueClient(http::ServerAddress()) {}

QueueClient::QueueClient(std::string server)
    : server_(http::WithoutTrailingSlash(std::move(server))),
      token_(http::ServerToken()),
      user_(CurrentUser()),
      http_(ClientPolicy(), /*max_in_flight=*/1) {
  queue_token_ = FindQueueToken(server_);
}

QueueClient::QueueClient(std::string server, std::string source) : QueueClient(std::move(server)) {
  source_ = std::move(source);
}

Result<QueueAnswer> QueueClient::Get(const std::string& path) {
  http::HttpRequest request;
  request.url = server_ + "/api/queue/" + path;
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::Post(const std::string& path, const nlohmann::json& body) {
  http::HttpRequest request;
  request.method = "POST";
  request.url = server_ + "/api/queue/" + path;
  request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.headers.push_back("Content-Type: application/json");
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::PostBytes(const std::string& path, std::string bytes) {
  http::HttpRequest request;
  request.method = "POST";
  request.url = server_ + "/api/queue/" + path;
  request.body = std::move(bytes);
  request.headers.push_back("Content-Type: application/octet-stream");
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::Call(http::HttpRequest request) {
  if (!token_.empty()) request.headers.push_back("Authorization: Bearer " + token_);
  if (!queue_token_.empty()) {
    request.headers.push_back(std::string(kQueueTokenHeader) + ": " + queue_token_);
  }
  request.headers.push_back("X-Cohort-User: " + user_);
  auto response = http_.Perform(request);
  if (!response.ok()) {
    return Status::PeerFailure("cannot reach the queue at " + server_ + " (" + source_ +
                               "): " + response.status().message());
  }
  QueueAnswer answer;
  answer.status = response->status;
  answer.body = std::move(response->body);
  answer.job_state = response->Header("x-cohort-job-state");
  std::string offset = response->Header("x-cohort-log-offset");
  if (!offset.empty() && offset.find_first_not_of("0123456789") == std::string::npos) {
    answer.next_offset = std::stoull(offset);
  }
  return answer;
}

}  // namespace cohort::queue
