// Opening a tracking store from its URI.
#include "track/store.h"

#include "track/postgres_store.h"
#include "track/sqlite_store.h"

namespace cohort::track {

std::string DefaultStoreUri() { return "sqlite:~/.cohort/tracking.db"; }

std::string RedactStoreUri(const std::string& uri) {
  size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return uri;
  size_t authority = scheme + 3;
  size_t end = uri.find_first_of("/?", authority);
  if (end == std::string::npos) end = uri.size();
  std::string out = uri.substr(0, authority);
  size_t at = uri.rfind('@', end);
  if (at != std::string::npos && at >= authority) {
    size_t colon = uri.find(':', authority);
    out += uri.substr(authority, (colon < at ? colon : at) - authority) + uri.substr(at, end - at);
  } else {
    out += uri.substr(authority, end - authority);
  }
  size_t query = uri.find('?', end);
  out += uri.substr(end, (query == std::string::npos ? uri.size() : query) - end);
  if (query == std::string::npos) return out;
  char separator = '?';
  size_t start = query + 1;
  while (start <= uri.size()) {
    size_t amp = uri.find('&', start);
    if (amp == std::string::npos) amp = uri.size();
    std::string item = uri.substr(start, amp - start);
    if (!item.empty() && item.rfind("password=", 0) != 0) {
      out += separator + item;
      separator = '&';
    }
    start = amp + 1;
  }
  return out;
}

Result<std::unique_ptr<TrackingStore>> OpenStore(const std::string& uri) {
  if (uri.rfind("sqlite:", 0) == 0) {
    std::string path = uri.substr(7);
    if (path.rfind("///", 0) == 0) path = path.substr(2);  // sqlite:///abs/path (SQLAlchemy form)
    return OpenSqliteStore(path);
  }
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0) {
    return OpenPostgresStore(uri);
  }
  return Status::InvalidArgument("tracking store URI '" + RedactStoreUri(uri) +
                                 "' has an unknown scheme: expected sqlite:PATH or"
                                 " postgresql://USER@HOST:PORT/DB");
}

}  // namespace cohort::track
