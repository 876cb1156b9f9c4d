// The storage backends' registry: a location's scheme picks its row, an
// unknown scheme is refused listing the known ones, and the docs table and
// the settings each row names agree with the rest of the house.
#include "data/storage_backends.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/settings.h"
#include "data/data_test_util.h"

namespace cohort::data {
namespace {

using testing::TempDir;

std::string BackendOf(const std::string& location) {
  Result<const StorageBackend*> backend = FindStorageBackend(location);
  return backend.ok() ? (*backend)->name : backend.status().ToString();
}

TEST(StorageBackends, TheSchemePicksTheRow) {
  EXPECT_EQ(BackendOf("/data/mnist"), "local");
  EXPECT_EQ(BackendOf("relative/dir"), "local");
  EXPECT_EQ(BackendOf("file:///data/mnist"), "local");
  EXPECT_EQ(BackendOf("odd/a://b"), "local");  // '/' is no scheme character
  EXPECT_EQ(BackendOf("http://127.0.0.1:9/d"), "http");
  EXPECT_EQ(BackendOf("https://example.org/d"), "http");
  EXPECT_EQ(BackendOf("s3://bucket/prefix"), "s3");
}

TEST(StorageBackends, AnUnknownSchemeIsRefusedListingTheKnownOnes) {
  const std::string expected =
      "dataset location 'gs://bucket/x': unknown scheme gs://; known: file://, http://, "
      "https:// or s3://, or a local path";
  Result<const StorageBackend*> backend = FindStorageBackend("gs://bucket/x");
  ASSERT_FALSE(backend.ok());
  EXPECT_TRUE(backend.status().IsInvalidArgument());
  EXPECT_EQ(backend.status().message(), expected);
  // OpenStorage refuses it the same way instead of making a folder "gs:".
  Result<std::unique_ptr<Storage>> storage = OpenStorage("gs://bucket/x", /*create=*/true);
  ASSERT_FALSE(storage.ok());
  EXPECT_EQ(storage.status().message(), expected);
}

TEST(StorageBackends, FileUrlsAndPathsOpenTheSameDirectory) {
  TempDir dir;
  auto by_path = OpenStorage(dir.Sub("ds"), /*create=*/true);
  ASSERT_TRUE(by_path.ok()) << by_path.status().ToString();
  ASSERT_TRUE((*by_path)->Put("k", "v").ok());
  auto by_url = OpenStorage("file://" + dir.Sub("ds"), /*create=*/false);
  ASSERT_TRUE(by_url.ok()) << by_url.status().ToString();
  auto got = (*by_url)->Get("k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "v");
}

TEST(StorageBackends, HelpListsEveryForm) {
  EXPECT_EQ(StorageLocationForms(),
            "DIR (or file://DIR), http(s)://HOST/PATH (read-only) or s3://BUCKET/PREFIX");
}

TEST(StorageBackends, TheDocsTableIsTheRegistry) {
  std::ifstream in(std::string(COHORT_SOURCE_DIR) + "/docs/dataset-format.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find(StorageBackendsTable()), std::string::npos)
      << "docs/dataset-format.md must hold this table:\n"
      << StorageBackendsTable();
}

TEST(StorageBackends, EveryCohortSettingARowNamesIsInTheSettingsTable) {
  for (const StorageBackend& backend : StorageBackends()) {
    std::istringstream names(backend.settings);
    for (std::string name; std::getline(names, name, ',');) {
      while (!name.empty() && name.front() == ' ') name.erase(0, 1);
      if (name.rfind("COHORT_", 0) != 0) continue;  // AWS_* are the AWS SDKs' names
      EXPECT_NE(FindSetting(name), nullptr) << backend.name << " names " << name;
    }
  }
}

}  // namespace
}  // namespace cohort::data
