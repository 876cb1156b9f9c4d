// Where clients find `cohort server` and the token they show it: one lookup
// for the tracking client (track/transport.cc), the queue's clients and its
// agents, through the settings table (common/settings.cc).
#ifndef COHORT_HTTP_SERVER_ADDRESS_H_
#define COHORT_HTTP_SERVER_ADDRESS_H_

#include <string>

namespace cohort::http {

// COHORT_SERVER, else its default http://127.0.0.1:5000; without a
// trailing '/'.
std::string ServerAddress();

// A user's token for a server under --auth: COHORT_TRACKING_TOKEN, else
// MLflow's MLFLOW_TRACKING_TOKEN; "" when neither is set.
std::string ServerToken();

// `url` without its trailing '/'s.
std::string WithoutTrailingSlash(std::string url);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_ADDRESS_H_
