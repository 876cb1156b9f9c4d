// `cohort data gc`: removes chunk and commit objects no ref reaches, leaving
// alone whatever an open writer (lease.h) may still commit.
//
// Why this is safe against a concurrent writer: a writer puts its lease
// before any object, so each of its objects is at least as new as its lease.
// The cutoff is the oldest open lease's time (and now - min_age_s for a
// writer that opens after the leases were listed); only objects strictly
// older than the cutoff can go. Reachability is computed after the objects
// are listed, so a commit that lands meanwhile protects its chunks.
#include <algorithm>
#include <ctime>
#include <set>

#include "cohort/data.h"
#include "data/lease.h"
#include "data/repository.h"

namespace cohort::data {

namespace {

// Commit and chunk ids reachable from HEAD and every ref.
Status Reachable(Repository* repo, std::set<std::string>* ids) {
  Result<std::vector<std::string>> refs = repo->ListRefs();
  if (!refs.ok()) return refs.status();
  std::vector<std::string> pending;
  Result<std::string> head = repo->Resolve("HEAD");
  if (head.ok()) pending.push_back(*head);
  for (const std::string& key : *refs) {
    Result<std::optional<std::string>> id = repo->ReadRef(key);
    if (!id.ok()) return id.status();
    if (*id) pending.push_back(**id);
  }
  while (!pending.empty()) {
    const std::string id = pending.back();
    pending.pop_back();
    if (!ids->insert(id).second) continue;
    // A commit that cannot be read stops gc: its chunks would look unreachable.
    Result<CommitObject> commit = repo->LoadCommit(id);
    if (!commit.ok()) return commit.status().WithContext("gc stops, nothing removed");
    if (!commit->parent.empty()) pending.push_back(commit->parent);
    for (const ChunkRef& ref : commit->chunks) ids->insert(ref.id);
  }
  return Status::OK();
}

std::string IdOf(const std::string& key) { return key.substr(key.rfind('/') + 1); }

}  // namespace

Result<GcReport> CollectGarbage(const std::string& location, const GcOptions& options) {
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Storage& storage = (*repo)->storage();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  GcReport report;
  int64_t cutoff = now - options.min_age_s;
  Result<std::vector<ListedObject>> leases = storage.ListModified(kLeasePrefix);
  if (!leases.ok()) return leases.status();
  for (const ListedObject& lease : *leases) {
    if (now - lease.modified > options.lease_expiry_s) {
      report.dead_leases.push_back(lease.key);
    } else {
      report.open_leases.push_back(lease.key);
      cutoff = std::min(cutoff, lease.modified);
    }
  }
  std::vector<ListedObject> objects;
  for (const char* prefix : {"chunks", "commits"}) {
    Result<std::vector<ListedObject>> listed = storage.ListModified(prefix);
    if (!listed.ok()) return listed.status();
    objects.insert(objects.end(), listed->begin(), listed->end());
  }
  std::set<std::string> reachable;
  COHORT_RETURN_IF_ERROR(Reachable(repo->get(), &reachable));
  for (const ListedObject& o : objects) {
    if (reachable.count(IdOf(o.key))) {
      ++report.reachable;
    } else if (o.modified >= cutoff) {
      ++report.kept_recent;
    } else {
      if (!options.dry_run) COHORT_RETURN_IF_ERROR(storage.Delete(o.key));
      report.removed.push_back(o.key);
    }
  }
  for (const std::string& key : report.dead_leases) {
    if (!options.dry_run) COHORT_RETURN_IF_ERROR(storage.Delete(key));
  }
  return report;
}

}  // namespace cohort::data
