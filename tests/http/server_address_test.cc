// One address and one token lookup for every client of `cohort server`.
#include "http/server_address.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <optional>
#include <string>

#include "support/fake_env.h"

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

using cohort::testing::FakeEnv;

std::string Server(std::map<std::string, std::string> env) {
  AddressChoice choice = ResolveServerAddress(FakeEnv(std::move(env)));
  return choice.value + " (" + choice.variable + ")";
}

std::string Tracking(std::map<std::string, std::string> env) {
  AddressChoice choice = ResolveTrackingUri(FakeEnv(std::move(env)));
  return choice.value + " (" + choice.variable + ")";
}

TEST(OneServerAddress, EachVariableAlone) {
  EXPECT_EQ(Server({}), "http://127.0.0.1:5000 ()");
  EXPECT_EQ(Tracking({}), " ()");
  EXPECT_EQ(Server({{"COHORT_SERVER", "http://a:1/"}}), "http://a:1 (COHORT_SERVER)");
  EXPECT_EQ(Tracking({{"COHORT_SERVER", "http://a:1/"}}), "http://a:1 (COHORT_SERVER)");
  EXPECT_EQ(Server({{"COHORT_TRACKING_URI", "http://b:2"}}), "http://b:2 (COHORT_TRACKING_URI)");
  EXPECT_EQ(Tracking({{"COHORT_TRACKING_URI", "http://b:2"}}), "http://b:2 (COHORT_TRACKING_URI)");
  EXPECT_EQ(Server({{"MLFLOW_TRACKING_URI", "https://m:3"}}), "https://m:3 (MLFLOW_TRACKING_URI)");
  EXPECT_EQ(Tracking({{"MLFLOW_TRACKING_URI", "https://m:3"}}),
            "https://m:3 (MLFLOW_TRACKING_URI)");
  // A store is no server's address: the queue keeps its default.
  EXPECT_EQ(Server({{"COHORT_TRACKING_URI", "sqlite:/x.db"}}), "http://127.0.0.1:5000 ()");
  EXPECT_EQ(Tracking({{"COHORT_TRACKING_URI", "sqlite:/x.db"}}),
            "sqlite:/x.db (COHORT_TRACKING_URI)");
  EXPECT_EQ(Tracking({{"COHORT_TRACKING_URI", ""}}), " ()");  // empty is unset
}

TEST(OneServerAddress, TheVariableOfAUseWinsForIt) {
  const std::map<std::string, std::string> all = {{"COHORT_SERVER", "http://a:1"},
                                                  {"COHORT_TRACKING_URI", "http://b:2"},
                                                  {"MLFLOW_TRACKING_URI", "http://m:3"}};
  EXPECT_EQ(Server(all), "http://a:1 (COHORT_SERVER)");
  EXPECT_EQ(Tracking(all), "http://b:2 (COHORT_TRACKING_URI)");
  EXPECT_EQ(Tracking({{"COHORT_SERVER", "http://a:1"}, {"MLFLOW_TRACKING_URI", "http://m:3"}}),
            "http://m:3 (MLFLOW_TRACKING_URI)");
  // Cohort's tracking variable before MLflow's, for both uses.
  EXPECT_EQ(Server({{"COHORT_TRACKING_URI", "http://b:2"}, {"MLFLOW_TRACKING_URI", "http://m:3"}}),
            "http://b:2 (COHORT_TRACKING_URI)");
  // MLflow's server is not the queue's when cohort's variable names a store.
  EXPECT_EQ(
      Server({{"COHORT_TRACKING_URI", "sqlite:/x.db"}, {"MLFLOW_TRACKING_URI", "http://m:3"}}),
      "http://127.0.0.1:5000 ()");
}

TEST(OneServerAddress, DisagreementNamesBothAndWhatEachUseTakes) {
  EXPECT_EQ(Disagreement(
                FakeEnv({{"COHORT_SERVER", "http://a:1"}, {"COHORT_TRACKING_URI", "http://b:2/"}})),
            "COHORT_SERVER=http://a:1 and COHORT_TRACKING_URI=http://b:2 name different "
            "servers: runs are tracked at http://b:2 (COHORT_TRACKING_URI); the queue, agents, "
            "pipelines and sweeps use http://a:1 (COHORT_SERVER). Unset one of them.");
  EXPECT_EQ(Disagreement(
                FakeEnv({{"COHORT_SERVER", "http://a:1"}, {"MLFLOW_TRACKING_URI", "http://m:3"}})),
            "COHORT_SERVER=http://a:1 and MLFLOW_TRACKING_URI=http://m:3 name different "
            "servers: runs are tracked at http://m:3 (MLFLOW_TRACKING_URI); the queue, agents, "
            "pipelines and sweeps use http://a:1 (COHORT_SERVER). Unset one of them.");
  // The same server (trailing '/' aside), one variable alone, or a store: no warning.
  EXPECT_EQ(Disagreement(
                FakeEnv({{"COHORT_SERVER", "http://a:1/"}, {"COHORT_TRACKING_URI", "http://a:1"}})),
            "");
  EXPECT_EQ(Disagreement(FakeEnv({{"COHORT_TRACKING_URI", "http://b:2"}})), "");
  EXPECT_EQ(Disagreement(FakeEnv(
                {{"COHORT_SERVER", "http://a:1"}, {"COHORT_TRACKING_URI", "sqlite:/x.db"}})),
            "");
}

}  // namespace
}  // namespace cohort::http
