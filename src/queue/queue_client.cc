// HTTP calls to the queue's endpoints.
#include "queue/queue_client.h"

#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "http/api_error.h"
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

// What named the server of QueueClient(): COHORT_SERVER (its default too)
// or the alias it came from.
std::string DefaultSource() {
  const EnvLookup env = ProcessEnv();
  http::WarnOfDisagreement(env);
  const std::string variable = http::ResolveServerAddress(env).variable;
  return variable.empty() ? "COHORT_SERVER" : variable;
}

}  // namespace

std::string QueueAnswer::ErrorMessage() const {
  http::ErrorBody error = http::ParseErrorBody(body);
  if (error.parsed) return error.message;
  return body.empty() ? "HTTP " + std::to_string(status) : body;
}

Result<nlohmann::json> AnswerJson(const Result<QueueAnswer>& answer) {
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) {
    return Status(http::CodeOfErrorCode(http::ParseErrorBody(answer->body).error_code),
                  answer->ErrorMessage());
  }
  auto parsed = nlohmann::json::parse(answer->body, nullptr, false);
  if (parsed.is_discarded()) return Status::InvalidArgument("the server's answer is not JSON");
  return parsed;
}

QueueClient::QueueClient() : QueueClient(http::ServerAddress(), DefaultSource()) {}

QueueClient::QueueClient(std::string server) : QueueClient(std::move(server), "COHORT_SERVER") {}

QueueClient::QueueClient(std::string server, std::string source)
    : client_({std::move(server), std::move(source), "the queue", http::QueueRetryPolicy()}) {
  client_.SetBearer(http::ServerToken());
  const std::string queue_token = FindQueueToken(client_.address());
  if (!queue_token.empty()) client_.AddHeader(std::string(kQueueTokenHeader) + ": " + queue_token);
  client_.AddHeader("X-Cohort-User: " + CurrentUser());
}

Result<QueueAnswer> QueueClient::Get(const std::string& path) {
  http::HttpRequest request;
  request.url = "/api/queue/" + path;
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::Post(const std::string& path, const nlohmann::json& body) {
  http::HttpRequest request;
  request.method = "POST";
  request.url = "/api/queue/" + path;
  request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.headers.push_back("Content-Type: application/json");
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::PostBytes(const std::string& path, std::string bytes) {
  http::HttpRequest request;
  request.method = "POST";
  request.url = "/api/queue/" + path;
  request.body = std::move(bytes);
  request.headers.push_back("Content-Type: application/octet-stream");
  return Call(std::move(request));
}

Result<QueueAnswer> QueueClient::Call(http::HttpRequest request) {
  auto response = client_.Send(std::move(request));
  if (!response.ok()) return response.status();
  QueueAnswer answer;
  answer.status = response->status;
  answer.body = std::move(response->body);
  answer.job_state = response->Header("x-cohort-job-state");
  // A number that does not fit (or no number) leaves 0: no offset to go on from.
  const std::string offset = response->Header("x-cohort-log-offset");
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(offset.data(), offset.data() + offset.size(), value);
  if (!offset.empty() && error == std::errc() && end == offset.data() + offset.size()) {
    answer.next_offset = value;
  }
  return answer;
}

}  // namespace cohort::queue
