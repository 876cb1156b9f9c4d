// The pipelines' status endpoints, cohort's own (not MLflow's), over the
// tracking store's pipeline_status table: a pipeline's controller posts
// its status document (`cohort pipeline status --json`, docs/pipelines.md)
// after its state changes, and the dashboard's DAG view reads it.
//   POST /api/cohort/pipelines/status  {"name", "status": {...}} -> {}
//   GET  /api/cohort/pipelines/status  ?name= -> {"name", "owner",
//                                       "update_time", "status": {...}}
//   GET  /api/cohort/pipelines/list    -> {"pipelines": [{"name", "owner",
//                                       "update_time", "state", "steps"}]}
// Errors are MLflow's JSON ({"error_code", "message"}): a malformed
// document is INVALID_PARAMETER_VALUE naming the field
// ("status.steps[1].state"), an unknown pipeline 404. Under --auth every
// call needs a user's token; the first user to post a pipeline owns it and
// another user's post is PERMISSION_DENIED (403).
#ifndef COHORT_SERVER_PIPELINE_STATUS_API_H_
#define COHORT_SERVER_PIPELINE_STATUS_API_H_

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "server/router.h"
#include "track/store.h"

namespace cohort::server {

class PipelineStatusApi : public Service {
 public:
  explicit PipelineStatusApi(track::TrackingStore* store) : store_(store) {}
  void Register(Router& router) override;

 private:
  http::ServerResponse Put(const Call& call);
  http::ServerResponse Get(const Call& call);
  http::ServerResponse List(const Call& call);

  track::TrackingStore* store_;
};

// OK when `status` is a status document of the pipeline `name`: an object
// whose "pipeline" is `name`, with a known "state" and "steps", each an
// object with a "name", a known "state", "inputs" naming steps of the
// document or datasets, and "datums" counts; else what is wrong, naming
// the field.
Status CheckPipelineStatus(const std::string& name, const nlohmann::json& status);

}  // namespace cohort::server

#endif  // COHORT_SERVER_PIPELINE_STATUS_API_H_
