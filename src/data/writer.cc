// Writer: the working state of one branch, committed copy-on-write at chunk
// granularity. Only chunks that gained, lost or changed samples are encoded
// and stored; every other chunk reference is carried over unchanged.
//
// Commit order (each step durable before the next): chunk objects, the
// commit object, then a compare-and-swap of the branch ref. A crash before
// the swap leaves unreferenced objects only; readers never see them.
#include <cstdlib>
#include <ctime>
#include <optional>

#include "data/lease.h"
#include "data/repository.h"

namespace cohort::data {

namespace {

// One chunk of the working state: stored as-is, or being edited in memory.
struct Slot {
  ChunkRef ref;                        // valid when !edited
  std::optional<ChunkBuilder> edited;  // loaded (Update/Delete) or new (Append)
  bool fresh = false;                  // created by Append in this session: may grow
  uint64_t size() const { return edited ? edited->size() : ref.num_samples; }
};

class WriterImpl : public Writer {
 public:
  WriterImpl(std::unique_ptr<Repository> repo, WriterOptions options, std::string branch,
             std::string base, const CommitObject& head)
      : repo_(std::move(repo)),
        options_(std::move(options)),
        branch_(std::move(branch)),
        base_(std::move(base)),
        schema_(head.schema),
        next_id_(head.next_sample_id) {
    for (const ChunkRef& ref : head.chunks) {
      slots_.push_back(Slot{ref, std::nullopt, false});
      size_ += ref.num_samples;
    }
  }

  const Schema& schema() const override { return schema_; }
  uint64_t size() const override { return size_; }
  const std::string& base() const override { return base_; }

  Status Append(const Sample& sample) override {
    Result<std::string> record = EncodeRecord(schema_, sample);
    if (!record.ok()) return record.status();
    if (slots_.empty() || !slots_.back().fresh ||
        slots_.back().edited->raw_bytes >= options_.chunk_bytes) {
      slots_.push_back(Slot{{}, ChunkBuilder{}, true});
    }
    slots_.back().edited->Add(next_id_++, std::move(*record));
    ++size_;
    return Status::OK();
  }

  Status Update(uint64_t i, const Sample& sample) override {
    Result<std::string> record = EncodeRecord(schema_, sample);
    if (!record.ok()) return record.status();
    Result<std::pair<ChunkBuilder*, uint64_t>> at = Edit(i);
    if (!at.ok()) return at.status();
    ChunkBuilder& b = *at->first;
    b.raw_bytes = b.raw_bytes - b.records[at->second].size() + record->size();
    b.records[at->second] = std::move(*record);
    return Status::OK();
  }

  Status Delete(uint64_t i) override {
    Result<std::pair<ChunkBuilder*, uint64_t>> at = Edit(i);
    if (!at.ok()) return at.status();
    ChunkBuilder& b = *at->first;
    b.raw_bytes -= b.records[at->second].size();
    b.records.erase(b.records.begin() + static_cast<std::ptrdiff_t>(at->second));
    b.ids.erase(b.ids.begin() + static_cast<std::ptrdiff_t>(at->second));
    --size_;
    return Status::OK();
  }

  // create_at_commit: the dataset is created (with its empty first commit)
  // only now, so a writer dropped before committing leaves nothing behind.
  void DeferCreate(std::string location) { deferred_location_ = std::move(location); }

  // Announces this writer to `cohort data gc` until it is destroyed (lease.h).
  Status TakeLease() {
    Result<std::unique_ptr<WriterLease>> lease = WriterLease::Take(&repo_->storage());
    if (!lease.ok()) return lease.status();
    lease_ = std::move(*lease);
    return Status::OK();
  }

  Result<std::string> Commit(const CommitRequest& request) override {
    if (!repo_) COHORT_RETURN_IF_ERROR(CreateNow());
    CommitObject commit;
    commit.parent = base_;
    commit.time = static_cast<int64_t>(std::time(nullptr));
    commit.message = request.message;
    commit.author = request.author.empty() ? DefaultAuthor() : request.author;
    commit.command = request.command;
    commit.next_sample_id = next_id_;
    commit.schema = schema_;
    for (const Slot& slot : slots_) {
      if (!slot.edited) {
        commit.chunks.push_back(slot.ref);
        continue;
      }
      if (slot.edited->size() == 0) continue;  // every sample deleted: drop the chunk
      Result<ChunkRef> ref = StoreChunk(*slot.edited);
      if (!ref.ok()) return ref.status();
      commit.chunks.push_back(*ref);
    }
    Result<std::string> id = repo_->PutObject("commits", EncodeCommit(commit));
    if (!id.ok()) return id.status();
    Step("commit-written");
    std::optional<std::string> expected;
    if (!base_.empty()) expected = base_;
    COHORT_RETURN_IF_ERROR(
        repo_->SetRef("refs/heads/" + branch_, expected, *id, [this] { Step("ref-locked"); }));
    Step("ref-replaced");
    // Only now does the working state become the committed state.
    base_ = *id;
    slots_.clear();
    for (const ChunkRef& ref : commit.chunks) slots_.push_back(Slot{ref, std::nullopt, false});
    return *id;
  }

 private:
  Status CreateNow() {
    Result<std::unique_ptr<Repository>> repo =
        Repository::Create(deferred_location_, branch_);
    if (!repo.ok()) return repo.status();
    repo_ = std::move(*repo);
    COHORT_RETURN_IF_ERROR(TakeLease());
    std::vector<Slot> appended = std::move(slots_);
    slots_.clear();
    Result<std::string> first = Commit({"create dataset", "", ""});
    slots_ = std::move(appended);
    return first.status();
  }

  void Step(std::string_view step) {
    if (options_.on_commit_step) options_.on_commit_step(step);
  }

  static std::string DefaultAuthor() {
    const char* user = std::getenv("USER");
    return user != nullptr && user[0] != '\0' ? user : "unknown";
  }

  Result<ChunkRef> StoreChunk(const ChunkBuilder& chunk) {
    Result<std::string> bytes =
        EncodeChunk(chunk, options_.compression, options_.compression_level);
    if (!bytes.ok()) return bytes.status();
    Result<std::string> id = repo_->PutObject("chunks", *bytes);
    if (!id.ok()) return id.status();
    Step("chunk-written");
    return ChunkRef{*id, chunk.size(), bytes->size()};
  }

  // The in-memory chunk holding sample i, loading it from storage the first time.
  Result<std::pair<ChunkBuilder*, uint64_t>> Edit(uint64_t i) {
    if (i >= size_) {
      return Status::InvalidArgument("sample " + std::to_string(i) +
                                     " is out of range: the writer of " + repo_->location() +
                                     " holds " + std::to_string(size_));
    }
    for (Slot& slot : slots_) {
      if (i >= slot.size()) {
        i -= slot.size();
        continue;
      }
      if (!slot.edited) {
        Result<DecodedChunk> chunk = repo_->LoadChunk(base_, slot.ref);
        if (!chunk.ok()) return chunk.status();
        slot.edited = chunk->ToBuilder();
      }
      return std::pair<ChunkBuilder*, uint64_t>(&*slot.edited, i);
    }
    return Status::Internal("writer sample count is out of step with its chunks");
  }

  std::unique_ptr<Repository> repo_;  // null until Commit with create_at_commit
  std::string deferred_location_;
  WriterOptions options_;
  std::string branch_;
  std::string base_;
  Schema schema_;
  uint64_t next_id_ = 0;
  uint64_t size_ = 0;
  std::vector<Slot> slots_;
  std::unique_ptr<WriterLease> lease_;  // after repo_: released before the storage closes
};

Status CheckSchema(const Schema& schema) {
  if (schema.empty()) return Status::InvalidArgument("a dataset needs at least one column");
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].name.empty())
      return Status::InvalidArgument("column " + std::to_string(i) + " has no name");
    if (schema[i].shape && schema[i].kind != ColumnKind::kArray) {
      return Status::InvalidArgument("column '" + schema[i].name +
                                     "': only array columns take a fixed shape");
    }
    if (schema[i].shape && schema[i].shape->size() > 32)
      return Status::InvalidArgument("column '" + schema[i].name + "': more than 32 dimensions");
    for (size_t j = 0; j < i; ++j) {
      if (schema[j].name == schema[i].name) {
        return Status::InvalidArgument("column '" + schema[i].name + "' appears twice");
      }
    }
  }
  return Status::OK();
}

// A deferred Create checks now, without writing, what Repository::Create
// would refuse at the first commit: a dataset that already has refs.
Status CheckAbsent(const std::string& location) {
  Result<std::unique_ptr<Storage>> storage = OpenStorage(location, false);
  if (!storage.ok()) return Status::OK();  // nothing there (a missing directory)
  Result<std::vector<std::string>> refs = (*storage)->List("refs");
  if (refs.ok() && !refs->empty())
    return Status::InvalidArgument("dataset " + location + " already exists");
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Writer>> Writer::Create(const std::string& location, const Schema& schema,
                                               WriterOptions options) {
  COHORT_RETURN_IF_ERROR(CheckSchema(schema));
  if (options.branch.empty()) options.branch = "main";
  COHORT_RETURN_IF_ERROR(CheckRefName(options.branch));
  CommitObject empty;
  empty.schema = schema;
  std::string branch = options.branch;
  if (options.create_at_commit) {
    COHORT_RETURN_IF_ERROR(CheckAbsent(location));
    auto writer = std::make_unique<WriterImpl>(nullptr, std::move(options), branch, "", empty);
    writer->DeferCreate(location);
    return std::unique_ptr<Writer>(std::move(writer));
  }
  Result<std::unique_ptr<Repository>> repo = Repository::Create(location, options.branch);
  if (!repo.ok()) return repo.status();
  auto writer =
      std::make_unique<WriterImpl>(std::move(*repo), std::move(options), branch, "", empty);
  COHORT_RETURN_IF_ERROR(writer->TakeLease());
  Result<std::string> first = writer->Commit({"create dataset", "", ""});
  if (!first.ok()) return first.status();
  return std::unique_ptr<Writer>(std::move(writer));
}

Result<std::unique_ptr<Writer>> Writer::Open(const std::string& location, WriterOptions options) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  if (options.branch.empty()) {
    Result<std::optional<std::string>> head = (*repo)->HeadBranch();
    if (!head.ok()) return head.status();
    if (!*head) {
      return Status::InvalidArgument("dataset " + location +
                                     ": HEAD is detached; name the branch to write to");
    }
    options.branch = **head;
  }
  COHORT_RETURN_IF_ERROR(CheckRefName(options.branch));
  Result<std::optional<std::string>> base = (*repo)->ReadRef("refs/heads/" + options.branch);
  if (!base.ok()) return base.status();
  if (!*base) {
    return Status::InvalidArgument("dataset " + location + " has no branch '" + options.branch +
                                   "'");
  }
  Result<CommitObject> head = (*repo)->LoadCommit(**base);
  if (!head.ok()) return head.status();
  std::string branch = options.branch;
  auto writer =
      std::make_unique<WriterImpl>(std::move(*repo), std::move(options), branch, **base, *head);
  COHORT_RETURN_IF_ERROR(writer->TakeLease());
  return std::unique_ptr<Writer>(std::move(writer));
}

}  // namespace cohort::data
