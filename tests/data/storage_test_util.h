// Helpers shared by the storage backend tests: a small multi-chunk,
// multi-commit dataset and a check that a location holds exactly it.
#ifndef COHORT_TESTS_DATA_STORAGE_TEST_UTIL_H_
#define COHORT_TESTS_DATA_STORAGE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/storage.h"

namespace cohort::data::testing {

constexpr uint64_t kSmallDatasetSamples = 300;

// Two commits on main (200 samples, then 100 more) in chunks of about 4 KiB,
// and a tag "v1" on the first. Returns the two commit ids.
inline std::vector<std::string> WriteSmallDataset(const std::string& location) {
  WriterOptions options;
  options.chunk_bytes = 4096;
  auto w = Writer::Create(location, FloatSchema(), options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return {};
  std::vector<std::string> ids;
  for (uint64_t i = 0; i < kSmallDatasetSamples; ++i) {
    EXPECT_TRUE((*w)->Append(FloatSample(static_cast<float>(i))).ok());
    if (i == 199 || i + 1 == kSmallDatasetSamples) {
      Result<std::string> id = (*w)->Commit({"part " + std::to_string(ids.size())});
      EXPECT_TRUE(id.ok()) << id.status().ToString();
      ids.push_back(id.ok() ? *id : "");
    }
  }
  EXPECT_TRUE(CreateTag(location, "v1", ids[0]).ok());
  return ids;
}

// `location` at HEAD holds the samples WriteSmallDataset wrote, at commit `head`.
inline void ExpectSmallDataset(const std::string& location, const std::string& head) {
  auto ds = Dataset::Open(location);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->commit().id, head);
  ASSERT_EQ((*ds)->size(), kSmallDatasetSamples);
  for (uint64_t i = 0; i < kSmallDatasetSamples; ++i) {
    Result<Sample> s = (*ds)->Get(i);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_EQ(*s, FloatSample(static_cast<float>(i))) << "sample " << i;
  }
  auto v1 = Dataset::Open(location, "v1");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ((*v1)->size(), 200u);
}

// `object` (whose bytes are `data`) read through one ReadMany as `count`
// consecutive ranges of `len` bytes from offset 0 gives exactly those bytes.
inline void ExpectReadManyExact(Storage& storage, const std::string& object,
                                const std::string& data, uint64_t count, uint64_t len) {
  std::vector<ByteRange> ranges;
  for (uint64_t i = 0; i < count; ++i) ranges.push_back({object, i * len, len});
  Result<std::vector<std::string>> many = storage.ReadMany(ranges);
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  for (size_t i = 0; i < ranges.size(); ++i)
    EXPECT_EQ((*many)[i], data.substr(ranges[i].offset, len)) << "range " << i;
}

}  // namespace cohort::data::testing

#endif  // COHORT_TESTS_DATA_STORAGE_TEST_UTIL_H_
