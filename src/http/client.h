// HttpClient: many HTTP requests in flight over one libcurl multi handle,
// each retried with backoff on 5xx answers, timeouts and broken connections
// (RetryPolicy). The HTTP and S3 storage backends, the tracking client and
// the queue's clients are built on it.
#ifndef COHORT_HTTP_CLIENT_H_
#define COHORT_HTTP_CLIENT_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "http/retry_policy.h"

namespace cohort::http {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT or POST
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent with PUT and POST
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  // The header's value, or "" when absent. `name` in lower case.
  std::string Header(const std::string& name) const;
};

class HttpClient {
 public:
  HttpClient(RetryPolicy retry, int max_in_flight);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Performs every request, up to max_in_flight at once; results in request
  // order. A result fails only when no final answer came: the transfer broke,
  // or a retryable status persisted, through every attempt; the message names
  // the method, URL, the last status or curl error and the attempts. Every
  // other answer (200, 404, 412, 403, ...) is returned for the caller to judge.
  std::vector<Result<HttpResponse>> PerformMany(const std::vector<HttpRequest>& requests);
  Result<HttpResponse> Perform(const HttpRequest& request);

 private:
  class MultiHandle;
  std::unique_ptr<MultiHandle> TakeMulti();
  void ReturnMulti(std::unique_ptr<MultiHandle> multi);

  RetryPolicy retry_;
  int max_in_flight_;
  std::mutex mu_;
  // Idle multi handles; each keeps its connections open for reuse.
  std::vector<std::unique_ptr<MultiHandle>> idle_;
};

// "HTTP 503 Service Unavailable"-style short text for an error message,
// with the body's S3-style <Code> and <Message> when it has them.
std::string DescribeAnswer(const HttpRequest& request, const HttpResponse& response);
// The text of the body's first <tag>...</tag> (S3 error XML), through
// Printable; "" when the body has none.
std::string XmlErrorField(const HttpResponse& response, const std::string& tag);
// `text` safe to print: bytes outside printable ASCII (and '\\') as \\xNN,
// cut after `max_chars` with "...". A server's answer may be any bytes.
std::string Printable(std::string_view text, size_t max_chars);

}  // namespace cohort::http

#endif  // COHORT_HTTP_CLIENT_H_
