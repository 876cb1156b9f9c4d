// One address and one token lookup for every client of `cohort server`.
#include "http/server_address.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

namespace cohort::http {
namespace {

// Sets (or, with nullopt, unsets) a variable for one test; puts it back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ServerAddress, CohortServerOrItsDefault) {
  {
    ScopedEnv server("COHORT_SERVER", std::nullopt);
    EXPECT_EQ(ServerAddress(), "http://127.0.0.1:5000");
  }
  {
    ScopedEnv server("COHORT_SERVER", "");
    EXPECT_EQ(ServerAddress(), "http://127.0.0.1:5000");
  }
  ScopedEnv server("COHORT_SERVER", "http://127.0.0.1:6123//");
  EXPECT_EQ(ServerAddress(), "http://127.0.0.1:6123");
}

TEST(ServerAddress, CohortsTokenWinsOverMlflows) {
  {
    ScopedEnv cohort("COHORT_TRACKING_TOKEN", std::nullopt);
    ScopedEnv mlflow("MLFLOW_TRACKING_TOKEN", std::nullopt);
    EXPECT_EQ(ServerToken(), "");
  }
  {
    ScopedEnv cohort("COHORT_TRACKING_TOKEN", "");
    ScopedEnv mlflow("MLFLOW_TRACKING_TOKEN", "m");
    EXPECT_EQ(ServerToken(), "m");
  }
  ScopedEnv cohort("COHORT_TRACKING_TOKEN", "c");
  ScopedEnv mlflow("MLFLOW_TRACKING_TOKEN", "m");
  EXPECT_EQ(ServerToken(), "c");
}

}  // namespace
}  // namespace cohort::http
