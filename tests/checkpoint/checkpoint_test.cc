// Checkpoints: round trips, keep-last-K and the best, re-saving a step,
// corruption and bad input reported with locations, saves killed at every
// point leaving the previous checkpoint loadable, and the same on S3.
#include "cohort/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/deadline.h"
#include "data/data_test_util.h"
#include "data/storage.h"
#include "support/s3rver_process.h"

namespace cohort {
namespace {

using data::testing::TempDir;

std::unique_ptr<CheckpointStore> OpenStore(const std::string& location,
                                           CheckpointOptions options = {}) {
  auto store = CheckpointStore::Open(location, std::move(options));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

std::vector<int64_t> Steps(CheckpointStore& store) {
  std::vector<int64_t> steps;
  auto list = store.List();
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (list.ok()) {
    for (const CheckpointInfo& info : *list) steps.push_back(info.step);
  }
  return steps;
}

// Every key of the location: what garbage collection left.
std::vector<std::string> Keys(const std::string& location) {
  auto storage = data::OpenStorage(location, false);
  EXPECT_TRUE(storage.ok());
  return *(*storage)->List("");
}

// Every file under `dir` on disk, scratch files included (Keys hides them).
std::vector<std::string> FilesOnDisk(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path().string().substr(dir.size() + 1));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Options whose warnings go to `warnings`.
CheckpointOptions Collecting(std::vector<std::string>* warnings, int keep_last = 3) {
  CheckpointOptions options;
  options.keep_last = keep_last;
  options.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
  return options;
}

TEST(Checkpoint, RoundTripAndLatest) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("ckpt"));
  auto none = store->LoadLatest();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(store->Save(10, std::string("state ten\0x", 11)).ok());
  ASSERT_TRUE(store->Save(20, "state twenty", 0.5).ok());
  auto latest = store->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->info.step, 20);
  EXPECT_EQ((*latest)->state, "state twenty");
  EXPECT_EQ((*latest)->info.metric, 0.5);
  auto ten = store->Load(10);
  ASSERT_TRUE(ten.ok() && ten->has_value());
  EXPECT_EQ((*ten)->state, std::string("state ten\0x", 11));
  EXPECT_FALSE((*ten)->info.metric.has_value());
  EXPECT_FALSE(store->Load(15)->has_value());
  // A second store (another process, later) sees the same.
  EXPECT_EQ(Steps(*OpenStore(dir.Sub("ckpt"))), (std::vector<int64_t>{10, 20}));
}

TEST(Checkpoint, KeepsTheLastKAndTheBest) {
  TempDir dir;
  CheckpointOptions options;
  options.keep_last = 2;
  auto store = OpenStore(dir.Sub("ckpt"), options);
  const double losses[] = {0.9, 0.3, 0.5, 0.6, 0.7};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store->Save(100 * (i + 1), "s" + std::to_string(i), losses[i]).ok());
  }
  EXPECT_EQ(Steps(*store), (std::vector<int64_t>{200, 400, 500}));
  auto best = store->Best();
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_EQ((*best)->step, 200);
  EXPECT_EQ((*best)->metric, 0.3);
  // Everything else is gone from the storage, not only from the list.
  EXPECT_EQ(Keys(dir.Sub("ckpt")).size(), 6u);
  // Higher is better: the best is another one.
  options.higher_is_better = true;
  auto accuracy = OpenStore(dir.Sub("acc"), options);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(accuracy->Save(i, "a", losses[i]).ok());
  EXPECT_EQ(Steps(*accuracy), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ((*accuracy->Best())->step, 0);
}

TEST(Checkpoint, ResavingAStepReplacesIt) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("ckpt"));
  ASSERT_TRUE(store->Save(5, "first").ok());
  ASSERT_TRUE(store->Save(5, "second").ok());
  EXPECT_EQ((*store->LoadLatest())->state, "second");
  EXPECT_EQ(Keys(dir.Sub("ckpt")).size(), 2u);  // the first state was collected
}

TEST(Checkpoint, CorruptStateIsAnErrorNamingIt) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("ckpt"));
  ASSERT_TRUE(store->Save(7, "good state").ok());
  std::string state_key;
  for (const std::string& key : Keys(dir.Sub("ckpt"))) {
    if (key.find("/state-") != std::string::npos) state_key = key;
  }
  ASSERT_FALSE(state_key.empty());
  std::ofstream(dir.Sub("ckpt/" + state_key), std::ios::binary | std::ios::trunc) << "bad";
  auto latest = store->LoadLatest();
  ASSERT_FALSE(latest.ok());
  EXPECT_EQ(latest.status().message(),
            "checkpoint step 7: state " + dir.Sub("ckpt/" + state_key) +
                " does not match its manifest (3 bytes, manifest says 10 bytes and SHA-256 " +
                (*store->List())[0].sha256 + ")");
  std::filesystem::remove(dir.Sub("ckpt/" + state_key));
  EXPECT_EQ(store->Load(7).status().message(), "checkpoint step 7: state " +
                                                   dir.Sub("ckpt/" + state_key) +
                                                   " named by its manifest is missing");
  std::ofstream(dir.Sub("ckpt/step-000000000007/MANIFEST"), std::ios::trunc) << "garbage\n";
  EXPECT_EQ(store->LoadLatest().status().message(),
            dir.Sub("ckpt/step-000000000007/MANIFEST") +
                ": not a cohort checkpoint manifest (first line 'garbage')");
}

// A corrupt old manifest does not stop a job that has newer checkpoints: a
// load finds the newest valid one, a save goes on, and the bad checkpoint is
// reported each time and left in place, never deleted without a word.
TEST(Checkpoint, CorruptOldManifestIsSkippedReportedAndKept) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  std::vector<std::string> warnings;
  auto store = OpenStore(location, Collecting(&warnings, 2));
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(store->Save(step, "state " + std::to_string(step)).ok());
  }
  ASSERT_EQ(Steps(*store), (std::vector<int64_t>{2, 3}));
  const std::string manifest = location + "/step-000000000002/MANIFEST";
  std::ofstream(manifest, std::ios::trunc) << "cohort-checkpoint 1\nstep 2\nbytes x\n";
  const std::string report = "checkpoint step 2 is unusable and was skipped: " + manifest +
                             ":3: bad bytes 'x'; it is left in place (delete " + location +
                             "/step-000000000002 once inspected)";
  warnings.clear();
  auto latest = store->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ((*latest)->info.step, 3);
  EXPECT_EQ((*latest)->state, "state 3");
  EXPECT_EQ(warnings, (std::vector<std::string>{report}));

  warnings.clear();
  ASSERT_TRUE(store->Save(4, "state 4").ok());
  ASSERT_TRUE(store->Save(5, "state 5").ok());
  EXPECT_EQ(warnings, (std::vector<std::string>{report, report}));
  EXPECT_EQ(Steps(*store), (std::vector<int64_t>{4, 5}));
  // Keep-last counts valid checkpoints; the bad one is untouched.
  EXPECT_EQ(FilesOnDisk(location + "/step-000000000002").size(), 2u);
  EXPECT_EQ(std::filesystem::exists(location + "/step-000000000003"), false);
  EXPECT_EQ((*store->LoadLatest())->state, "state 5");
}

// The newest checkpoint is corrupt (its state, or its manifest): the newest
// valid older one is loaded, and the warning says so.
TEST(Checkpoint, CorruptNewestFallsBackToTheNewestValidOne) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  std::vector<std::string> warnings;
  auto store = OpenStore(location, Collecting(&warnings));
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(store->Save(step, "state " + std::to_string(step)).ok());
  }
  std::string state3;
  for (const std::string& key : Keys(location)) {
    if (key.rfind("step-000000000003/state-", 0) == 0) state3 = location + "/" + key;
  }
  ASSERT_FALSE(state3.empty());
  std::ofstream(state3, std::ios::binary | std::ios::trunc) << "bad";
  auto latest = store->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ((*latest)->info.step, 2);
  EXPECT_EQ((*latest)->state, "state 2");
  EXPECT_EQ(warnings,
            (std::vector<std::string>{
                "checkpoint step 3 is unusable and was skipped: checkpoint step 3: "
                "state " +
                state3 +
                " does not match its manifest (3 bytes, manifest says 7 bytes "
                "and SHA-256 " +
                (*store->List())[2].sha256 + "); loaded step 2, the newest valid checkpoint"}));
  // Asked for by step, a corrupt checkpoint is an error, as before.
  EXPECT_FALSE(store->Load(3).ok());

  warnings.clear();
  const std::string manifest2 = location + "/step-000000000002/MANIFEST";
  std::ofstream(manifest2, std::ios::trunc) << "garbage\n";
  latest = store->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ((*latest)->info.step, 1);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "checkpoint step 2 is unusable and was skipped: " + manifest2 +
                             ": not a cohort checkpoint manifest (first line 'garbage'); it is "
                             "left in place (delete " +
                             location +
                             "/step-000000000002 once inspected); loaded step 1, the newest "
                             "valid checkpoint");
  EXPECT_EQ(warnings[1].rfind("checkpoint step 3 is unusable and was skipped: ", 0), 0u);
  EXPECT_NE(warnings[1].find("; loaded step 1, the newest valid checkpoint"), std::string::npos);
}

// A live writer's temporary file is not collected; once its writer is gone
// (here: the lock the writer holds is released) the next save collects it.
TEST(Checkpoint, TemporaryFileOfALiveWriterIsLeftAlone) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  auto store = OpenStore(location);
  ASSERT_TRUE(store->Save(1, "one").ok());
  std::filesystem::create_directories(location + "/step-000000000002");
  const std::string tmp = location + "/step-000000000002/state-0123456789abcdef.tmp.Ab12Cd";
  {
    const int writer = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(writer, 0);
    ASSERT_EQ(::flock(writer, LOCK_EX), 0);  // as LocalStorage::Put holds it while it writes
    ASSERT_TRUE(store->Save(3, "three").ok());
    EXPECT_TRUE(std::filesystem::exists(tmp));
    ::close(writer);
  }
  ASSERT_TRUE(store->Save(4, "four").ok());
  EXPECT_FALSE(std::filesystem::exists(tmp));
  EXPECT_FALSE(std::filesystem::exists(location + "/step-000000000002"));
}

TEST(Checkpoint, BadInputIsRefused) {
  TempDir dir;
  CheckpointOptions options;
  options.keep_last = 0;
  EXPECT_EQ(CheckpointStore::Open(dir.Sub("a"), options).status().message(),
            "checkpoints at " + dir.Sub("a") + ": keep_last must be at least 1, not 0");
  EXPECT_EQ(CheckpointStore::Open("http://127.0.0.1:1/x").status().message(),
            "checkpoints at http://127.0.0.1:1/x: HTTP storage is read-only; use a directory or "
            "s3://");
  auto store = OpenStore(dir.Sub("b"));
  EXPECT_EQ(store->Save(-1, "x").message(), "checkpoint step must be >= 0, not -1");
}

// The previous checkpoint is what a load finds after a save was killed.
void ExpectPreviousCheckpoint(const std::string& location) {
  auto store = OpenStore(location);
  auto latest = store->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->info.step, 1);
  EXPECT_EQ((*latest)->state, "one");
  // The next save collects what the killed one left, its temporary file too.
  ASSERT_TRUE(store->Save(3, "three").ok());
  for (const std::string& file : FilesOnDisk(location)) {
    EXPECT_EQ(file.find("step-000000000002"), std::string::npos) << file;
  }
}

TEST(CheckpointCrash, KilledAfterTheStateBeforeTheManifest) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  ASSERT_TRUE(OpenStore(location)->Save(1, "one").ok());
  CheckpointOptions options;
  options.on_save_step = [](std::string_view step) {
    if (step == "state-written") ::raise(SIGKILL);
  };
  ASSERT_EXIT(OpenStore(location, options)->Save(2, "two"), ::testing::KilledBySignal(SIGKILL), "");
  bool state_left = false;
  for (const std::string& key : Keys(location))
    state_left |= key.rfind("step-000000000002/", 0) == 0;
  EXPECT_TRUE(state_left) << "the kill came after the state object was written";
  ExpectPreviousCheckpoint(location);
}

// Killed while the state is being written (a 64 MiB state: the kill comes as
// soon as its temporary file appears): no checkpoint 2, checkpoint 1 intact.
TEST(CheckpointCrash, KilledWhileTheStateIsWritten) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  ASSERT_TRUE(OpenStore(location)->Save(1, "one").ok());
  const std::string folder = location + "/step-000000000002";
  ASSERT_EXIT(
      {
        std::thread killer([&] {
          Deadline deadline = Deadline::AfterSeconds(30);
          while (!deadline.Expired()) {
            std::error_code ec;
            for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
              if (entry.path().filename().string().find(".tmp.") != std::string::npos) {
                ::raise(SIGKILL);
              }
            }
          }
          ::raise(SIGKILL);
        });
        OpenStore(location)->Save(2, std::string(64 << 20, 'x'));
        killer.join();
      },
      ::testing::KilledBySignal(SIGKILL), "");
  auto store = OpenStore(location);
  auto steps = Steps(*store);
  if (steps.back() == 2) {
    // The write outran the watcher: then checkpoint 2 must be whole.
    EXPECT_EQ((*store->LoadLatest())->state, std::string(64 << 20, 'x'));
    GTEST_SKIP() << "the save completed before the kill";
  }
  // The killed writer left its temporary file (Keys does not show it).
  bool temporary_left = false;
  for (const std::string& file : FilesOnDisk(location)) {
    temporary_left |= file.find(".tmp.") != std::string::npos;
  }
  EXPECT_TRUE(temporary_left);
  ExpectPreviousCheckpoint(location);
}

TEST(CheckpointCrash, KilledAfterTheManifestKeepsTheNewCheckpoint) {
  TempDir dir;
  const std::string location = dir.Sub("ckpt");
  ASSERT_TRUE(OpenStore(location)->Save(1, "one").ok());
  CheckpointOptions options;
  options.on_save_step = [](std::string_view step) {
    if (step == "manifest-written") ::raise(SIGKILL);
  };
  ASSERT_EXIT(OpenStore(location, options)->Save(2, "two"), ::testing::KilledBySignal(SIGKILL), "");
  auto latest = OpenStore(location)->LoadLatest();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->info.step, 2);
  EXPECT_EQ((*latest)->state, "two");
}

TEST(CheckpointS3, KeepsTheLastKAndCollectsGarbage) {
  std::string missing = testing::S3rverProcess::Unavailable();
  if (!missing.empty()) GTEST_SKIP() << "S3 tests need s3rver: " << missing;
  TempDir dir;
  testing::S3rverProcess server(dir.Sub("s3rver"), "bucket");
  ASSERT_TRUE(server.ok());
  for (const auto& [name, value] : server.Env()) ::setenv(name.c_str(), value.c_str(), 1);
  const std::string location = "s3://bucket/runs/r1";
  CheckpointOptions options;
  options.keep_last = 2;
  auto store = OpenStore(location, options);
  ASSERT_NE(store, nullptr);
  for (int step = 1; step <= 4; ++step) {
    ASSERT_TRUE(store->Save(step, "state " + std::to_string(step), 1.0 / step).ok());
  }
  EXPECT_EQ(Steps(*store), (std::vector<int64_t>{3, 4}));
  auto latest = OpenStore(location)->LoadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ((*latest)->state, "state 4");
  EXPECT_EQ(Keys(location).size(), 4u);  // two manifests, two states
  // A corrupt old manifest there is skipped, reported and kept too.
  auto storage = data::OpenStorage(location, false);
  ASSERT_TRUE(storage.ok());
  ASSERT_TRUE((*storage)->Put("step-000000000003/MANIFEST", "garbage\n").ok());
  std::vector<std::string> warnings;
  auto reopened = OpenStore(location, Collecting(&warnings, 2));
  ASSERT_TRUE(reopened->Save(5, "state 5").ok());
  EXPECT_EQ(Steps(*reopened), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ((*reopened->LoadLatest())->state, "state 5");
  ASSERT_EQ(warnings.size(), 3u);  // the save, the listing, the load
  EXPECT_EQ(warnings[0], "checkpoint step 3 is unusable and was skipped: " + location +
                             "/step-000000000003/MANIFEST: not a cohort checkpoint manifest "
                             "(first line 'garbage'); it is left in place (delete " +
                             location + "/step-000000000003 once inspected)");
  EXPECT_EQ(Keys(location).size(), 6u);  // the bad checkpoint's two objects are still there
  for (const auto& [name, value] : server.Env()) ::unsetenv(name.c_str());
}

}  // namespace
}  // namespace cohort
