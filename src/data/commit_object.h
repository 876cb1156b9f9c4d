// Commit objects: the manifest of one version (schema, chunk list) plus its
// history fields. Layout: docs/dataset-format.md.
#ifndef COHORT_DATA_COMMIT_OBJECT_H_
#define COHORT_DATA_COMMIT_OBJECT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/data.h"

namespace cohort::data {

struct ChunkRef {
  std::string id;  // 64 hex digits: SHA-256 of the chunk object
  uint64_t num_samples = 0;
  uint64_t stored_size = 0;  // bytes of the chunk object
  bool operator==(const ChunkRef&) const = default;
};

struct CommitObject {
  std::string parent;  // empty: none
  int64_t time = 0;
  std::string message, author, command;
  uint64_t next_sample_id = 0;  // ids below this have been handed out on this line of history
  Schema schema;
  std::vector<ChunkRef> chunks;
};

std::string EncodeCommit(const CommitObject& commit);
Result<CommitObject> DecodeCommit(std::string_view bytes);

// The public summary of a commit object.
CommitInfo CommitInfoOf(const std::string& id, const CommitObject& commit);

// Which chunk holds sample i, and where inside it: built once per commit so a
// lookup is a binary search over cumulative counts (O(log chunks)).
class ChunkIndex {
 public:
  explicit ChunkIndex(const std::vector<ChunkRef>& chunks);
  uint64_t size() const { return ends_.empty() ? 0 : ends_.back(); }
  // Requires i < size(). Returns {chunk position, sample position inside it}.
  std::pair<size_t, uint64_t> Find(uint64_t i) const;

 private:
  std::vector<uint64_t> ends_;  // ends_[k] = samples in chunks 0..k
};

}  // namespace cohort::data

#endif  // COHORT_DATA_COMMIT_OBJECT_H_
