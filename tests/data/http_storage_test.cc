// The HTTP storage backend against tests/support's HttpTestServer: a dataset
// read over HTTP, ranged and batched reads, retries of injected faults
// (503, a connection dropped mid-body), the message a persistent error
// gives, the read-only refusal, and the cache in front of HTTP.
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "data/storage.h"
#include "data/storage_cache.h"
#include "data/storage_test_util.h"
#include "http/client.h"
#include "support/http_test_server.h"

namespace cohort::data {
namespace {

using cohort::testing::HttpTestServer;
using testing::TempDir;

// Quick retries so fault tests take milliseconds.
StorageOptions FastRetries(int attempts = 4) {
  StorageOptions o;
  o.retry.max_attempts = attempts;
  o.retry.initial_backoff_s = 0.01;
  o.retry.max_backoff_s = 0.05;
  o.retry.request_timeout_s = 20;
  return o;
}

std::unique_ptr<Storage> OpenOrFail(const std::string& url, const StorageOptions& options) {
  auto s = OpenStorage(url, false, options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

TEST(HttpStorage, DatasetReadsOverHttp) {
  TempDir dir;
  std::vector<std::string> ids = testing::WriteSmallDataset(dir.Sub("ds"));
  HttpTestServer server(dir.path());
  ASSERT_TRUE(server.ok());
  testing::ExpectSmallDataset(server.url() + "/ds", ids[1]);
  auto by_id = Dataset::Open(server.url() + "/ds/", ids[0]);  // a trailing '/' is fine
  ASSERT_TRUE(by_id.ok()) << by_id.status().ToString();
  EXPECT_EQ((*by_id)->size(), 200u);
}

TEST(HttpStorage, RangedAndBatchedReads) {
  TempDir dir;
  const std::string data = Bytes(100000);
  testing::WriteFile(dir.Sub("obj"), data);
  testing::WriteFile(dir.Sub("small"), "hello world");
  HttpTestServer server(dir.path());
  auto s = OpenOrFail(server.url(), FastRetries());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(**s->Get("small"), "hello world");
  EXPECT_FALSE(s->Get("absent")->has_value());
  EXPECT_TRUE(*s->Exists("obj"));
  EXPECT_FALSE(*s->Exists("absent"));
  EXPECT_EQ(*s->Read("small", 6, 5), "world");
  EXPECT_EQ(*s->Read("small", 6, 100), "world") << "short at the end";
  EXPECT_EQ(*s->Read("small", 11, 4), "") << "at the end: nothing, not an error";
  EXPECT_EQ(*s->Read("small", 3, 0), "");
  Result<std::string> absent = s->Read("absent", 0, 1);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("no such object (HTTP 404)"), std::string::npos)
      << absent.status().message();
  std::vector<ByteRange> ranges;
  for (uint64_t i = 0; i < 40; ++i) ranges.push_back({"obj", i * 2500, 2500});
  ranges.push_back({"obj", 99990, kToEnd});
  Result<std::vector<std::string>> many = s->ReadMany(ranges);
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  for (size_t i = 0; i < ranges.size(); ++i)
    EXPECT_EQ((*many)[i], data.substr(ranges[i].offset, ranges[i].len)) << "range " << i;
}

TEST(HttpStorage, InjectedFaultsMidReadAreRetried) {
  TempDir dir;
  const std::string data = Bytes(1 << 20);
  testing::WriteFile(dir.Sub("obj"), data);
  HttpTestServer server(dir.path());
  // Requests 1 and 3 fail; 2 and 4 break their connection halfway through the body.
  server.InjectFault(1, HttpTestServer::Fault::kStatus503);
  server.InjectFault(2, HttpTestServer::Fault::kDropMidBody);
  server.InjectFault(3, HttpTestServer::Fault::kStatus503);
  server.InjectFault(4, HttpTestServer::Fault::kDropMidBody);
  auto s = OpenOrFail(server.url(), FastRetries(6));
  testing::ExpectReadManyExact(*s, "obj", data, 8, 131072);
  EXPECT_EQ(server.requests(), 12) << "8 reads + 4 retries";
  server.InjectFault(13, HttpTestServer::Fault::kDropMidBody);
  EXPECT_EQ(**s->Get("obj"), data) << "a whole-object GET is retried too";
}

TEST(HttpStorage, PersistentErrorNamesUrlStatusAndAttempts) {
  TempDir dir;
  testing::WriteFile(dir.Sub("obj"), "x");
  HttpTestServer server(dir.path());
  server.FailAll(HttpTestServer::Fault::kStatus503);
  auto s = OpenOrFail(server.url(), FastRetries(3));
  Result<std::string> read = s->Read("obj", 0, 1);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "dataset " + server.url() + ": GET " + server.url() +
                                         "/obj: HTTP 503 (gave up after 3 attempts)");
  EXPECT_EQ(server.requests(), 3);
  server.FailAll(HttpTestServer::Fault::kDropMidBody);
  Result<std::optional<std::string>> get = s->Get("obj");
  ASSERT_FALSE(get.ok());
  EXPECT_NE(get.status().message().find("GET " + server.url() + "/obj: "), std::string::npos);
  EXPECT_NE(get.status().message().find("(gave up after 3 attempts)"), std::string::npos)
      << get.status().message();
}

TEST(HttpStorage, UnreachableServerFailsWithinTheRetryBudget) {
  std::string url;
  {
    HttpTestServer gone("/nonexistent");
    url = gone.url();
  }  // nothing listens on its port now
  auto s = OpenOrFail(url, FastRetries(2));
  Result<bool> exists = s->Exists("x");
  ASSERT_FALSE(exists.ok());
  EXPECT_NE(exists.status().message().find("HEAD " + url + "/x: "), std::string::npos)
      << exists.status().message();
}

TEST(HttpStorage, IsReadOnlyAndCannotList) {
  TempDir dir;
  HttpTestServer server(dir.path());
  auto s = OpenOrFail(server.url() + "/ds", FastRetries());
  Status put = s->Put("x", "y");
  EXPECT_NE(put.message().find("read-only over HTTP"), std::string::npos) << put.message();
  EXPECT_FALSE(s->ReplaceIf("x", std::nullopt, "y", {}).ok());
  Result<std::vector<std::string>> list = s->List("refs");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("HTTP cannot list"), std::string::npos);
  EXPECT_FALSE(Writer::Create(server.url() + "/new", testing::FloatSchema()).ok());
}

TEST(HttpStorage, CacheServesRepeatedReadsWithoutRequests) {
  TempDir dir;
  std::vector<std::string> ids = testing::WriteSmallDataset(dir.Sub("ds"));
  HttpTestServer server(dir.path());
  StorageOptions options = FastRetries();
  options.cache_dir = dir.Sub("cache");
  auto open = [&] {
    auto s = OpenStorage(server.url() + "/ds", false, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  };
  Result<std::vector<std::string>> keys = (*OpenStorage(dir.Sub("ds"), false))->List("chunks");
  ASSERT_TRUE(keys.ok());
  ASSERT_GT(keys->size(), 3u);
  std::vector<ByteRange> ranges;
  for (const std::string& key : *keys) ranges.push_back({key, 8, 16});
  auto first = open();
  Result<std::vector<std::string>> cold = first->ReadMany(ranges);
  ASSERT_TRUE(cold.ok()) << cold.status().ToString();
  const int after_cold = server.requests();
  EXPECT_EQ(after_cold, static_cast<int>(keys->size()));
  auto second = open();  // a new process would see the same: the entries are files
  Result<std::vector<std::string>> warm = second->ReadMany(ranges);
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(*warm, *cold);
  EXPECT_EQ(server.requests(), after_cold) << "every chunk came from the cache";
  EXPECT_EQ(static_cast<CachedStorage*>(second.get())->stats().hits, keys->size());
  EXPECT_TRUE(second->Get("refs/heads/main")->has_value());
  EXPECT_EQ(server.requests(), after_cold + 1) << "refs are never cached";
}

// A server's answer can be any bytes: error messages show them escaped and cut short.
TEST(HttpAnswer, BinaryGarbageIsEscapedAndTruncated) {
  http::HttpRequest request;
  request.method = "GET";
  request.url = "http://127.0.0.1:1/x";
  http::HttpResponse response;
  response.status = 500;
  response.body = std::string("<Code>Bad\x01\xff\\") + std::string(300, 'A') + "</Code>";
  EXPECT_EQ(http::DescribeAnswer(request, response),
            "GET http://127.0.0.1:1/x: HTTP 500 (Bad\\x01\\xff\\x5c" + std::string(185, 'A') +
                "...)");
  response.body = std::string("\x89PNG garbage <Code>never closed ") + std::string(5000, '\0');
  EXPECT_EQ(http::DescribeAnswer(request, response), "GET http://127.0.0.1:1/x: HTTP 500");
}

}  // namespace
}  // namespace cohort::data
