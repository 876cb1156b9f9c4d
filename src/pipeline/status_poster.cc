// Posting a pipeline's status document (status_poster.h).
#include "pipeline/status_poster.h"

#include <cstdio>

#include "http/server_address.h"

namespace cohort::pipeline {

namespace {

// At most this often between two changes; the end of a step or run posts at once.
constexpr std::chrono::milliseconds kMinInterval(500);
// After a post failed, not again before this, even at a step's end: the
// controller holds its state while it posts, and a server that does not
// answer must not slow the pipeline down.
constexpr std::chrono::seconds kRetryInterval(10);

http::RetryPolicy PostPolicy() {
  http::RetryPolicy policy;
  policy.max_attempts = 1;
  policy.initial_backoff_s = 0.05;
  policy.max_backoff_s = 0.1;
  policy.request_timeout_s = 5;
  policy.connect_timeout_s = 2;
  return policy;
}

}  // namespace

StatusPoster::StatusPoster(const std::string& server)
    : url_(http::WithoutTrailingSlash(server.empty() ? http::ServerAddress() : server) +
           "/api/cohort/pipelines/status"),
      token_(http::ServerToken()),
      http_(PostPolicy(), /*max_in_flight=*/1) {}

void StatusPoster::Post(const nlohmann::json& document, bool now) {
  const auto at = std::chrono::steady_clock::now();
  if (complained_ ? at - last_ < kRetryInterval : !now && at - last_ < kMinInterval) return;
  last_ = at;
  http::HttpRequest request;
  request.method = "POST";
  request.url = url_;
  request.headers = {"Content-Type: application/json"};
  if (!token_.empty()) request.headers.push_back("Authorization: Bearer " + token_);
  request.body =
      nlohmann::json{{"name", document.value("pipeline", "")}, {"status", document}}.dump();
  auto answer = http_.Perform(request);
  std::string problem;
  if (!answer.ok()) {
    problem = answer.status().message();
  } else if (answer->status != 200) {
    const auto body = nlohmann::json::parse(answer->body, nullptr, false);
    problem = url_ + " answered HTTP " + std::to_string(answer->status) +
              (body.is_object() && body.contains("message") ? ": " + body["message"].dump() : "");
  }
  if (problem.empty()) {
    complained_ = false;
  } else if (!complained_) {
    complained_ = true;
    std::fprintf(stderr,
                 "cohort pipeline: the dashboard's copy of the status was not updated: %s\n",
                 problem.c_str());
  }
}

}  // namespace cohort::pipeline
