// Dataset: read-only random access to one commit.
#include <optional>

#include "data/repository.h"

namespace cohort::data {

namespace {

class DatasetImpl : public Dataset {
 public:
  DatasetImpl(std::unique_ptr<Repository> repo, const std::string& id, CommitObject commit)
      : repo_(std::move(repo)),
        info_(CommitInfoOf(id, commit)),
        commit_(std::move(commit)),
        index_(commit_.chunks) {}

  const CommitInfo& commit() const override { return info_; }
  const Schema& schema() const override { return commit_.schema; }
  uint64_t size() const override { return index_.size(); }

  Result<Sample> Get(uint64_t i) override {
    Result<std::pair<const DecodedChunk*, uint64_t>> at = Locate(i);
    if (!at.ok()) return at.status();
    Result<Sample> sample = DecodeRecord(schema(), at->first->record(at->second));
    if (!sample.ok()) {
      return sample.status().WithContext(
          repo_->ChunkContext(info_.id, commit_.chunks[cached_pos_].id) + ", sample " +
          std::to_string(i));
    }
    return sample;
  }

  Result<uint64_t> SampleId(uint64_t i) override {
    Result<std::pair<const DecodedChunk*, uint64_t>> at = Locate(i);
    if (!at.ok()) return at.status();
    return at->first->id(at->second);
  }

 private:
  // The chunk holding sample i (read and cached unless it is the cached one).
  Result<std::pair<const DecodedChunk*, uint64_t>> Locate(uint64_t i) {
    if (i >= size()) {
      return Status::InvalidArgument("sample " + std::to_string(i) + " is out of range: dataset " +
                                     repo_->location() + " at commit " + info_.id + " has " +
                                     std::to_string(size()));
    }
    auto [pos, offset] = index_.Find(i);
    if (!cached_ || cached_pos_ != pos) {
      cached_.reset();
      Result<DecodedChunk> chunk = repo_->LoadChunk(info_.id, commit_.chunks[pos]);
      if (!chunk.ok()) return chunk.status();
      cached_ = std::move(*chunk);
      cached_pos_ = pos;
    }
    return std::pair<const DecodedChunk*, uint64_t>(&*cached_, offset);
  }

  std::unique_ptr<Repository> repo_;
  CommitInfo info_;
  CommitObject commit_;
  ChunkIndex index_;
  std::optional<DecodedChunk> cached_;
  size_t cached_pos_ = 0;
};

}  // namespace

Result<std::unique_ptr<Dataset>> Dataset::Open(const std::string& location,
                                               const std::string& ref) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> id = (*repo)->Resolve(ref);
  if (!id.ok()) return id.status();
  Result<CommitObject> commit = (*repo)->LoadCommit(*id);
  if (!commit.ok()) return commit.status();
  return std::unique_ptr<Dataset>(new DatasetImpl(std::move(*repo), *id, std::move(*commit)));
}

}  // namespace cohort::data
