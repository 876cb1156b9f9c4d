// Starting and stopping s3rver for the S3 storage tests.
#include "support/s3rver_process.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>

namespace cohort::testing {

namespace {

constexpr double kStartSeconds = 30;  // node starts in about a second; a loaded machine is slower

std::string S3rverScript() {
  const char* env = ::getenv("COHORT_S3RVER");
  if (env != nullptr && *env != '\0') return env;
  return std::string(COHORT_SOURCE_DIR) + "/build-tools/s3rver/node_modules/s3rver/bin/s3rver.js";
}

// The package directory holding bin/s3rver.js.
std::string S3rverPackage() {
  std::string script = S3rverScript();
  for (int up = 0; up < 2; ++up) script = script.substr(0, script.rfind('/'));
  return script;
}

std::string FindNode() {
  const char* path = ::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = dir + "/node";
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

std::string S3rverProcess::Unavailable() {
  if (FindNode().empty()) return "node is not installed (tools/setup.sh installs it)";
  if (::access(S3rverScript().c_str(), R_OK) != 0)
    return "s3rver is not installed at " + S3rverScript() + " (run tools/setup.sh)";
  return "";
}

S3rverProcess::S3rverProcess(const std::string& data_dir, const std::string& bucket) {
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      FindNode(), std::string(COHORT_SOURCE_DIR) + "/tests/support/s3rver_strict.js",
      S3rverPackage(), "-d", data_dir, "-a", "127.0.0.1", "-p", "0", "--silent",
      "--configure-bucket", bucket});
  const std::string marker = "S3rver listening on 127.0.0.1:";
  if (!process_->WaitFor(
          [&] {
            size_t at = process_->out().find(marker);
            return at != std::string::npos && process_->out().find('\n', at) != std::string::npos;
          },
          Deadline::AfterSeconds(kStartSeconds))) {
    ADD_FAILURE() << "s3rver did not start within " << kStartSeconds << " s\nstdout:\n"
                  << process_->out() << "\nstderr:\n"
                  << process_->err();
    return;
  }
  const std::string& out = process_->out();
  size_t at = out.find(marker) + marker.size();
  endpoint_ = "http://127.0.0.1:" + out.substr(at, out.find('\n', at) - at);
}

std::map<std::string, std::string> S3rverProcess::Env() const {
  return {{"AWS_ENDPOINT_URL", endpoint_},
          {"AWS_ACCESS_KEY_ID", "S3RVER"},
          {"AWS_SECRET_ACCESS_KEY", "S3RVER"},
          {"AWS_REGION", "us-east-1"}};
}

}  // namespace cohort::testing
