// Artifacts in a dataset Storage (s3://...): keys are artifact paths.
#include <sys/mman.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include "artifacts/artifact_store.h"
#include "data/storage.h"
#include "http/url.h"

namespace cohort::artifacts {
namespace {

class StorageArtifactStore : public ArtifactStore {
 public:
  explicit StorageArtifactStore(std::unique_ptr<data::Storage> storage)
      : storage_(std::move(storage)) {
    std::error_code ec;
    std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    spool_dir_ = ec ? "/tmp" : tmp.string();
  }

  // A folder is a key prefix: "dir/" and what follows up to the next '/'.
  Result<std::vector<ArtifactEntry>> List(const std::string& dir) override {
    auto keys = storage_->List(dir);
    if (!keys.ok()) return keys.status();
    std::vector<ArtifactEntry> entries;
    std::set<std::string> dirs;
    size_t skip = dir.empty() ? 0 : dir.size() + 1;
    for (const std::string& key : *keys) {
      if (skip > 0 && key.compare(0, skip, dir + "/") != 0) continue;
      std::string rest = key.substr(skip);
      size_t slash = rest.find('/');
      if (slash != std::string::npos) {
        if (dirs.insert(rest.substr(0, slash)).second)
          entries.push_back({rest.substr(0, slash), true, 0});
        continue;
      }
      auto bytes = storage_->Get(key);  // the storage has no size query
      int64_t size = bytes.ok() && bytes->has_value() ? static_cast<int64_t>((*bytes)->size()) : 0;
      entries.push_back({rest, false, size});
    }
    return entries;
  }

  Result<std::optional<ArtifactContent>> Read(const std::string& path) override {
    auto bytes = storage_->Get(path);
    if (!bytes.ok()) return bytes.status();
    if (!bytes->has_value()) return std::optional<ArtifactContent>();
    return std::optional<ArtifactContent>(ArtifactContent{nullptr, std::move(**bytes)});
  }

  // The spooled file is mapped, not read into memory: its pages come from
  // the page cache as the upload sends them.
  Status Write(const std::string& path, http::SpooledFile* upload,
               std::string_view bytes) override {
    if (upload == nullptr || upload->size() == 0) return storage_->Put(path, bytes);
    size_t size = static_cast<size_t>(upload->size());
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, upload->fd(), 0);
    if (map == MAP_FAILED) {
      return Status::IoError("cannot map " + upload->path() + ": " + ErrnoText(errno));
    }
    Status s = storage_->Put(path, std::string_view(static_cast<const char*>(map), size));
    ::munmap(map, size);
    return s;
  }

  // A file or a folder (everything under "path/"), as MLflow's artifact
  // repositories delete either.
  Status Delete(const std::string& path) override {
    auto listed = storage_->List(path);
    std::vector<std::string> keys{path};
    if (listed.ok() && !listed->empty()) keys = std::move(*listed);
    for (const std::string& key : keys) {
      if (key != path && key.compare(0, path.size() + 1, path + "/") != 0) continue;
      COHORT_RETURN_IF_ERROR(storage_->Delete(key));
    }
    return Status::OK();
  }

  const std::string& spool_dir() const override { return spool_dir_; }

 private:
  std::unique_ptr<data::Storage> storage_;
  std::string spool_dir_;
};

}  // namespace

Result<std::unique_ptr<ArtifactStore>> OpenStorageArtifactStore(const std::string& location) {
  auto storage = data::OpenStorage(location, /*create=*/true);
  if (!storage.ok()) return storage.status();
  return std::unique_ptr<ArtifactStore>(new StorageArtifactStore(std::move(*storage)));
}

Result<std::unique_ptr<ArtifactStore>> OpenArtifactStore(const std::string& location) {
  if (location.rfind("s3://", 0) == 0 || http::IsHttpUrl(location)) {
    return OpenStorageArtifactStore(location);
  }
  const std::string file = "file://";
  return OpenLocalArtifactStore(location.rfind(file, 0) == 0 ? location.substr(file.size())
                                                             : location);
}

}  // namespace cohort::artifacts
