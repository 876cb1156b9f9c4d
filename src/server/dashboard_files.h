// DashboardFiles: the service of the dashboard's built files (index.html
// for "/") from a web folder, and /health for readiness checks. Any path no
// other service mounts is its; a path that names no file is a plain 404.
#ifndef COHORT_SERVER_DASHBOARD_FILES_H_
#define COHORT_SERVER_DASHBOARD_FILES_H_

#include <string>

#include "server/router.h"

namespace cohort::server {

class DashboardFiles : public Service {
 public:
  // `web_dir` empty or missing: no files (every path but /health is a 404).
  explicit DashboardFiles(const std::string& web_dir);
  void Register(Router& router) override;

 private:
  http::ServerResponse Serve(const http::ServerRequest& request);

  std::string web_root_;  // web_dir made absolute and canonical; "" = none
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_DASHBOARD_FILES_H_
