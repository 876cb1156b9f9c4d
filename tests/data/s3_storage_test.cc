// The S3 storage backend: SigV4 against AWS's published example, and a real
// S3-compatible server (s3rver; it checks access keys, not signatures) started on
// 127.0.0.1 for each test: object round trips, listing, compare-and-swap as
// far as the server supports it, a whole dataset written and read through
// s3://, wrong credentials, and `cohort data cp` local -> s3 -> local.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "data/data_test_util.h"
#include "data/hash.h"
#include "data/sigv4.h"
#include "data/storage.h"
#include "data/storage_test_util.h"
#include "http/url.h"
#include "support/child_process.h"
#include "support/s3rver_process.h"

namespace cohort::data {
namespace {

using cohort::testing::Contains;
using cohort::testing::RunCohort;
using cohort::testing::S3rverProcess;
using testing::TempDir;

// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html,
// "Example: GET Object".
TEST(SigV4, MatchesAwsGetObjectExample) {
  SigV4Request r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.canonical_uri = "/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  r.payload_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  AwsCredentials creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  EXPECT_EQ(SignatureV4(r, creds, "us-east-1", "s3", "20130524T000000Z"),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  std::vector<std::string> headers = SignV4(r, creds, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(headers.back(),
            "Authorization: AWS4-HMAC-SHA256 "
            "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(http::UriEncode("a b/c~d+e", false), "a%20b/c~d%2Be");
  EXPECT_EQ(http::UriEncode("a/b", true), "a%2Fb");
  EXPECT_EQ(AmzDate(1369353600), "20130524T000000Z");
}

// The same requests signed by botocore (tests/data/sigv4_botocore.py): path
// escapes, the query strings List sends, a session token, another region.
TEST(SigV4, AgreesWithBotocore) {
  struct Case {
    std::string method, url, body, token, region;
  };
  const std::vector<Case> cases = {
      {"GET", "http://127.0.0.1:9000/bucket/ds/chunks/ab/abcdef", "", "", "us-east-1"},
      {"GET", "http://127.0.0.1:9000/bucket?prefix=ds%2Frefs%2F&marker=ds%2Frefs%2Fheads%2Fmain",
       "", "", "us-east-1"},
      {"PUT", "http://s3.eu-west-1.amazonaws.com/bucket/a%20b/c%2Bd~e.f_g", "hello\n",
       "session/token+=", "eu-west-1"},
      {"HEAD", "http://minio.local:9000/b/" + http::UriEncode("dir/ünï cödé", false), "", "",
       "us-east-1"},
  };
  const AwsCredentials creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
  std::string json = "[";
  std::string expected;
  for (const Case& c : cases) {
    AwsCredentials with_token = creds;
    with_token.session_token = c.token;
    for (const std::string& h : SignV4(SigV4RequestFor(c.method, c.url, Sha256Hex(c.body)),
                                       with_token, c.region, "s3", "20130524T000000Z")) {
      if (h.rfind("Authorization: ", 0) == 0) expected += h.substr(15) + "\n";
    }
    json += std::string(json.size() > 1 ? "," : "") + "{\"method\":\"" + c.method +
            "\",\"url\":\"" + c.url + "\",\"body\":\"" + (c.body.empty() ? "" : "hello\\n") +
            "\",\"access_key\":\"" + creds.access_key + "\",\"secret_key\":\"" + creds.secret_key +
            "\",\"token\":\"" + c.token + "\",\"region\":\"" + c.region + "\"}";
  }
  json += "]";
  ASSERT_EQ(cohort::testing::Lines(expected).size(), cases.size());
  cohort::testing::ChildProcess python(
      {"/usr/bin/python3", std::string(COHORT_SOURCE_DIR) + "/tests/data/sigv4_botocore.py", json});
  cohort::testing::Finished done = python.Finish(Deadline::AfterSeconds(60));
  if (done.exit_code == 3) GTEST_SKIP() << done.out;
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(done.out, expected);
}

class S3Storage : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = S3rverProcess::Unavailable();
    if (!missing.empty()) GTEST_SKIP() << "S3 tests need s3rver: " << missing;
    server_ = std::make_unique<S3rverProcess>(dir_.Sub("s3rver"), "bucket");
    ASSERT_TRUE(server_->ok());
    // Dataset::Open and Writer::Create read the AWS_* variables, as users' jobs do.
    for (const auto& [name, value] : server_->Env()) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void TearDown() override {
    if (server_ == nullptr) return;
    for (const auto& [name, value] : server_->Env()) ::unsetenv(name.c_str());
  }

  StorageOptions Options() const {
    StorageOptions o;
    o.s3_endpoint = server_->endpoint();
    o.s3_access_key = o.s3_secret_key = "S3RVER";
    o.retry.initial_backoff_s = 0.01;
    return o;
  }
  std::unique_ptr<Storage> Open(const std::string& url, StorageOptions o) {
    auto s = OpenStorage(url, true, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  TempDir dir_;
  std::unique_ptr<S3rverProcess> server_;
};

TEST_F(S3Storage, ObjectsRoundTrip) {
  auto s = Open("s3://bucket/some/prefix", Options());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Put("a/b c", "hello world").ok());
  ASSERT_TRUE(s->Put("a/d", "x").ok());
  ASSERT_TRUE(s->Put("a/d", "replaced").ok());
  ASSERT_TRUE(s->Put("ab", "not under a/").ok());
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7919 % 256);
  ASSERT_TRUE(s->Put("big", big).ok());
  EXPECT_EQ(**s->Get("a/b c"), "hello world");
  EXPECT_EQ(**s->Get("a/d"), "replaced");
  EXPECT_EQ(**s->Get("big"), big);
  EXPECT_FALSE(s->Get("nope")->has_value());
  EXPECT_EQ(*s->Read("a/b c", 6, 5), "world");
  EXPECT_EQ(*s->Read("a/b c", 6, 100), "world");
  EXPECT_FALSE(s->Read("nope", 0, 1).ok());
  EXPECT_TRUE(*s->Exists("a/d"));
  EXPECT_FALSE(*s->Exists("a/e"));
  EXPECT_EQ(*s->List("a"), std::vector<std::string>({"a/b c", "a/d"}));
  EXPECT_EQ(*s->List(""), std::vector<std::string>({"a/b c", "a/d", "ab", "big"}));
  EXPECT_TRUE(s->List("missing")->empty());
  testing::ExpectReadManyExact(*s, "big", big, 24, 131072);
}

TEST_F(S3Storage, ListingPagesPastAThousandKeys) {
  auto s = Open("s3://bucket/many", Options());
  std::vector<std::string> expected;
  for (int i = 0; i < 1005; ++i) {  // s3rver pages at 1000 keys, as S3 does
    char key[32];
    std::snprintf(key, sizeof key, "k/%05d", i);
    expected.push_back(key);
  }
  for (const std::string& key : expected) ASSERT_TRUE(s->Put(key, "v").ok());
  Result<std::vector<std::string>> listed = s->List("k");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(*listed, expected);
}

// ReplaceIf compares before it writes, and its PUT carries If-Match /
// If-None-Match so that the store refuses it when another writer got in
// between (tests/support/s3rver_strict.js enforces both as S3 does).
TEST_F(S3Storage, ReplaceIfRefusesStaleExpectations) {
  auto s = Open("s3://bucket/cas", Options());
  int hooked = 0;
  ASSERT_TRUE(s->ReplaceIf("ref", std::nullopt, "one\n", [&] { ++hooked; }).ok());
  Status exists = s->ReplaceIf("ref", std::nullopt, "two\n", [&] { ++hooked; });
  EXPECT_TRUE(IsConflict(exists)) << exists.ToString();
  Status stale = s->ReplaceIf("ref", std::string("zero\n"), "two\n", [&] { ++hooked; });
  EXPECT_TRUE(IsConflict(stale)) << stale.ToString();
  EXPECT_EQ(stale.message(), "conflict: ref changed: expected 'zero', found 'one'");
  EXPECT_EQ(hooked, 1);
  ASSERT_TRUE(s->ReplaceIf("ref", std::string("one\n"), "two\n", {}).ok());
  EXPECT_EQ(**s->Get("ref"), "two\n");
}

// The race the comparison alone cannot see: another writer replaces (or
// creates) the object after ReplaceIf read it and before its PUT. The
// server's 412 must come back as a conflict, and the other writer's bytes
// must be what stays.
TEST_F(S3Storage, ReplaceIfLosesARaceWithAConflict) {
  auto s = Open("s3://bucket/race", Options());
  auto other = Open("s3://bucket/race", Options());
  ASSERT_TRUE(s->Put("ref", "one\n").ok());
  Status lost = s->ReplaceIf("ref", std::string("one\n"), "mine\n",
                             [&] { ASSERT_TRUE(other->Put("ref", "theirs\n").ok()); });
  EXPECT_TRUE(IsConflict(lost)) << lost.ToString();
  EXPECT_NE(lost.message().find("ref changed while it was being replaced"), std::string::npos)
      << lost.message();
  EXPECT_NE(lost.message().find("HTTP 412 (PreconditionFailed"), std::string::npos)
      << lost.message();
  EXPECT_EQ(**s->Get("ref"), "theirs\n");

  Status created = s->ReplaceIf("new", std::nullopt, "mine\n",
                                [&] { ASSERT_TRUE(other->Put("new", "theirs\n").ok()); });
  EXPECT_TRUE(IsConflict(created)) << created.ToString();
  EXPECT_EQ(**s->Get("new"), "theirs\n");
}

TEST_F(S3Storage, DatasetRoundTripThroughS3) {
  std::vector<std::string> ids = testing::WriteSmallDataset("s3://bucket/datasets/small");
  ASSERT_EQ(ids.size(), 2u);
  testing::ExpectSmallDataset("s3://bucket/datasets/small", ids[1]);
  Result<VerifyReport> report = Verify("s3://bucket/datasets/small");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->problems.empty());
  EXPECT_EQ(report->commits, 3u) << "the empty first commit and the two written";
  auto writer = Writer::Create("s3://bucket/datasets/small", testing::FloatSchema());
  EXPECT_FALSE(writer.ok()) << "the dataset exists";
  // Two writers from the same base: the second commit is refused.
  auto a = Writer::Open("s3://bucket/datasets/small");
  auto b = Writer::Open("s3://bucket/datasets/small");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Append(testing::FloatSample(1)).ok());
  ASSERT_TRUE((*b)->Append(testing::FloatSample(2)).ok());
  ASSERT_TRUE((*a)->Commit({"a"}).ok());
  Result<std::string> lost = (*b)->Commit({"b"});
  EXPECT_TRUE(IsConflict(lost.status())) << lost.status().ToString();
}

// An unknown access key and a wrong secret are both refused by the server
// (the second by the signature check in tests/support/s3rver_strict.js), and
// the error names the request and the server's reason.
TEST_F(S3Storage, WrongCredentialsGiveAClearError) {
  auto good = Open("s3://bucket/creds", Options());
  ASSERT_TRUE(good->Put("format", "cohort-dataset 1\n").ok());
  StorageOptions wrong_key = Options();
  wrong_key.s3_access_key = "NOBODY";
  Result<std::optional<std::string>> got = Open("s3://bucket/creds", wrong_key)->Get("format");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "dataset s3://bucket/creds: GET " + server_->endpoint() +
                "/bucket/creds/format: HTTP 403 (InvalidAccessKeyId: The AWS Access Key Id you "
                "provided does not exist in our records.)");
  Status put = Open("s3://bucket/creds", wrong_key)->Put("x", "y");
  EXPECT_NE(put.message().find("PUT " + server_->endpoint() +
                               "/bucket/creds/x: HTTP 403 (InvalidAccessKeyId"),
            std::string::npos)
      << put.message();
  StorageOptions wrong_secret = Options();
  wrong_secret.s3_secret_key = "not-the-secret";
  Result<std::optional<std::string>> forged =
      Open("s3://bucket/creds", wrong_secret)->Get("format");
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.status().message().find("GET " + server_->endpoint() +
                                           "/bucket/creds/format: HTTP 403 (SignatureDoesNotMatch"),
            std::string::npos)
      << forged.status().message();
  ::setenv("AWS_ACCESS_KEY_ID", "NOBODY", 1);
  auto ds = Dataset::Open("s3://bucket/creds");
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("InvalidAccessKeyId"), std::string::npos);
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto none = Dataset::Open("s3://bucket/creds");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no S3 credentials (set AWS_ACCESS_KEY_ID and "
                                         "AWS_SECRET_ACCESS_KEY)"),
            std::string::npos)
      << none.status().message();
}

TEST_F(S3Storage, AMissingBucketIsNamedNotTakenForAMissingDataset) {
  Result<std::optional<std::string>> got = Open("s3://nobucket/ds", Options())->Get("format");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "dataset s3://nobucket/ds: the bucket does not exist (GET " + server_->endpoint() +
                "/nobucket/ds/format: HTTP 404 (NoSuchBucket: The specified bucket does not "
                "exist))");
  auto ds = Dataset::Open("s3://nobucket/ds");
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("the bucket does not exist"), std::string::npos)
      << ds.status().message();
}

TEST_F(S3Storage, GcRemovesUnreachableObjectsOverS3) {
  const std::string location = "s3://bucket/gc";
  std::vector<std::string> ids = testing::WriteSmallDataset(location);
  auto s = Open(location, Options());
  const std::string orphan = "chunks/ab/ab" + std::string(62, '0');
  ASSERT_TRUE(s->Put(orphan, "left behind").ok());
  GcOptions options;
  options.min_age_s = -60;  // everything counts as old: LastModified has whole seconds
  auto report = CollectGarbage(location, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->removed, std::vector<std::string>{orphan});
  EXPECT_FALSE(*s->Exists(orphan));
  EXPECT_TRUE(report->open_leases.empty());  // the writers closed, their leases went
  testing::ExpectSmallDataset(location, ids[1]);
}

TEST_F(S3Storage, CopyLocalToS3ToLocalKeepsEveryCommit) {
  std::vector<std::string> ids = testing::WriteSmallDataset(dir_.Sub("src"));
  const std::string remote = "s3://bucket/copies/small";
  cohort::testing::Finished up =
      RunCohort({"data", "cp", dir_.Sub("src"), remote}, 120, server_->Env());
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_TRUE(Contains(up.err, "cp: ")) << "progress is shown: " << up.err;
  cohort::testing::Finished down =
      RunCohort({"data", "cp", remote, dir_.Sub("back")}, 120, server_->Env());
  ASSERT_EQ(down.exit_code, 0) << down.err;
  testing::ExpectSmallDataset(dir_.Sub("back"), ids[1]);
  cohort::testing::Finished verify = RunCohort({"data", "verify", "-d", dir_.Sub("back")});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  Result<std::vector<CommitInfo>> src_log = Log(dir_.Sub("src"), "v1");
  Result<std::vector<CommitInfo>> back_log = Log(dir_.Sub("back"), "v1");
  ASSERT_TRUE(src_log.ok() && back_log.ok());
  ASSERT_EQ(back_log->size(), src_log->size());
  EXPECT_EQ((*back_log)[0].id, ids[0]);
  EXPECT_EQ(testing::ReadFile(dir_.Sub("back/HEAD")), testing::ReadFile(dir_.Sub("src/HEAD")));
  cohort::testing::Finished again =
      RunCohort({"data", "cp", dir_.Sub("src"), remote}, 120, server_->Env());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(Contains(again.err, "already holds a dataset")) << again.err;
}

}  // namespace
}  // namespace cohort::data
