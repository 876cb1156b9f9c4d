// ArtifactApi: the service of MLflow's artifact proxy over an ArtifactStore,
// under /api/2.0/mlflow-artifacts/artifacts (and /ajax-api/...):
//   GET    .../artifacts?path=DIR   {"files": [{"path", "is_dir", "file_size"}]}
//   GET    .../artifacts/PATH       the file's bytes
//   PUT    .../artifacts/PATH       uploads the body (streamed to disk) -> {}
//   DELETE .../artifacts/PATH       -> {}
// Without a store (the server has no --artifacts) every call answers
// NOT_IMPLEMENTED.
#ifndef COHORT_SERVER_ARTIFACT_API_H_
#define COHORT_SERVER_ARTIFACT_API_H_

#include <string>

#include "artifacts/artifact_store.h"
#include "server/access_control.h"
#include "server/router.h"

namespace cohort::server {

class ArtifactApi : public Service {
 public:
  // `artifacts` may be null; `access` is null without --auth.
  ArtifactApi(artifacts::ArtifactStore* artifacts, AccessControl* access)
      : artifacts_(artifacts), access_(access) {}
  void Register(Router& router) override;

 private:
  http::ServerResponse Handle(const http::ServerRequest& request, const std::string& path);
  http::ServerResponse List(const http::ServerRequest& request);

  artifacts::ArtifactStore* artifacts_;
  AccessControl* access_;
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_ARTIFACT_API_H_
