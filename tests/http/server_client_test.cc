// ServerClient, the one client of a cohort server, and QueueClient over it:
// the address and path, the headers every request carries, the failure of a
// server that cannot be reached, and a refusal turned back into its code.
#include "http/server_client.h"

#include <gtest/gtest.h>

#include "queue/queue_client.h"
#include "support/http_test_server.h"

namespace cohort::http {
namespace {

using cohort::testing::HttpTestServer;
using nlohmann::json;

TEST(ServerClient, SendsItsHeadersToPathsBelowTheAddress) {
  HttpTestServer server("/nonexistent-root");
  ASSERT_TRUE(server.ok());
  ServerClient client({server.url() + "//", "COHORT_SERVER", "the server", QueueRetryPolicy()});
  EXPECT_EQ(client.address(), server.url());
  client.SetBearer("tok");
  client.AddHeader("X-Cohort-User: ann");
  HttpRequest request;
  request.url = "/api/queue/jobs";
  Result<HttpResponse> response = client.Send(request);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 404);  // an answer, for the caller to judge
  const std::string head = server.last_head();
  EXPECT_EQ(head.rfind("GET /api/queue/jobs HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nAuthorization: Bearer tok\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-Cohort-User: ann\r\n"), std::string::npos) << head;
  client.SetBearer("");
  ASSERT_TRUE(client.Send(request).ok());
  EXPECT_EQ(server.last_head().find("Authorization"), std::string::npos) << server.last_head();
}

TEST(ServerClient, AServerThatCannotBeReachedIsAPeerFailureNamingWhereItCameFrom) {
  // Nothing listens on port 1 of the loopback address.
  ServerClient named({"http://127.0.0.1:1", "--queue", "the queue", QueueRetryPolicy()});
  Result<HttpResponse> failed = named.Send(HttpRequest{});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kPeerFailure);
  EXPECT_EQ(failed.status().message().rfind(
                "cannot reach the queue at http://127.0.0.1:1 (--queue): ", 0),
            0u)
      << failed.status().message();
  ServerClient plain({"http://127.0.0.1:1", "", "the tracking server", TrackingRetryPolicy()});
  Result<json> call = plain.Call("GET", "/api/2.0/mlflow/runs/get", {{"run_id", "r"}}, "GET x");
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().code(), Status::Code::kPeerFailure);
  EXPECT_EQ(
      call.status().message().rfind("GET http://127.0.0.1:1/api/2.0/mlflow/runs/get?run_id=r", 0),
      0u)
      << call.status().message();
}

TEST(ServerClient, ARefusalCarriesTheCodeOfItsErrorCode) {
  Status missing = Refusal(R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no run r"})",
                           "GET runs/get");
  EXPECT_TRUE(missing.IsNotFound()) << missing.ToString();
  EXPECT_EQ(missing.message(), "GET runs/get: RESOURCE_DOES_NOT_EXIST: no run r");
  EXPECT_TRUE(
      Refusal(R"({"error_code": "PERMISSION_DENIED", "message": "m"})", "w").IsPermissionDenied());
  // Not an error's JSON (a proxy's page, a message that is no string): the
  // body itself, cut at 500 bytes, as the caller's mistake.
  Status page = Refusal("<html>" + std::string(600, 'x'), "POST p");
  EXPECT_TRUE(page.IsInvalidArgument());
  EXPECT_EQ(page.message(), "POST p: <html>" + std::string(494, 'x'));
  Status odd = Refusal(R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": 7})", "w");
  EXPECT_TRUE(odd.IsInvalidArgument()) << odd.ToString();
}

TEST(ServerClient, AnswersThatMeanTryAgainAreAPeerFailure) {
  Result<json> ok = AnswerJson(200, R"({"a": 1})", "w");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["a"], 1);
  for (long status : {500L, 503L, 408L, 429L}) {
    Result<json> later = AnswerJson(status, "", "POST runs/log-batch");
    EXPECT_EQ(later.status().code(), Status::Code::kPeerFailure);
    EXPECT_EQ(later.status().message(), "POST runs/log-batch: HTTP " + std::to_string(status));
  }
  EXPECT_EQ(AnswerJson(200, "not json", "w").status().code(), Status::Code::kPeerFailure);
}

TEST(ServerClient, QueryStringEncodesEachField) {
  EXPECT_EQ(QueryString(json::object()), "");
  EXPECT_EQ(QueryString({{"a", "x y/z"}, {"n", 3}}), "?a=x%20y%2Fz&n=3");
}

TEST(QueueClient, IsAQueuePathLayerOverTheServerClient) {
  HttpTestServer server("/nonexistent-root");
  ASSERT_TRUE(server.ok());
  queue::QueueClient client(server.url(), "--queue");
  EXPECT_EQ(client.server(), server.url());
  Result<queue::QueueAnswer> answer = client.Get("jobs/3");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->status, 404);
  const std::string head = server.last_head();
  EXPECT_EQ(head.rfind("GET /api/queue/jobs/3 HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nX-Cohort-User: "), std::string::npos) << head;
}

TEST(QueueClient, ARefusalKeepsItsCodeAndTheServersMessage) {
  queue::QueueAnswer refused;
  refused.status = 404;
  refused.body = R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no job 3"})";
  Result<json> missing = queue::AnswerJson(refused);
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  EXPECT_EQ(missing.status().message(), "no job 3");
  refused.status = 403;
  refused.body = R"({"error_code": "PERMISSION_DENIED", "message": "not yours"})";
  EXPECT_TRUE(queue::AnswerJson(refused).status().IsPermissionDenied());
  refused.status = 400;
  refused.body = "plain text";
  Result<json> plain = queue::AnswerJson(refused);
  EXPECT_TRUE(plain.status().IsInvalidArgument());
  EXPECT_EQ(plain.status().message(), "plain text");
}

}  // namespace
}  // namespace cohort::http
