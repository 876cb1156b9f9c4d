// Transport: a server's refusal comes back with the Status code its
// error_code stands for, so callers test the code, never the text.
#include "track/transport.h"

#include <gtest/gtest.h>

#include "data/data_test_util.h"

namespace cohort::track {
namespace {

using data::testing::TempDir;

TEST(Transport, RefusalsCarryTheirCode) {
  TempDir dir;
  auto transport = OpenTransport("sqlite:" + dir.Sub("t.db"));
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  auto missing = (*transport)->Call("GET", "runs/get", {{"run_id", "nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  EXPECT_EQ(missing.status().message(),
            "GET runs/get: RESOURCE_DOES_NOT_EXIST: Run with id=nope not found");
  ASSERT_TRUE((*transport)->Call("POST", "experiments/create", {{"name", "e"}}).ok());
  auto again = (*transport)->Call("POST", "experiments/create", {{"name", "e"}});
  EXPECT_TRUE(again.status().IsAlreadyExists()) << again.status().ToString();
  auto bad = (*transport)->Call("POST", "experiments/create", nlohmann::json::object());
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status().ToString();
  auto unknown = (*transport)->Call("GET", "runs/nothing", nlohmann::json::object());
  EXPECT_TRUE(unknown.status().IsInvalidArgument()) << unknown.status().ToString();
  EXPECT_EQ(
      unknown.status().message(),
      "GET runs/nothing: ENDPOINT_NOT_FOUND: No API endpoint at /api/2.0/mlflow/runs/nothing");
}

TEST(Transport, ExperimentIdByNameCreatesOnce) {
  TempDir dir;
  auto transport = OpenTransport("sqlite:" + dir.Sub("t.db"));
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  auto first = ExperimentIdByName(**transport, "e");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = ExperimentIdByName(**transport, "e");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace cohort::track
