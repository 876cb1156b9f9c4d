// The local-file Storage backend: whole-object and ranged reads, atomic
// puts, listing without scratch files, and compare-and-swap semantics.
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "data/storage.h"

namespace cohort::data {
namespace {

using testing::TempDir;

TEST(DataStorage, LocalPutGetReadList) {
  TempDir dir;
  auto storage = OpenStorage(dir.Sub("s"), true);
  ASSERT_TRUE(storage.ok()) << storage.status().ToString();
  Storage& s = **storage;
  ASSERT_TRUE(s.Put("a/b/c", "hello world").ok());
  ASSERT_TRUE(s.Put("a/d", "x").ok());
  ASSERT_TRUE(s.Put("a/d", "replaced").ok());
  EXPECT_EQ(**s.Get("a/b/c"), "hello world");
  EXPECT_EQ(**s.Get("a/d"), "replaced");
  EXPECT_FALSE(s.Get("nope")->has_value());
  EXPECT_EQ(*s.Read("a/b/c", 6, 5), "world");
  EXPECT_EQ(*s.Read("a/b/c", 6, 100), "world") << "short at the end";
  EXPECT_EQ(*s.Read("a/b/c", 6, kToEnd), "world") << "to the end, no huge allocation";
  EXPECT_EQ(*s.Read("a/b/c", 20, 5), "");
  EXPECT_EQ(*s.ReadMany({{"a/b/c", 0, 5}, {"a/d", 2, 3}}),
            std::vector<std::string>({"hello", "pla"}));
  EXPECT_FALSE(s.Read("nope", 0, 1).ok());
  EXPECT_TRUE(*s.Exists("a/d"));
  EXPECT_FALSE(*s.Exists("a/e"));
  testing::WriteFile(dir.Sub("s/a/x.tmp.1.2"), "scratch");
  ASSERT_TRUE(s.ReplaceIf("a/r", std::nullopt, "1", {}).ok());  // leaves a/r.lock behind
  EXPECT_EQ(*s.List("a"), std::vector<std::string>({"a/b/c", "a/d", "a/r"}));
  EXPECT_EQ(*s.List(""), std::vector<std::string>({"a/b/c", "a/d", "a/r"}));
  EXPECT_TRUE(s.List("missing")->empty());
}

// GetBytes maps large objects (chunks); a mapping outlives a Put that
// replaces the file, since Put renames a new file over the name.
TEST(DataStorage, LocalGetBytesMapsLargeObjectsAndKeepsThemStable) {
  TempDir dir;
  auto storage = OpenStorage(dir.Sub("s"), true);
  ASSERT_TRUE(storage.ok()) << storage.status().ToString();
  Storage& s = **storage;
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7 + i / 4096);
  ASSERT_TRUE(s.Put("chunks/big", big).ok());
  ASSERT_TRUE(s.Put("chunks/small", "tiny").ok());
  Result<std::optional<ObjectBytes>> mapped = s.GetBytes("chunks/big");
  ASSERT_TRUE(mapped.ok() && mapped->has_value()) << mapped.status().ToString();
  EXPECT_TRUE((*mapped)->bytes == big);
  EXPECT_EQ((**s.GetBytes("chunks/small")).bytes, "tiny");
  EXPECT_FALSE(s.GetBytes("chunks/none")->has_value());
  ASSERT_TRUE(s.Put("chunks/big", std::string(3 << 20, 'x')).ok());
  EXPECT_TRUE((*mapped)->bytes == big) << "a mapping must not see a replaced object";
  EXPECT_EQ((**s.GetBytes("chunks/big")).bytes, std::string(3 << 20, 'x'));
}

TEST(DataStorage, ReplaceIfIsCompareAndSwap) {
  TempDir dir;
  auto storage = OpenStorage(dir.path(), false);
  ASSERT_TRUE(storage.ok());
  Storage& s = **storage;
  int hooked = 0;
  ASSERT_TRUE(s.ReplaceIf("ref", std::nullopt, "one", [&] { ++hooked; }).ok());
  EXPECT_EQ(hooked, 1);
  Status exists = s.ReplaceIf("ref", std::nullopt, "two", [&] { ++hooked; });
  EXPECT_TRUE(IsConflict(exists)) << exists.ToString();
  Status stale = s.ReplaceIf("ref", std::string("zero"), "two", [&] { ++hooked; });
  EXPECT_TRUE(IsConflict(stale)) << stale.ToString();
  EXPECT_NE(stale.message().find("'one'"), std::string::npos) << stale.message();
  EXPECT_EQ(hooked, 1) << "the hook runs only when the comparison succeeded";
  ASSERT_TRUE(s.ReplaceIf("ref", std::string("one"), "two", {}).ok());
  EXPECT_EQ(**s.Get("ref"), "two");
}

TEST(DataStorage, LocationFormsPickTheBackend) {
  StorageOptions options;
  EXPECT_TRUE(OpenStorage("http://127.0.0.1:1/ds", false, options).ok());
  EXPECT_TRUE(OpenStorage("http://127.0.0.1:1", false, options).ok()) << "a dataset at the root";
  auto no_host = OpenStorage("https:///ds", false, options);
  ASSERT_FALSE(no_host.ok());
  EXPECT_NE(no_host.status().message().find("expected http(s)://HOST"), std::string::npos);
  auto no_creds = OpenStorage("s3://bucket/ds", false, options);
  ASSERT_FALSE(no_creds.ok());
  EXPECT_NE(no_creds.status().message().find("no S3 credentials"), std::string::npos);
  options.s3_access_key = options.s3_secret_key = "k";
  auto no_bucket = OpenStorage("s3:///ds", false, options);
  ASSERT_FALSE(no_bucket.ok());
  EXPECT_NE(no_bucket.status().message().find("no bucket name"), std::string::npos);
  EXPECT_EQ((*OpenStorage("s3://bucket/ds/", false, options))->location(), "s3://bucket/ds");
  TempDir dir;
  EXPECT_FALSE(OpenStorage(dir.Sub("absent"), false).ok());
  EXPECT_TRUE(OpenStorage("file://" + dir.path(), false).ok());
}

}  // namespace
}  // namespace cohort::data
