// Repository: a dataset's objects and refs on one Storage. Knows the key
// layout (format, HEAD, refs/, commits/, chunks/), resolves refs, and reads
// objects with errors that name the dataset, the commit and the chunk.
#ifndef COHORT_DATA_REPOSITORY_H_
#define COHORT_DATA_REPOSITORY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/chunk.h"
#include "data/commit_object.h"
#include "data/storage.h"

namespace cohort::data {

class Repository {
 public:
  // Opens an existing dataset (its "format" key must name format version 1).
  static Result<std::unique_ptr<Repository>> Open(const std::string& location);
  // Makes a new dataset whose HEAD names `branch`; fails when one is there.
  static Result<std::unique_ptr<Repository>> Create(const std::string& location,
                                                    const std::string& branch);

  const std::string& location() const { return storage_->location(); }
  Storage& storage() { return *storage_; }

  // A branch, tag, commit id or unique id prefix, "HEAD" or "" (HEAD), each
  // optionally followed by ~N (N parents back) -> commit id.
  Result<std::string> Resolve(const std::string& ref);
  // The branch HEAD follows, or nullopt when HEAD is detached.
  Result<std::optional<std::string>> HeadBranch();
  Result<std::optional<std::string>> ReadRef(const std::string& key);  // "refs/heads/main"
  // Moves `key` from `expected` (nullopt: must not exist) to `id`; a conflict otherwise.
  Status SetRef(const std::string& key, const std::optional<std::string>& expected,
                const std::string& id, const std::function<void()>& while_locked = {});
  Status SetHead(const std::string& content);

  Result<CommitObject> LoadCommit(const std::string& id);
  // The chunk `ref` of commit `commit_id`: size and checksum verified, and
  // with `check_name` also its SHA-256 against its id (what verify does).
  Result<DecodedChunk> LoadChunk(const std::string& commit_id, const ChunkRef& ref,
                                 bool check_name = false);
  // Stores an object under its SHA-256 (skipped when present); returns the id.
  Result<std::string> PutObject(const std::string& kind, const std::string& bytes);
  Result<std::vector<std::string>> ListRefs();  // "refs/heads/main", "refs/tags/v1", ...

  static std::string ObjectKey(const std::string& kind, const std::string& id) {
    return kind + "/" + id.substr(0, 2) + "/" + id;
  }
  // "dataset LOC, commit ID, chunk ID: " for error messages.
  std::string ChunkContext(const std::string& commit_id, const std::string& chunk_id) const;

 private:
  explicit Repository(std::unique_ptr<Storage> storage) : storage_(std::move(storage)) {}
  Result<std::optional<std::string>> ResolveName(const std::string& ref);

  std::unique_ptr<Storage> storage_;
};

// Branch and tag names: letters, digits, '.', '_', '-', '/' (no "..", no
// leading or trailing '/', nothing ending in ".lock").
Status CheckRefName(const std::string& name);
// The Dataset, Writer and history functions all start here.
std::string TrimNewline(std::string s);

}  // namespace cohort::data

#endif  // COHORT_DATA_REPOSITORY_H_
