// HttpStorage: datasets read over HTTP(S) with GET, ranged GET and HEAD. The
// S3 backend derives from it: the reads are the same requests, plus a
// signature, and S3 adds writes and listing.
#ifndef COHORT_DATA_HTTP_STORAGE_H_
#define COHORT_DATA_HTTP_STORAGE_H_

#include <memory>
#include <string>
#include <vector>

#include "data/storage.h"
#include "http/client.h"

namespace cohort::data {

class HttpStorage : public Storage {
 public:
  // `base_url` without a trailing '/'; objects are at base_url + "/" + key.
  HttpStorage(std::string location, std::string base_url, const StorageOptions& options);

  const std::string& location() const override { return location_; }
  Result<std::optional<std::string>> Get(const std::string& path) override;
  Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) override;
  Result<std::vector<std::string>> ReadMany(const std::vector<ByteRange>& ranges) override;
  Result<bool> Exists(const std::string& path) override;
  // Plain HTTP is read-only and cannot list.
  Status Put(const std::string& path, std::string_view bytes) override;
  Result<std::vector<std::string>> List(const std::string& prefix) override;
  Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                   std::string_view bytes, const std::function<void()>& while_locked) override;

 protected:
  // A request for one object.
  http::HttpRequest Request(const std::string& method, const std::string& path) const;
  // Adds what the backend needs before sending (S3: the signature). The
  // request's url and headers are final when this is called.
  virtual void Prepare(http::HttpRequest* request) const { (void)request; }
  http::HttpClient& client() { return client_; }
  const std::string& base_url() const { return base_url_; }
  // "dataset LOC: " + what, as an IoError.
  Status Error(const std::string& what) const;

 private:
  Result<std::string> RangeResult(const http::HttpRequest& request,
                                  Result<http::HttpResponse> response, uint64_t offset,
                                  uint64_t len) const;

  std::string location_;
  std::string base_url_;
  http::HttpClient client_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_HTTP_STORAGE_H_
