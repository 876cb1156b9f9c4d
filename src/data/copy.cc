// CopyDataset: a dataset copied between storages, objects first and refs
// last. Objects are read in batches through ReadMany, so a remote source has
// many requests in flight.
#include <algorithm>

#include "cohort/data.h"
#include "data/hash.h"
#include "data/storage.h"

namespace cohort::data {

namespace {

constexpr size_t kBatch = 16;  // objects fetched per ReadMany

// Objects first (chunks before the commits naming them), then format and
// HEAD, then refs; a partial copy has no ref.
int CopyRank(const std::string& key) {
  if (key.rfind("refs/", 0) == 0) return 4;
  if (key == "HEAD") return 3;
  if (key == "format") return 2;
  if (key.rfind("commits/", 0) == 0) return 1;
  return 0;
}

// Chunk and commit objects are named by their SHA-256.
Status CheckObject(const std::string& source, const std::string& key, const std::string& bytes) {
  if (key.rfind("chunks/", 0) != 0 && key.rfind("commits/", 0) != 0) return Status::OK();
  const std::string id = key.substr(key.rfind('/') + 1);
  if (Sha256Hex(bytes) == id) return Status::OK();
  return Status::IoError("dataset " + source + ": object " + key +
                         " does not match its SHA-256 (corrupted); run cohort data verify");
}

}  // namespace

Result<CopyResult> CopyDataset(const std::string& source, const std::string& destination,
                               const CopyOptions& options) {
  Result<std::unique_ptr<Storage>> src = OpenStorage(source, false);
  if (!src.ok()) return src.status();
  Result<bool> is_dataset = (*src)->Exists("format");
  if (!is_dataset.ok()) return is_dataset.status();
  if (!*is_dataset) return Status::InvalidArgument("dataset " + source + ": not a cohort dataset");
  Result<std::vector<std::string>> keys = (*src)->List("");
  if (!keys.ok()) return keys.status();
  // A writer's lease belongs to the source's writers, not to the copy.
  std::erase_if(*keys, [](const std::string& key) { return key.rfind("leases/", 0) == 0; });
  std::stable_sort(keys->begin(), keys->end(), [](const std::string& a, const std::string& b) {
    return CopyRank(a) < CopyRank(b);
  });

  Result<std::unique_ptr<Storage>> dst = OpenStorage(destination, true);
  if (!dst.ok()) return dst.status();
  Result<std::vector<std::string>> dst_refs = (*dst)->List("refs");
  if (!dst_refs.ok()) return dst_refs.status();
  if (!dst_refs->empty()) {
    return Status::InvalidArgument("destination " + destination + " already holds a dataset (" +
                                   dst_refs->front() + "); copy into an empty location");
  }

  CopyResult result;
  CopyProgress progress;
  progress.objects_total = keys->size();
  for (size_t begin = 0; begin < keys->size();) {
    // A batch never mixes objects with the keys after them: refs go strictly last.
    size_t end = begin + 1;
    while (end < keys->size() && end - begin < kBatch && CopyRank((*keys)[end]) < 2 &&
           CopyRank((*keys)[begin]) < 2)
      ++end;
    std::vector<ByteRange> wanted;
    for (size_t i = begin; i < end; ++i) {
      const std::string& key = (*keys)[i];
      Result<bool> there =
          CopyRank(key) == 0 || CopyRank(key) == 1 ? (*dst)->Exists(key) : Result<bool>(false);
      if (!there.ok()) return there.status();
      if (*there) {
        ++result.skipped;
      } else {
        wanted.push_back({key, 0, kToEnd});
      }
    }
    Result<std::vector<std::string>> bytes = (*src)->ReadMany(wanted);
    if (!bytes.ok()) return bytes.status();
    for (size_t i = 0; i < wanted.size(); ++i) {
      COHORT_RETURN_IF_ERROR(CheckObject(source, wanted[i].path, (*bytes)[i]));
      COHORT_RETURN_IF_ERROR((*dst)->Put(wanted[i].path, (*bytes)[i]));
      ++result.copied;
      result.bytes += (*bytes)[i].size();
    }
    progress.objects_done = end;
    progress.bytes_copied = result.bytes;
    if (options.on_progress) options.on_progress(progress);
    begin = end;
  }
  return result;
}

}  // namespace cohort::data
