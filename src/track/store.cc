// Opening a tracking store from its URI.
#include "track/store.h"

#include "track/sqlite_store.h"

namespace cohort::track {

std::string DefaultStoreUri() { return "sqlite:~/.cohort/tracking.db"; }

Result<std::unique_ptr<TrackingStore>> OpenStore(const std::string& uri) {
  if (uri.rfind("sqlite:", 0) == 0) {
    std::string path = uri.substr(7);
    if (path.rfind("///", 0) == 0) path = path.substr(2);  // sqlite:///abs/path (SQLAlchemy form)
    return OpenSqliteStore(path);
  }
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0) {
    return Status::InvalidArgument("tracking store '" + uri +
                                   "': PostgreSQL is not supported by this build yet");
  }
  return Status::InvalidArgument("tracking store URI '" + uri +
                                 "' has an unknown scheme: expected sqlite:PATH");
}

}  // namespace cohort::track
