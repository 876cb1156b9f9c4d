// Key layout, refs and verified object reads.
#include "data/repository.h"

#include "data/hash.h"

namespace cohort::data {

namespace {

constexpr char kFormatKey[] = "format";
constexpr char kFormatLine[] = "cohort-dataset 1\n";
constexpr char kHeadRefPrefix[] = "ref: ";

bool IsHex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string TrimNewline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

Status CheckRefName(const std::string& name) {
  bool ok = !name.empty() && name.front() != '/' && name.back() != '/' &&
            name.find("..") == std::string::npos && name.find("//") == std::string::npos &&
            name.find(".tmp.") == std::string::npos && name != "HEAD" &&
            !(name.size() >= 5 && name.compare(name.size() - 5, 5, ".lock") == 0) &&
            name.find_first_not_of(
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789._-/") == std::string::npos;
  if (!ok) return Status::InvalidArgument("'" + name + "' is not a valid branch or tag name");
  return Status::OK();
}

Result<std::unique_ptr<Repository>> Repository::Open(const std::string& location) {
  Result<std::unique_ptr<Storage>> storage = OpenStorage(location, false);
  if (!storage.ok()) return storage.status();
  Result<std::optional<std::string>> format = (*storage)->Get(kFormatKey);
  if (!format.ok()) return format.status();
  if (!*format)
    return Status::InvalidArgument("dataset " + location +
                                   ": not a cohort dataset (no 'format' file)");
  if (**format != kFormatLine) {
    return Status::InvalidArgument("dataset " + location + ": unsupported format '" +
                                   TrimNewline(**format) + "'");
  }
  return std::unique_ptr<Repository>(new Repository(std::move(*storage)));
}

Result<std::unique_ptr<Repository>> Repository::Create(const std::string& location,
                                                       const std::string& branch) {
  COHORT_RETURN_IF_ERROR(CheckRefName(branch));
  Result<std::unique_ptr<Storage>> storage = OpenStorage(location, true);
  if (!storage.ok()) return storage.status();
  // The format key is created exclusively. When it exists but no ref does, a
  // creator died before its first commit: finish that creation. Two creators
  // racing here both reach the first commit, whose ref swap only one wins.
  Status s = (*storage)->ReplaceIf(kFormatKey, std::nullopt, kFormatLine, {});
  if (!s.ok() && !IsConflict(s)) return s;
  if (!s.ok()) {
    Result<std::vector<std::string>> refs = (*storage)->List("refs");
    if (!refs.ok()) return refs.status();
    if (!refs->empty()) return Status::InvalidArgument("dataset " + location + " already exists");
  }
  COHORT_RETURN_IF_ERROR(
      (*storage)->Put("HEAD", std::string(kHeadRefPrefix) + "refs/heads/" + branch + "\n"));
  return std::unique_ptr<Repository>(new Repository(std::move(*storage)));
}

Result<std::optional<std::string>> Repository::ReadRef(const std::string& key) {
  Result<std::optional<std::string>> bytes = storage_->Get(key);
  if (!bytes.ok() || !*bytes) return bytes;
  std::string id = TrimNewline(**bytes);
  if (!IsObjectId(id))
    return Status::IoError("dataset " + location() + ": ref " + key + " is corrupted");
  return std::optional<std::string>(id);
}

Result<std::optional<std::string>> Repository::HeadBranch() {
  Result<std::optional<std::string>> head = storage_->Get("HEAD");
  if (!head.ok()) return head.status();
  if (!*head) return Status::IoError("dataset " + location() + ": HEAD is missing");
  std::string text = TrimNewline(**head);
  if (text.rfind(std::string(kHeadRefPrefix) + "refs/heads/", 0) != 0)
    return std::optional<std::string>();
  return std::optional<std::string>(text.substr(std::string(kHeadRefPrefix).size() + 11));
}

Result<std::string> Repository::Resolve(const std::string& ref) {
  // "NAME~N": the N-th first parent of NAME, as in git.
  const size_t tilde = ref.rfind('~');
  std::string name = tilde == std::string::npos ? ref : ref.substr(0, tilde);
  uint64_t back = 0;
  if (tilde != std::string::npos) {
    const std::string n = ref.substr(tilde + 1);
    if (n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9) {
      return Status::InvalidArgument("dataset " + location() + ": bad ref '" + ref + "'");
    }
    back = n.empty() ? 1 : std::stoull(n);
  }
  Result<std::optional<std::string>> id = ResolveName(name.empty() ? "HEAD" : name);
  if (!id.ok()) return id.status();
  if (!*id) return Status::InvalidArgument("dataset " + location() + ": unknown ref '" + ref + "'");
  std::string at = **id;
  for (uint64_t i = 0; i < back; ++i) {
    Result<CommitObject> commit = LoadCommit(at);
    if (!commit.ok()) return commit.status();
    if (commit->parent.empty()) {
      return Status::InvalidArgument("dataset " + location() + ": '" + ref +
                                     "' goes past the first commit");
    }
    at = commit->parent;
  }
  return at;
}

Result<std::optional<std::string>> Repository::ResolveName(const std::string& ref) {
  if (ref == "HEAD") {
    Result<std::optional<std::string>> branch = HeadBranch();
    if (!branch.ok()) return branch.status();
    if (*branch) {
      Result<std::optional<std::string>> id = ReadRef("refs/heads/" + **branch);
      if (id.ok() && !*id) {
        return Status::InvalidArgument("dataset " + location() + ": HEAD names branch '" +
                                       **branch + "', which does not exist");
      }
      return id;
    }
    Result<std::optional<std::string>> head = storage_->Get("HEAD");
    if (!head.ok()) return head.status();
    std::string id = TrimNewline(head->value_or(""));
    if (!IsObjectId(id)) return Status::IoError("dataset " + location() + ": HEAD is corrupted");
    return std::optional<std::string>(id);
  }
  if (IsObjectId(ref)) {
    Result<bool> exists = storage_->Exists(ObjectKey("commits", ref));
    if (!exists.ok()) return exists.status();
    if (*exists) return std::optional<std::string>(ref);
  }
  if (CheckRefName(ref).ok()) {
    for (const char* ns : {"refs/heads/", "refs/tags/"}) {
      Result<std::optional<std::string>> id = ReadRef(ns + ref);
      if (!id.ok() || *id) return id;
    }
  }
  if (ref.size() >= 4 && ref.size() < 64 && IsHex(ref)) {
    Result<std::vector<std::string>> keys = storage_->List("commits/" + ref.substr(0, 2));
    if (!keys.ok()) return keys.status();
    std::vector<std::string> matches;
    for (const std::string& key : *keys) {
      std::string id = key.substr(key.rfind('/') + 1);
      if (id.rfind(ref, 0) == 0) matches.push_back(id);
    }
    if (matches.size() > 1) {
      return Status::InvalidArgument("dataset " + location() + ": commit prefix '" + ref +
                                     "' is ambiguous");
    }
    if (matches.size() == 1) return std::optional<std::string>(matches[0]);
  }
  return std::optional<std::string>();
}

Status Repository::SetRef(const std::string& key, const std::optional<std::string>& expected,
                          const std::string& id, const std::function<void()>& while_locked) {
  std::optional<std::string> expected_bytes;
  if (expected) expected_bytes = *expected + "\n";
  Status s = storage_->ReplaceIf(key, expected_bytes, id + "\n", while_locked);
  return s.WithContext("dataset " + location());
}

Status Repository::SetHead(const std::string& content) {
  return storage_->Put("HEAD", content + "\n");
}

Result<CommitObject> Repository::LoadCommit(const std::string& id) {
  std::string context = "dataset " + location() + ", commit " + id;
  Result<std::optional<std::string>> bytes = storage_->Get(ObjectKey("commits", id));
  if (!bytes.ok()) return bytes.status().WithContext(context);
  if (!*bytes) return Status::IoError(context + ": commit object is missing");
  if (Sha256Hex(**bytes) != id)
    return Status::IoError(context + ": commit object is corrupted (SHA-256 differs)");
  Result<CommitObject> commit = DecodeCommit(**bytes);
  if (!commit.ok()) return commit.status().WithContext(context);
  return commit;
}

std::string Repository::ChunkContext(const std::string& commit_id,
                                     const std::string& chunk_id) const {
  return "dataset " + location() + ", commit " + commit_id + ", chunk " + chunk_id;
}

Result<DecodedChunk> Repository::LoadChunk(const std::string& commit_id, const ChunkRef& ref,
                                           bool check_name) {
  std::string context = ChunkContext(commit_id, ref.id);
  Result<std::optional<ObjectBytes>> bytes = storage_->GetBytes(ObjectKey("chunks", ref.id));
  if (!bytes.ok()) return bytes.status().WithContext(context);
  if (!*bytes) return Status::IoError(context + ": chunk object is missing");
  if ((*bytes)->bytes.size() != ref.stored_size) {
    return Status::IoError(context + ": chunk is truncated or resized: commit says " +
                           std::to_string(ref.stored_size) + " bytes, object has " +
                           std::to_string((*bytes)->bytes.size()));
  }
  if (check_name && Sha256Hex((*bytes)->bytes) != ref.id) {
    return Status::IoError(context +
                           ": chunk is corrupted (the SHA-256 of its bytes differs from its name)");
  }
  Result<DecodedChunk> chunk = DecodedChunk::Decode(std::move(**bytes));
  if (!chunk.ok()) return chunk.status().WithContext(context);
  if (chunk->size() != ref.num_samples) {
    return Status::IoError(context + ": chunk holds " + std::to_string(chunk->size()) +
                           " samples, commit says " + std::to_string(ref.num_samples));
  }
  return chunk;
}

Result<std::string> Repository::PutObject(const std::string& kind, const std::string& bytes) {
  std::string id = Sha256Hex(bytes);
  std::string key = ObjectKey(kind, id);
  Result<bool> exists = storage_->Exists(key);
  if (!exists.ok()) return exists.status();
  // Objects are immutable and named by content: an existing one is this one.
  if (!*exists)
    COHORT_RETURN_IF_ERROR(storage_->Put(key, bytes).WithContext("dataset " + location()));
  return id;
}

Result<std::vector<std::string>> Repository::ListRefs() { return storage_->List("refs"); }

}  // namespace cohort::data
