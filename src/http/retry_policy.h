// RetryPolicy: how an HttpClient retries a request.
#ifndef COHORT_HTTP_RETRY_POLICY_H_
#define COHORT_HTTP_RETRY_POLICY_H_

namespace cohort::http {

// How remote requests are retried: 5xx answers, 408/429, timeouts and
// broken connections are tried again after an exponential backoff (doubling
// from `initial_backoff_s` up to `max_backoff_s`); other answers are final.
struct RetryPolicy {
  int max_attempts = 5;  // attempts per request, the first included
  double initial_backoff_s = 0.1;
  double max_backoff_s = 5;
  double request_timeout_s = 120;  // one attempt, connection to last byte
  double connect_timeout_s = 10;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_RETRY_POLICY_H_
