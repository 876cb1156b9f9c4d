// ArtifactStore: where the artifact proxy (/api/2.0/mlflow-artifacts) keeps
// files. A local folder is walked one component at a time without following
// symlinks (a link inside the root, to anywhere, is never read, listed,
// written through or deleted through); other locations (s3://) go through
// the dataset storage layer. Uploads arrive as files the HTTP server spooled,
// so a large one is never held in memory.
#ifndef COHORT_ARTIFACTS_ARTIFACT_STORE_H_
#define COHORT_ARTIFACTS_ARTIFACT_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "http/server/http_message.h"

namespace cohort::artifacts {

struct ArtifactEntry {
  std::string name;
  bool is_dir = false;
  int64_t size = 0;  // files only
};

// An artifact's bytes: an open file (local), or bytes in memory.
struct ArtifactContent {
  std::shared_ptr<http::FileBody> file;
  std::string bytes;
};

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;

  // Paths are relative, '/'-separated, already checked (CheckArtifactPath).
  // What is directly in folder `dir` ("" = the root), sorted by name; none
  // when there is no such folder.
  virtual Result<std::vector<ArtifactEntry>> List(const std::string& dir) = 0;
  // The file at `path`, or nullopt when there is none.
  virtual Result<std::optional<ArtifactContent>> Read(const std::string& path) = 0;
  // Stores `upload` (a spooled body, moved into place where it can be) or,
  // when it is null, `bytes`, as the file at `path`.
  virtual Status Write(const std::string& path, http::SpooledFile* upload,
                       std::string_view bytes) = 0;
  // Removes the file or the folder (all of it) at `path`; absent is no error.
  virtual Status Delete(const std::string& path) = 0;
  // The folder where the HTTP server spools uploads for Write.
  virtual const std::string& spool_dir() const = 0;
};

// A local folder (created if missing; "file://" optional), or any location
// the dataset storage opens (s3://bucket/prefix).
Result<std::unique_ptr<ArtifactStore>> OpenArtifactStore(const std::string& location);
Result<std::unique_ptr<ArtifactStore>> OpenLocalArtifactStore(const std::string& dir);
Result<std::unique_ptr<ArtifactStore>> OpenStorageArtifactStore(const std::string& location);

// OK when `path` can name an artifact: relative, without "." or ".." or
// empty components, no component longer than NAME_MAX or named like the
// stores' scratch and lock files (it would never be listed). Else
// InvalidArgument "Invalid <what> '<path>'" and, where it helps, why.
Status CheckArtifactPath(const std::string& what, const std::string& path);

// Whether `name` (one path component) is how the stores name their scratch
// and lock files ("x.tmp.ABC123", "ref.lock"; data/local_storage.cc):
// such names are neither listed nor accepted for an artifact.
bool IsScratchName(std::string_view name);

}  // namespace cohort::artifacts

#endif  // COHORT_ARTIFACTS_ARTIFACT_STORE_H_
