// S3rverProcess: the S3-compatible test server (the npm package s3rver, run
// through tests/support/s3rver_strict.js, which adds the SigV4 signature
// check and the conditional PUTs s3rver lacks) started on 127.0.0.1 with a
// free port and a fresh data directory, and killed when the object goes away.
// tools/setup.sh installs s3rver under build-tools/s3rver; COHORT_S3RVER may
// name another package's bin/s3rver.js.
#ifndef COHORT_TESTS_SUPPORT_S3RVER_PROCESS_H_
#define COHORT_TESTS_SUPPORT_S3RVER_PROCESS_H_

#include <map>
#include <memory>
#include <string>

#include "support/child_process.h"

namespace cohort::testing {

class S3rverProcess {
 public:
  // The reason s3rver cannot run here (node or s3rver missing), or "".
  static std::string Unavailable();

  // Starts s3rver serving `bucket` from `data_dir`; waits (bounded) until it
  // listens. ok() says whether it did; a failure to start is a test failure.
  S3rverProcess(const std::string& data_dir, const std::string& bucket);

  bool ok() const { return !endpoint_.empty(); }
  const std::string& endpoint() const { return endpoint_; }  // "http://127.0.0.1:PORT"
  // AWS_* variables that point a cohort process at this server with its
  // built-in credentials (S3RVER / S3RVER).
  std::map<std::string, std::string> Env() const;

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string endpoint_;
};

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_S3RVER_PROCESS_H_
