// History and maintenance: log, diff, checkout, branches and tags, verify.
#include <algorithm>
#include <map>
#include <set>

#include "data/hash.h"
#include "data/repository.h"

namespace cohort::data {

namespace {

// A 128-bit digest per sample id: diff compares digests, so its memory is
// 16 bytes a sample however large the samples are.
using DigestsById = std::map<uint64_t, std::pair<uint64_t, uint64_t>>;

// Digests of the records in the chunks of `commit` whose ids are not in `skip`.
Status CollectDigests(Repository& repo, const std::string& commit_id, const CommitObject& commit,
                      const std::set<std::string>& skip, DigestsById* out) {
  for (const ChunkRef& ref : commit.chunks) {
    if (skip.count(ref.id)) continue;
    Result<DecodedChunk> chunk = repo.LoadChunk(commit_id, ref);
    if (!chunk.ok()) return chunk.status();
    for (size_t i = 0; i < chunk->size(); ++i) (*out)[chunk->id(i)] = Digest128(chunk->record(i));
  }
  return Status::OK();
}

std::set<std::string> ChunkIds(const CommitObject& commit) {
  std::set<std::string> ids;
  for (const ChunkRef& ref : commit.chunks) ids.insert(ref.id);
  return ids;
}

Status CreateRef(const std::string& location, const std::string& ns, const std::string& name,
                 const std::string& ref) {
  COHORT_RETURN_IF_ERROR(CheckRefName(name));
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> id = (*repo)->Resolve(ref);
  if (!id.ok()) return id.status();
  Status s = (*repo)->SetRef(ns + name, std::nullopt, *id);
  if (IsConflict(s))
    return Status::InvalidArgument("dataset " + location + ": " + ns + name + " already exists");
  return s;
}

// Checks one chunk object completely: present, the size the commit says,
// named by its SHA-256, checksum, and every record decodes under the schema.
std::string VerifyChunk(Repository& repo, const std::string& commit_id, const CommitObject& commit,
                        const ChunkRef& ref) {
  Result<DecodedChunk> chunk = repo.LoadChunk(commit_id, ref, /*check_name=*/true);
  if (!chunk.ok()) return chunk.status().message();
  for (size_t i = 0; i < chunk->size(); ++i) {
    Result<Sample> sample = DecodeRecord(commit.schema, chunk->record(i));
    if (!sample.ok()) {
      return repo.ChunkContext(commit_id, ref.id) + ": sample id " + std::to_string(chunk->id(i)) +
             ": " + sample.status().message();
    }
  }
  return "";
}

}  // namespace

Result<std::string> ResolveRef(const std::string& location, const std::string& ref) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  return (*repo)->Resolve(ref);
}

Result<std::vector<CommitInfo>> Log(const std::string& location, const std::string& ref) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> id = (*repo)->Resolve(ref);
  if (!id.ok()) return id.status();
  std::vector<CommitInfo> log;
  for (std::string next = *id; !next.empty();) {
    Result<CommitObject> commit = (*repo)->LoadCommit(next);
    if (!commit.ok()) return commit.status();
    log.push_back(CommitInfoOf(next, *commit));
    next = commit->parent;
  }
  return log;
}

Result<DiffResult> Diff(const std::string& location, const std::string& from,
                        const std::string& to) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> a_id = (*repo)->Resolve(from);
  if (!a_id.ok()) return a_id.status();
  Result<std::string> b_id = (*repo)->Resolve(to);
  if (!b_id.ok()) return b_id.status();
  Result<CommitObject> a = (*repo)->LoadCommit(*a_id);
  if (!a.ok()) return a.status();
  Result<CommitObject> b = (*repo)->LoadCommit(*b_id);
  if (!b.ok()) return b.status();
  // A chunk both commits reference holds the same samples in both (sample ids
  // are unique within a commit), so only the other chunks are read.
  std::set<std::string> a_chunks = ChunkIds(*a), b_chunks = ChunkIds(*b);
  DigestsById a_only, b_only;
  COHORT_RETURN_IF_ERROR(CollectDigests(**repo, *a_id, *a, b_chunks, &a_only));
  COHORT_RETURN_IF_ERROR(CollectDigests(**repo, *b_id, *b, a_chunks, &b_only));
  DiffResult diff;
  for (const auto& [id, digest] : a_only) {
    auto it = b_only.find(id);
    if (it == b_only.end()) {
      diff.removed.push_back(id);
    } else if (it->second != digest) {
      diff.changed.push_back(id);
    }
  }
  for (const auto& [id, digest] : b_only) {
    if (!a_only.count(id)) diff.added.push_back(id);
  }
  return diff;
}

Status Checkout(const std::string& location, const std::string& ref) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> id = (*repo)->Resolve(ref);
  if (!id.ok()) return id.status();
  if (CheckRefName(ref).ok()) {
    Result<std::optional<std::string>> branch = (*repo)->ReadRef("refs/heads/" + ref);
    if (!branch.ok()) return branch.status();
    if (*branch) return (*repo)->SetHead("ref: refs/heads/" + ref);
  }
  return (*repo)->SetHead(*id);
}

Status CreateBranch(const std::string& location, const std::string& name, const std::string& ref) {
  return CreateRef(location, "refs/heads/", name, ref);
}

Status CreateTag(const std::string& location, const std::string& name, const std::string& ref) {
  return CreateRef(location, "refs/tags/", name, ref);
}

Result<VerifyReport> Verify(const std::string& location) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::vector<std::string>> refs = (*repo)->ListRefs();
  if (!refs.ok()) return refs.status();
  VerifyReport report;
  std::vector<std::string> pending;
  Result<std::string> head = (*repo)->Resolve("HEAD");
  if (head.ok())
    pending.push_back(*head);
  else
    report.problems.push_back(head.status().message());
  for (const std::string& key : *refs) {
    Result<std::optional<std::string>> id = (*repo)->ReadRef(key);
    if (!id.ok())
      report.problems.push_back(id.status().message());
    else if (*id)
      pending.push_back(**id);
  }
  std::set<std::string> seen_commits, seen_chunks;
  while (!pending.empty()) {
    std::string id = pending.back();
    pending.pop_back();
    if (!seen_commits.insert(id).second) continue;
    Result<CommitObject> commit = (*repo)->LoadCommit(id);
    if (!commit.ok()) {
      report.problems.push_back(commit.status().message());
      continue;
    }
    ++report.commits;
    if (!commit->parent.empty()) pending.push_back(commit->parent);
    for (const ChunkRef& ref : commit->chunks) {
      if (!seen_chunks.insert(ref.id).second) continue;
      ++report.chunks;
      report.bytes += ref.stored_size;
      std::string problem = VerifyChunk(**repo, id, *commit, ref);
      if (!problem.empty()) report.problems.push_back(problem);
    }
  }
  return report;
}

}  // namespace cohort::data
