// RestTransport: a TrackingRun's MLflow requests over HTTP to a tracking
// server (`cohort server`, or any MLflow server), through the one client of
// a cohort server (http/server_client.h).
#ifndef COHORT_TRACK_REST_TRANSPORT_H_
#define COHORT_TRACK_REST_TRANSPORT_H_

#include <memory>
#include <string>

#include "track/transport.h"

namespace cohort::track {

// The transport to the server at `address` (http(s)://HOST:PORT), showing
// `token` as its bearer ("" for none: a server without --auth).
std::unique_ptr<Transport> NewRestTransport(const std::string& address, const std::string& token);

}  // namespace cohort::track

#endif  // COHORT_TRACK_REST_TRANSPORT_H_
