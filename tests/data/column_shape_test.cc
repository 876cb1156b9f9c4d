// Fixed-shape array columns: the shape is part of the schema (kept in the
// commit object), a value of another shape is refused at Append and Update
// naming the column and both shapes, and a column declared ragged (no
// shape) takes any shape. Commits without fixed shapes keep format 1's bytes.
#include <gtest/gtest.h>

#include "cohort/data.h"
#include "data/commit_object.h"
#include "data/data_test_util.h"

namespace cohort::data {
namespace {

using testing::FloatSample;
using testing::TempDir;

Schema FixedSchema() {
  Column x{"x", ColumnKind::kArray, DataType::kFloat32};
  x.shape = std::vector<uint64_t>{4};
  return {x, {"y", ColumnKind::kArray, DataType::kFloat32}};
}

TEST(ColumnShapeTest, AValueOfAnotherShapeIsRefusedAtAppend) {
  TempDir dir;
  auto w = Writer::Create(dir.path(), FixedSchema());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const Value ragged = FloatSample(0, 7)[0];
  ASSERT_TRUE((*w)->Append({FloatSample(0, 4)[0], ragged}).ok());
  const Status bad = (*w)->Append({FloatSample(0, 5)[0], ragged});
  EXPECT_EQ(bad.message(),
            "column 'x': a value of shape [5] does not fit the column's fixed shape [4] (a "
            "column declared ragged takes any shape)");
  EXPECT_FALSE((*w)->Update(0, {FloatSample(0, 3)[0], ragged}).ok());
  ASSERT_TRUE((*w)->Append({FloatSample(1, 4)[0], FloatSample(1, 2)[0]}).ok());
  ASSERT_TRUE((*w)->Commit({"two"}).ok());

  auto ds = Dataset::Open(dir.path());
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->schema()[0].shape, std::vector<uint64_t>{4});
  EXPECT_FALSE((*ds)->schema()[1].shape.has_value());
  EXPECT_EQ((*ds)->size(), 2u);
  auto again = Writer::Open(dir.path());  // the reopened writer checks too
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)->Append({FloatSample(0, 5)[0], ragged}).ok());
}

TEST(ColumnShapeTest, ShapesRoundTripAndOnlyArraysTakeThem) {
  CommitObject c;
  c.schema = FixedSchema();
  (*c.schema[0].shape) = {2, 0, 3};
  auto decoded = DecodeCommit(EncodeCommit(c));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->schema[0].shape, (std::vector<uint64_t>{2, 0, 3}));
  EXPECT_FALSE(decoded->schema[1].shape.has_value());
  // Without a fixed shape the flags word stays 0, as format 1 always wrote it.
  CommitObject plain;
  plain.schema = {{"y", ColumnKind::kArray, DataType::kFloat32}};
  EXPECT_EQ(EncodeCommit(plain).substr(4, 4), std::string(4, '\0'));

  TempDir dir;
  Column label{"l", ColumnKind::kLabel};
  label.shape = std::vector<uint64_t>{};
  auto w = Writer::Create(dir.path(), {label});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "column 'l': only array columns take a fixed shape");
}

}  // namespace
}  // namespace cohort::data
