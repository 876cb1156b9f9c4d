// Versioning: copy-on-write commits that share unchanged chunks, diff and
// checkout across commits, branches and tags, and conflicting writers.
#include <gtest/gtest.h>

#include <cstring>

#include "cohort/data.h"
#include "data/data_test_util.h"

namespace cohort::data {
namespace {

using testing::CountObjects;
using testing::FloatSample;
using testing::FloatSchema;
using testing::TempDir;

// A dataset of `n` float samples (sample i starts at 100*i) in chunks of
// about four samples each, committed once.
std::string MakeDataset(const TempDir& dir, uint64_t n) {
  std::string loc = dir.Sub("ds");
  WriterOptions options;
  options.chunk_bytes = 4 * 16 * 4 - 1;  // four 16-float samples fill a chunk
  auto w = Writer::Create(loc, FloatSchema(), options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (uint64_t i = 0; i < n; ++i) EXPECT_TRUE((*w)->Append(FloatSample(100.0f * i)).ok());
  EXPECT_TRUE((*w)->Commit({"initial"}).ok());
  return loc;
}

float FirstValue(Dataset& ds, uint64_t i) {
  Result<Sample> s = ds.Get(i);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return -1;
  float f;
  std::memcpy(&f, (*s)[0].bytes.data(), 4);
  return f;
}

TEST(DataVersioning, OneChangedSampleWritesOneChunk) {
  TempDir dir;
  std::string loc = MakeDataset(dir, 100);
  ASSERT_EQ(CountObjects(loc, "chunks"), 25u);
  auto w = Writer::Open(loc);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Update(57, FloatSample(-1)).ok());
  ASSERT_TRUE((*w)->Commit({"fix sample 57"}).ok());
  EXPECT_EQ(CountObjects(loc, "chunks"), 26u) << "only the chunk holding sample 57 is rewritten";

  ASSERT_TRUE((*w)->Delete(3).ok());
  ASSERT_TRUE((*w)->Commit({"drop sample 3"}).ok());
  EXPECT_EQ(CountObjects(loc, "chunks"), 27u);

  ASSERT_TRUE((*w)->Append(FloatSample(5)).ok());
  ASSERT_TRUE((*w)->Commit({"one more"}).ok());
  EXPECT_EQ(CountObjects(loc, "chunks"), 28u);

  auto commit_only = (*w)->Commit({"nothing changed"});
  ASSERT_TRUE(commit_only.ok());
  EXPECT_EQ(CountObjects(loc, "chunks"), 28u);

  auto ds = Dataset::Open(loc);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->size(), 100u);
  EXPECT_EQ(FirstValue(**ds, 56), -1.0f);  // sample 57 moved down after the delete
  EXPECT_EQ(FirstValue(**ds, 3), 400.0f);
  EXPECT_EQ(FirstValue(**ds, 99), 5.0f);
  auto log = Log(loc);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 6u);
  EXPECT_EQ((*log)[0].message, "nothing changed");
  EXPECT_EQ((*log)[5].message, "create dataset");
  EXPECT_EQ((*log)[1].parent, (*log)[2].id);
}

TEST(DataVersioning, DiffAndCheckoutAcrossThreeCommits) {
  TempDir dir;
  std::string loc = MakeDataset(dir, 10);  // ids 0..9
  auto c1 = ResolveRef(loc, "main");
  ASSERT_TRUE(c1.ok());
  auto w = Writer::Open(loc);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Update(3, FloatSample(-3)).ok());
  ASSERT_TRUE((*w)->Delete(5).ok());
  auto c2 = (*w)->Commit({"change 3, remove 5"});
  ASSERT_TRUE(c2.ok());
  ASSERT_TRUE((*w)->Append(FloatSample(-10)).ok());
  ASSERT_TRUE((*w)->Append(FloatSample(-11)).ok());
  auto c3 = (*w)->Commit({"add two"});
  ASSERT_TRUE(c3.ok());

  auto d12 = Diff(loc, *c1, *c2);
  ASSERT_TRUE(d12.ok()) << d12.status().ToString();
  EXPECT_EQ(d12->changed, std::vector<uint64_t>({3}));
  EXPECT_EQ(d12->removed, std::vector<uint64_t>({5}));
  EXPECT_TRUE(d12->added.empty());
  auto d23 = Diff(loc, *c2, "main");
  ASSERT_TRUE(d23.ok());
  EXPECT_EQ(d23->added, std::vector<uint64_t>({10, 11}));
  EXPECT_TRUE(d23->changed.empty() && d23->removed.empty());
  auto d13 = Diff(loc, c1->substr(0, 10), "HEAD");
  ASSERT_TRUE(d13.ok());
  EXPECT_EQ(d13->added, std::vector<uint64_t>({10, 11}));
  EXPECT_EQ(d13->removed, std::vector<uint64_t>({5}));
  EXPECT_EQ(d13->changed, std::vector<uint64_t>({3}));
  auto d31 = Diff(loc, "HEAD", "HEAD~2");
  ASSERT_TRUE(d31.ok()) << d31.status().ToString();
  EXPECT_EQ(d31->removed, std::vector<uint64_t>({10, 11}));
  EXPECT_EQ(d31->added, std::vector<uint64_t>({5}));

  // Checkout of a commit detaches HEAD: readers follow it, writers refuse it.
  ASSERT_TRUE(Checkout(loc, *c1).ok());
  auto at1 = Dataset::Open(loc);
  ASSERT_TRUE(at1.ok());
  EXPECT_EQ((*at1)->commit().id, *c1);
  EXPECT_EQ((*at1)->size(), 10u);
  EXPECT_EQ(FirstValue(**at1, 3), 300.0f);
  EXPECT_FALSE(Writer::Open(loc).ok());
  ASSERT_TRUE(CreateTag(loc, "v1", *c1).ok());
  EXPECT_FALSE(CreateTag(loc, "v1", *c2).ok()) << "tags do not move";
  ASSERT_TRUE(CreateBranch(loc, "fixes", *c2).ok());
  ASSERT_TRUE(Checkout(loc, "fixes").ok());
  auto at2 = Dataset::Open(loc);
  ASSERT_TRUE(at2.ok());
  EXPECT_EQ((*at2)->commit().id, *c2);
  EXPECT_EQ(FirstValue(**at2, 3), -3.0f);
  EXPECT_EQ((*at2)->size(), 9u);
  // HEAD follows the branch: a commit on it moves what readers of HEAD see.
  auto wf = Writer::Open(loc);
  ASSERT_TRUE(wf.ok());
  ASSERT_TRUE((*wf)->Update(0, FloatSample(7)).ok());
  auto c4 = (*wf)->Commit({"on fixes"});
  ASSERT_TRUE(c4.ok());
  EXPECT_EQ(*ResolveRef(loc, "HEAD"), *c4);
  EXPECT_EQ(*ResolveRef(loc, "main"), *c3);
  auto v1 = Dataset::Open(loc, "v1");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ((*v1)->commit().id, *c1);
  ASSERT_TRUE(Checkout(loc, "main").ok());
  auto at3 = Dataset::Open(loc);
  ASSERT_TRUE(at3.ok());
  EXPECT_EQ((*at3)->size(), 11u);
  EXPECT_EQ(FirstValue(**at3, 10), -11.0f);
  EXPECT_FALSE(Checkout(loc, "nope").ok());
  EXPECT_FALSE(CreateBranch(loc, "../evil", "main").ok());
  auto verify = Verify(loc);
  ASSERT_TRUE(verify.ok());
  EXPECT_TRUE(verify->problems.empty());
  EXPECT_EQ(verify->commits, 5u);
}

// A conflict is told by its code, never by its text.
TEST(DataVersioning, ConflictIsACodeNotAMessage) {
  EXPECT_TRUE(IsConflict(Status::Aborted("anything")));
  EXPECT_TRUE(IsConflict(Status::Aborted("x").WithContext("commit")));
  EXPECT_FALSE(IsConflict(Status::Mismatch("conflict: ref changed")));
  EXPECT_FALSE(IsConflict(Status::IoError("conflict: ref changed")));
  EXPECT_FALSE(IsConflict(Status::OK()));
}

TEST(DataVersioning, SecondWriterOnTheSameBranchConflicts) {
  TempDir dir;
  std::string loc = MakeDataset(dir, 8);
  auto a = Writer::Open(loc);
  auto b = Writer::Open(loc);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string base = (*b)->base();
  ASSERT_TRUE((*a)->Update(1, FloatSample(-1)).ok());
  ASSERT_TRUE((*b)->Update(2, FloatSample(-2)).ok());
  auto ca = (*a)->Commit({"a"});
  ASSERT_TRUE(ca.ok());
  auto cb = (*b)->Commit({"b"});
  ASSERT_FALSE(cb.ok());
  EXPECT_TRUE(IsConflict(cb.status())) << cb.status().ToString();
  EXPECT_EQ(cb.status().code(), Status::Code::kAborted) << cb.status().ToString();
  EXPECT_NE(cb.status().message().find("refs/heads/main"), std::string::npos)
      << cb.status().message();
  EXPECT_EQ((*b)->base(), base) << "a failed commit leaves the writer as it was";
  EXPECT_EQ(*ResolveRef(loc, "main"), *ca);
  // A writer on another branch is not in the way.
  ASSERT_TRUE(CreateBranch(loc, "other", base).ok());
  WriterOptions other;
  other.branch = "other";
  auto c = Writer::Open(loc, other);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Append(FloatSample(1)).ok());
  EXPECT_TRUE((*c)->Commit({"c"}).ok());
  // The loser starts again from the new head and succeeds.
  auto b2 = Writer::Open(loc);
  ASSERT_TRUE(b2.ok());
  ASSERT_TRUE((*b2)->Update(2, FloatSample(-2)).ok());
  EXPECT_TRUE((*b2)->Commit({"b again"}).ok());
  auto d = Diff(loc, base, "main");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->changed, std::vector<uint64_t>({1, 2}));
}

}  // namespace
}  // namespace cohort::data
