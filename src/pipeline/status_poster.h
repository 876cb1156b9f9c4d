// Posts a pipeline's status document (status_document.h) to `cohort
// server` (POST /api/cohort/pipelines/status, server/pipeline_status_api.h)
// so the dashboard shows the pipeline's graph. The server is the queue's
// (COHORT_SERVER or --queue), the token a user's (COHORT_TRACKING_TOKEN)
// for servers under --auth. Posting is best effort: the pipeline's state
// folder is the record, so a server that cannot take the document is
// reported once and the run goes on.
#ifndef COHORT_PIPELINE_STATUS_POSTER_H_
#define COHORT_PIPELINE_STATUS_POSTER_H_

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "http/client.h"

namespace cohort::pipeline {

class StatusPoster {
 public:
  // `server`: the server's URL; "" for COHORT_SERVER.
  explicit StatusPoster(const std::string& server);

  // Posts `document` when `now` is set or the last post is older than the
  // interval (a step's batches may end many times a second); after a
  // failed post, only every 10 s.
  void Post(const nlohmann::json& document, bool now);

 private:
  std::string url_;
  std::string token_;
  http::HttpClient http_;
  std::chrono::steady_clock::time_point last_{};
  bool complained_ = false;
};

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_STATUS_POSTER_H_
