// Where clients find `cohort server` and the token they show it: one lookup
// for the tracking client, the queue's clients and agents, pipelines and
// sweeps, through the settings table (common/settings.cc).
//
// One address: COHORT_SERVER. COHORT_TRACKING_URI and MLflow's
// MLFLOW_TRACKING_URI are its aliases. The variable of a use wins for that
// use (as curl's http_proxy does over ALL_PROXY): runs are tracked at
// COHORT_TRACKING_URI, else MLFLOW_TRACKING_URI, else COHORT_SERVER; the
// queue, agents, pipelines and sweeps use COHORT_SERVER, else the tracking
// variable's server. A tracking value that is a store (sqlite:PATH, MLflow's
// sqlite:///FILE) keeps meaning that store and is no server's address. Two
// variables naming different servers are reported (Disagreement) and each
// use takes its own.
#ifndef COHORT_HTTP_SERVER_ADDRESS_H_
#define COHORT_HTTP_SERVER_ADDRESS_H_

#include <string>

#include "common/env_config.h"

namespace cohort::http {

// A value and the variable it came from ("" when nothing named it).
struct AddressChoice {
  std::string value;     // as set (a server without trailing '/')
  std::string variable;  // "COHORT_SERVER", "COHORT_TRACKING_URI", ...; "" for none
};

// The server of the queue, agents, pipelines and sweeps: COHORT_SERVER; else
// the tracking variable's value when it is an http(s) URL; else the default
// (variable "").
AddressChoice ResolveServerAddress(const EnvLookup& env);

// Where runs are tracked when the caller names no URI: COHORT_TRACKING_URI,
// else MLFLOW_TRACKING_URI (unconverted: MLflow's forms are the tracking
// client's to read), else COHORT_SERVER when set; {"", ""} when none is (the
// caller's default store).
AddressChoice ResolveTrackingUri(const EnvLookup& env);

// "" when the variables agree, else one line naming both and what each use
// takes: "COHORT_SERVER=http://a and COHORT_TRACKING_URI=http://b name
// different servers: runs are tracked at http://b (COHORT_TRACKING_URI);
// the queue, agents, pipelines and sweeps use http://a (COHORT_SERVER).
// Unset one of them."
std::string Disagreement(const EnvLookup& env);
// Logs Disagreement's line, if any, as a warning (clients call it where they
// read the address, so a user sees which server each use went to).
void WarnOfDisagreement(const EnvLookup& env);

// ResolveServerAddress(ProcessEnv()).value.
std::string ServerAddress();

// A user's token for a server under --auth: COHORT_TRACKING_TOKEN, else
// MLflow's MLFLOW_TRACKING_TOKEN; "" when neither is set.
std::string ServerToken();

// `url` without its trailing '/'s.
std::string WithoutTrailingSlash(std::string url);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_ADDRESS_H_
