// The embedded transport (a `sqlite:` URI) calls the MLflow service and the
// artifact store directly; it must answer every request as a `cohort server`
// does over REST: the same JSON, and refusals with the same codes and
// words. Each request here goes to both, each over its own fresh store.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "server/tracking_server.h"
#include "track/transport.h"

namespace cohort::track {
namespace {

using data::testing::TempDir;
using nlohmann::json;

// What a call came to: "ok <answer>" or "<code>: <message>", with the
// fields that differ from store to store (ids made at random, clocks,
// paths) blanked.
std::string Outcome(const Result<json>& result) {
  if (!result.ok()) {
    return std::to_string(static_cast<int>(result.status().code())) + ": " +
           result.status().message();
  }
  json answer = *result;
  for (const char* pointer : {"/run/info/run_id", "/run/info/run_uuid", "/run/info/artifact_uri",
                              "/run/info/start_time", "/experiment/artifact_location",
                              "/experiment/creation_time", "/experiment/last_update_time"}) {
    json::json_pointer at(pointer);
    if (answer.contains(at)) answer[at] = "-";
  }
  return "ok " + answer.dump();
}

class EmbeddedTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::TrackingServerOptions options;
    options.store_uri = "sqlite:" + server_dir_.Sub("server.db");
    options.artifacts = server_dir_.Sub("artifacts");
    options.port = 0;
    auto started = server::TrackingServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(*started);
    auto rest = OpenTransport("http://127.0.0.1:" + std::to_string(server_->port()));
    ASSERT_TRUE(rest.ok()) << rest.status().ToString();
    rest_ = std::move(*rest);
    auto embedded = OpenTransport("sqlite:" + embedded_dir_.Sub("embedded.db"));
    ASSERT_TRUE(embedded.ok()) << embedded.status().ToString();
    embedded_ = std::move(*embedded);
    ASSERT_TRUE(rest_->remote());
    ASSERT_FALSE(embedded_->remote());
  }

  // Both transports' outcomes of the call, expected equal; the embedded one's.
  std::string Same(const std::string& method, const std::string& endpoint, const json& body) {
    std::string over_rest = Outcome(rest_->Call(method, endpoint, body));
    std::string embedded = Outcome(embedded_->Call(method, endpoint, body));
    EXPECT_EQ(embedded, over_rest) << method << " " << endpoint << " " << body.dump();
    return embedded;
  }

  TempDir server_dir_;
  TempDir embedded_dir_;
  std::unique_ptr<server::TrackingServer> server_;
  std::unique_ptr<Transport> rest_;
  std::unique_ptr<Transport> embedded_;
};

TEST_F(EmbeddedTransportTest, AnswersAsTheServerDoes) {
  EXPECT_EQ(Same("POST", "experiments/create", {{"name", "e"}}), R"(ok {"experiment_id":"1"})");
  Same("GET", "experiments/get-by-name", {{"experiment_name", "e"}});
  // A GET's fields are text, whatever their JSON type.
  Same("GET", "experiments/get", {{"experiment_id", 1}});
  json run = {{"experiment_id", "1"}, {"start_time", 1000}, {"run_name", "r"}};
  EXPECT_EQ(Same("POST", "runs/create", run).substr(0, 3), "ok ");
}

TEST_F(EmbeddedTransportTest, LogsAndReadsBackTheSameMetrics) {
  std::vector<std::string> ids;
  for (Transport* t : {rest_.get(), embedded_.get()}) {
    auto made = t->Call("POST", "runs/create", {{"experiment_id", "0"}, {"start_time", 5}});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    ids.push_back((*made)["run"]["info"]["run_id"].get<std::string>());
    json batch = {{"run_id", ids.back()},
                  {"metrics",
                   {{{"key", "loss"}, {"value", 0.5}, {"timestamp", 7}, {"step", 1}},
                    {{"key", "loss"}, {"value", "NaN"}, {"timestamp", 8}, {"step", 2}}}},
                  {"params", {{{"key", "lr"}, {"value", "0.1"}}}}};
    ASSERT_TRUE(t->Call("POST", "runs/log-batch", batch).ok());
  }
  auto history = [&](Transport* t, const std::string& id) {
    return Outcome(t->Call("GET", "metrics/get-history", {{"run_id", id}, {"metric_key", "loss"}}));
  };
  EXPECT_EQ(history(embedded_.get(), ids[1]), history(rest_.get(), ids[0]));
  EXPECT_EQ(history(embedded_.get(), ids[1]),
            R"(ok {"metrics":[{"key":"loss","step":1,"timestamp":7,"value":0.5},)"
            R"({"key":"loss","step":2,"timestamp":8,"value":"NaN"}]})");
}

TEST_F(EmbeddedTransportTest, RefusesAsTheServerDoes) {
  const std::string invalid = std::to_string(static_cast<int>(Status::Code::kInvalidArgument));
  const std::string not_found = std::to_string(static_cast<int>(Status::Code::kNotFound));
  EXPECT_EQ(Same("GET", "runs/get", {{"run_id", "nope"}}),
            not_found + ": GET runs/get: RESOURCE_DOES_NOT_EXIST: Run with id=nope not found");
  EXPECT_EQ(Same("GET", "runs/nothing", json::object()),
            invalid +
                ": GET runs/nothing: ENDPOINT_NOT_FOUND: No API endpoint at "
                "/api/2.0/mlflow/runs/nothing");
  EXPECT_EQ(Same("GET", "runs/create", json::object()),
            invalid +
                ": GET runs/create: BAD_REQUEST: Method GET is not allowed for "
                "/api/2.0/mlflow/runs/create");
  EXPECT_EQ(Same("POST", "experiments/create", json()),
            invalid +
                ": POST experiments/create: BAD_REQUEST: Malformed JSON request body: expected an "
                "object, got null");
  EXPECT_EQ(Same("POST", "experiments/create", json::object()),
            invalid +
                ": POST experiments/create: INVALID_PARAMETER_VALUE: Missing value for required "
                "parameter 'name'. See the API docs for more information about request "
                "parameters.");
  Same("POST", "experiments/create", {{"name", "e"}});
  EXPECT_EQ(Same("POST", "experiments/create", {{"name", "e"}}).substr(0, 2),
            std::to_string(static_cast<int>(Status::Code::kAlreadyExists)));
  // A query that is not UTF-8 is refused; a body's bad bytes are replaced.
  EXPECT_EQ(Same("GET", "experiments/get-by-name", {{"experiment_name", "a\xff"}}),
            invalid +
                ": GET experiments/get-by-name: INVALID_PARAMETER_VALUE: Invalid value for "
                "parameter 'experiment_name' supplied: it is not UTF-8");
  Same("POST", "experiments/create", {{"name", "b\xff"}});
  EXPECT_EQ(
      Same("GET", "experiments/get-by-name", {{"experiment_name", "b\xef\xbf\xbd"}}).substr(0, 3),
      "ok ");
  // cohort's own APIs are the server's only.
  EXPECT_EQ(Outcome(embedded_->Call("GET", "/api/cohort/sweeps/journal/x", json::object())),
            invalid +
                ": GET /api/cohort/sweeps/journal/x: ENDPOINT_NOT_FOUND: No API endpoint at "
                "/api/cohort/sweeps/journal/x");
}

TEST_F(EmbeddedTransportTest, ArtifactPathsAreCheckedAsTheServerChecksThem) {
  for (const std::string path : {"0/run/artifacts/a.txt", "0/run/x.tmp.y/a", "0/run/a.lock"}) {
    Status over_rest = rest_->PutArtifact(path, "bytes");
    Status embedded = embedded_->PutArtifact(path, "bytes");
    EXPECT_EQ(embedded.ToString(), over_rest.ToString()) << path;
  }
  EXPECT_EQ(embedded_->PutArtifact("0/run/a.lock", "x").message(),
            "PUT 0/run/a.lock: INVALID_PARAMETER_VALUE: Invalid artifact path '0/run/a.lock': a "
            "name containing '.tmp.' or ending in '.lock' is reserved for the store's scratch "
            "files");
  EXPECT_TRUE(embedded_->PutArtifact("0/run/artifacts/a.txt", "x").ok());
}

}  // namespace
}  // namespace cohort::track
