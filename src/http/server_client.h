// ServerClient: the one client of a `cohort server`, for every API it serves
// (MLflow tracking and artifacts, the sweep journal, the job queue). It holds
// the server's address and what named it, the headers every request carries
// (the bearer token, the queue's token, the user), the retry policy of its
// use, and turns a refusal back into the Status code the server answered
// with (http/api_error.h). The tracking transport (track/rest_transport.cc),
// the sweep journal (through it) and queue::QueueClient are built on it.
// Compiled into the tracking library (it parses JSON), not the core.
#ifndef COHORT_HTTP_SERVER_CLIENT_H_
#define COHORT_HTTP_SERVER_CLIENT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "http/client.h"
#include "http/retry_policy.h"

namespace cohort::http {

// The retry policy of each use of the server.
// Tracking: two short attempts, so a server that is down is found out fast
// and the batch spooled (track/spool.h).
RetryPolicy TrackingRetryPolicy();
// The queue: one attempt, since a submit must not be sent twice.
RetryPolicy QueueRetryPolicy();

struct ServerClientOptions {
  std::string address;  // http(s)://HOST:PORT; trailing '/'s are dropped
  // What named the address ("COHORT_SERVER", "--queue") and what the server
  // is to this use ("the queue"): a request that gets no answer fails with
  // "cannot reach <what> at <address> (<source>): ...". With no source, the
  // HTTP client's message alone (it names the URL).
  std::string source;
  std::string what = "the server";
  RetryPolicy retry;
};

class ServerClient {
 public:
  explicit ServerClient(ServerClientOptions options);
  ServerClient(const ServerClient&) = delete;
  ServerClient& operator=(const ServerClient&) = delete;

  const std::string& address() const { return options_.address; }

  // Sends `token` as "Authorization: Bearer TOKEN" (a user's token, or an
  // agent's credential); "" sends none.
  void SetBearer(std::string token) { bearer_ = std::move(token); }
  // Sends "Name: value" with every request (the queue's token, X-Cohort-User).
  void AddHeader(std::string header) { headers_.push_back(std::move(header)); }

  // Sends `request`, whose url is a path below the address ("/api/queue/jobs").
  // The server's answer, whatever its status; fails (kPeerFailure) only when
  // no answer came through every attempt (see ServerClientOptions::source).
  Result<HttpResponse> Send(HttpRequest request);

  // A JSON API call at `path`: GET sends `body`'s fields as the query, other
  // methods send `body` as JSON. The answer's JSON on 200, else AnswerJson's
  // failure; `what` ("POST runs/create") begins its messages.
  Result<nlohmann::json> Call(const std::string& method, const std::string& path,
                              const nlohmann::json& body, const std::string& what);

 private:
  ServerClientOptions options_;
  std::string bearer_;
  std::vector<std::string> headers_;
  HttpClient client_;
};

// `body`'s fields as a URL query, "?a=1&b=x%20y" ("" for none); strings as
// they are, other values as JSON.
std::string QueryString(const nlohmann::json& body);

// An answer as a JSON API call reports it: its JSON on 200 (kPeerFailure
// when it is not JSON); kPeerFailure "<what>: HTTP <status>" for an answer
// that means "try again later" (5xx, 408, 429); else Refusal.
Result<nlohmann::json> AnswerJson(long status, const std::string& body, const std::string& what);

// A refusal (4xx) as the Status the server meant: the code of its
// error_code (http/api_error.h) and "<what>: <error_code>: <message>"; an
// answer that is not an error's JSON is kInvalidArgument with its first 500
// bytes.
Status Refusal(const std::string& body, const std::string& what);

// An error answer's parts: {"error_code": ..., "message": ...}.
struct ErrorBody {
  bool parsed = false;  // whether the body is an error's JSON (has a message)
  std::string error_code;
  std::string message;
};
ErrorBody ParseErrorBody(const std::string& body);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_CLIENT_H_
