// Where runs are tracked when the caller names no URI: the one lookup's
// choice (http/server_address.h), with MLflow's forms read as cohort's.
#include "track/tracking_uri.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/fake_env.h"

namespace cohort::track {
namespace {

using cohort::testing::FakeEnv;

std::string Chosen(std::map<std::string, std::string> env) {
  Result<http::AddressChoice> choice = TrackingUriFromEnv(FakeEnv(std::move(env)));
  if (!choice.ok()) return choice.status().ToString();
  return choice->value + " (" + choice->variable + ")";
}

TEST(TrackingUri, CohortServerAloneIsWhereRunsGo) {
  EXPECT_EQ(Chosen({}), " ()");
  EXPECT_EQ(Chosen({{"COHORT_SERVER", "http://127.0.0.1:6000/"}}),
            "http://127.0.0.1:6000 (COHORT_SERVER)");
  EXPECT_EQ(Chosen({{"COHORT_SERVER", "http://a:1"}, {"COHORT_TRACKING_URI", "sqlite:/t.db"}}),
            "sqlite:/t.db (COHORT_TRACKING_URI)");
}

TEST(TrackingUri, MlflowFormsAreReadAsCohorts) {
  EXPECT_EQ(Chosen({{"MLFLOW_TRACKING_URI", "sqlite:///runs.db"}}),
            "sqlite:runs.db (MLFLOW_TRACKING_URI)");
  EXPECT_EQ(Chosen({{"MLFLOW_TRACKING_URI", "sqlite:////abs/runs.db"}}),
            "sqlite:/abs/runs.db (MLFLOW_TRACKING_URI)");
  EXPECT_EQ(Chosen({{"MLFLOW_TRACKING_URI", "file:./mlruns"}}),
            "invalid argument: MLFLOW_TRACKING_URI='file:./mlruns': cohort's client records to "
            "a tracking server (http://HOST:PORT: `cohort server` or `mlflow server`) or a SQLite "
            "file (sqlite:///FILE.db); serve this store with a server and give its URL");
}

TEST(TrackingUri, ACohortServerThatIsNoServerIsRefusedByName) {
  EXPECT_EQ(Chosen({{"COHORT_SERVER", "sqlite:/t.db"}}),
            "invalid argument: COHORT_SERVER='sqlite:/t.db' is not a server's address "
            "(http(s)://HOST:PORT); a tracking store of its own is "
            "COHORT_TRACKING_URI=sqlite:PATH");
}

}  // namespace
}  // namespace cohort::track
