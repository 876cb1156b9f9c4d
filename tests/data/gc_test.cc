// `cohort data gc`: unreachable chunk and commit objects older than every
// open writer's lease (and than min_age) are removed; reachable ones, recent
// ones and those an open writer may still commit stay; expired leases are
// dead writers' and go too; a dry run removes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/repository.h"
#include "data/storage_test_util.h"
#include "support/child_process.h"

namespace cohort::data {
namespace {

using cohort::testing::Contains;
using cohort::testing::RunCohort;
using testing::TempDir;

namespace fs = std::filesystem;

// An object no commit names (as an interrupted writer leaves), written
// `age` ago; returns its key.
std::string Orphan(const std::string& dir, const std::string& text, std::chrono::seconds age) {
  auto repo = Repository::Open(dir);
  EXPECT_TRUE(repo.ok()) << repo.status().ToString();
  auto id = (*repo)->PutObject("chunks", text);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  const std::string key = "chunks/" + id->substr(0, 2) + "/" + *id;
  fs::last_write_time(dir + "/" + key, fs::file_time_type::clock::now() - age);
  return key;
}

void Age(const std::string& path, std::chrono::seconds age) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

TEST(GcTest, RemovesOnlyWhatNoRefReachesAndNoOpenWriterCanStillCommit) {
  using std::chrono::hours;
  TempDir dir;
  const std::string ds = dir.Sub("ds");
  testing::WriteSmallDataset(ds);
  const std::string old_orphan = Orphan(ds, "left by a dead writer", hours(3));
  const std::string mid_orphan = Orphan(ds, "maybe the open writer's", hours(1));
  const std::string new_orphan = Orphan(ds, "just written", std::chrono::seconds(0));

  // A writer open for two hours, and one that died two days ago.
  auto open = Writer::Open(ds);
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  std::vector<std::string> leases;
  for (const auto& e : fs::directory_iterator(ds + "/leases")) leases.push_back(e.path());
  ASSERT_EQ(leases.size(), 1u);
  Age(leases[0], hours(2));
  testing::WriteFile(ds + "/leases/0123456789abcdef0123456789abcdef", "dead writer\n");
  Age(ds + "/leases/0123456789abcdef0123456789abcdef", hours(48));

  GcOptions dry;
  dry.dry_run = true;
  auto preview = CollectGarbage(ds, dry);
  ASSERT_TRUE(preview.ok()) << preview.status().ToString();
  EXPECT_EQ(preview->removed, std::vector<std::string>{old_orphan});
  EXPECT_TRUE(fs::exists(ds + "/" + old_orphan));

  auto report = CollectGarbage(ds);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->removed, std::vector<std::string>{old_orphan});
  EXPECT_EQ(report->kept_recent, 2u);
  EXPECT_EQ(report->open_leases.size(), 1u);
  EXPECT_EQ(report->dead_leases,
            std::vector<std::string>{"leases/0123456789abcdef0123456789abcdef"});
  EXPECT_FALSE(fs::exists(ds + "/" + old_orphan));
  EXPECT_TRUE(fs::exists(ds + "/" + mid_orphan));
  EXPECT_FALSE(fs::exists(ds + "/leases/0123456789abcdef0123456789abcdef"));

  // Once the writer closes, its lease goes and nothing protects the older orphan.
  open->reset();
  // No lease is left (the folder goes with its last object).
  EXPECT_TRUE(!fs::exists(ds + "/leases") || fs::is_empty(ds + "/leases"));
  auto after = CollectGarbage(ds);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->removed, std::vector<std::string>{mid_orphan});
  EXPECT_TRUE(fs::exists(ds + "/" + new_orphan));  // younger than min_age
  auto verify = Verify(ds);
  ASSERT_TRUE(verify.ok());
  EXPECT_TRUE(verify->problems.empty()) << verify->problems.front();
  EXPECT_EQ(after->reachable, verify->commits + verify->chunks);
}

TEST(GcTest, CommandReportsAndRefusesBadOptions) {
  TempDir dir;
  const std::string ds = dir.Sub("ds");
  testing::WriteSmallDataset(ds);
  const std::string orphan = Orphan(ds, "orphan", std::chrono::hours(1));
  auto dry = RunCohort({"data", "-d", ds, "gc", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(Contains(dry.out, "would remove " + orphan + "\n")) << dry.out;
  EXPECT_TRUE(Contains(dry.out, "would remove 1 unreachable objects")) << dry.out;
  auto run = RunCohort({"data", "-d", ds, "gc", "--min-age", "60"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.out, "removed 1 unreachable objects")) << run.out;
  auto bad = RunCohort({"data", "-d", ds, "gc", "--min-age", "-1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(Contains(bad.err, "--min-age '-1' is not a number of seconds")) << bad.err;
  auto other = RunCohort({"data", "-d", ds, "gc", "--threads", "2"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_TRUE(Contains(other.err, "gc has no --threads")) << other.err;
}

}  // namespace
}  // namespace cohort::data
