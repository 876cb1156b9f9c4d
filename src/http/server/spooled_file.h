// SpooledFile: a request body the server wrote to a scratch file as it
// arrived (artifact uploads), so a large upload never sits in memory. The
// file is removed when the object goes, unless its new owner moved it away.
#ifndef COHORT_HTTP_SERVER_SPOOLED_FILE_H_
#define COHORT_HTTP_SERVER_SPOOLED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "common/fd.h"
#include "http/server/body_sink.h"

namespace cohort::http {

class SpooledFile : public BodySink {
 public:
  // A new empty file `dir`/.upload.tmp.XXXXXX: a name the artifact store
  // neither lists nor accepts for an artifact, so it cannot collide.
  static Result<std::unique_ptr<SpooledFile>> Create(const std::string& dir);
  ~SpooledFile() override;  // removes the file unless Moved()
  SpooledFile(const SpooledFile&) = delete;
  SpooledFile& operator=(const SpooledFile&) = delete;

  Status Append(std::string_view bytes) override;
  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }
  // The file was renamed elsewhere: nothing to remove.
  void Moved() { moved_ = true; }

 private:
  SpooledFile(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::string path_;
  uint64_t size_ = 0;
  bool moved_ = false;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_SPOOLED_FILE_H_
