// Which paths may name an artifact (the proxy and the embedded store check
// the same way).
#include "artifacts/artifact_store.h"

namespace cohort::artifacts {
namespace {

constexpr size_t kMaxArtifactNameBytes = 255;  // NAME_MAX of local file systems

}  // namespace

Status CheckArtifactPath(const std::string& what, const std::string& path) {
  const Status invalid = Status::InvalidArgument("Invalid " + what + " '" + path + "'");
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return invalid;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return invalid;
    if (part.size() > kMaxArtifactNameBytes) {
      return Status::InvalidArgument(invalid.message() + ": a name is longer than " +
                                     std::to_string(kMaxArtifactNameBytes) + " bytes");
    }
    if (IsScratchName(part)) {
      return Status::InvalidArgument(invalid.message() +
                                     ": a name containing '.tmp.' or ending in '.lock' is "
                                     "reserved for the store's scratch files");
    }
    start = slash + 1;
  }
  return Status::OK();
}

}  // namespace cohort::artifacts
