// Spool: the requests a TrackingRun could not deliver, one JSON line each
// ({"method", "endpoint", "body"}), in a file named after the run. Appends
// are fsynced; the owner holds an exclusive flock on the file, so a second
// process replaying leftover spools never touches a live one.
#ifndef COHORT_TRACK_SPOOL_H_
#define COHORT_TRACK_SPOOL_H_

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"

namespace cohort::track {

class Spool {
 public:
  // Opens (creating) DIR/NAME.jsonl and locks it; fails when another
  // process holds it (kAlreadyExists-style InvalidArgument with the path).
  static Result<std::unique_ptr<Spool>> Open(const std::string& dir, const std::string& name);
  ~Spool();  // unlocks; removes the file when empty

  Status Append(const nlohmann::json& entry);
  // Every entry, oldest first; a torn last line (a crash mid-append) is dropped.
  Result<std::vector<nlohmann::json>> ReadAll();
  // Replaces the content with `entries` (temp file + rename).
  Status Rewrite(const std::vector<nlohmann::json>& entries);
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  Spool(std::string path, int fd, size_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  size_t size_;
};

// The names of spool files in `dir` (without .jsonl).
std::vector<std::string> ListSpools(const std::string& dir);

}  // namespace cohort::track

#endif  // COHORT_TRACK_SPOOL_H_
