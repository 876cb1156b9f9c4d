// Read-only dataset storage over HTTP(S): Get is a GET, Read a GET with a
// Range header (a server that ignores Range is handled by slicing), Exists a
// HEAD; ReadMany keeps many of them in flight through http::HttpClient.
#include "data/http_storage.h"

#include "data/sigv4.h"
#include "http/client.h"
#include "http/url.h"

namespace cohort::data {

namespace {

std::string RangeHeader(uint64_t offset, uint64_t len) {
  std::string h = "Range: bytes=" + std::to_string(offset) + "-";
  if (len != kToEnd && offset + len > offset) h += std::to_string(offset + len - 1);
  return h;
}

}  // namespace

HttpStorage::HttpStorage(std::string location, std::string base_url, const StorageOptions& options)
    : location_(std::move(location)),
      base_url_(std::move(base_url)),
      client_(options.retry, options.max_in_flight) {}

http::HttpRequest HttpStorage::Request(const std::string& method, const std::string& path) const {
  http::HttpRequest r;
  r.method = method;
  r.url = base_url_;
  if (!path.empty()) {
    r.url += '/';
    r.url += http::UriEncode(path, false);
  }
  return r;
}

Status HttpStorage::Error(const std::string& what) const {
  return Status::IoError("dataset " + location_ + ": " + what);
}

Result<std::optional<std::string>> HttpStorage::Get(const std::string& path) {
  http::HttpRequest r = Request("GET", path);
  Prepare(&r);
  Result<http::HttpResponse> response = client_.Perform(r);
  if (!response.ok()) return Error(response.status().message());
  if (response->status == 404 && http::XmlErrorField(*response, "Code") == "NoSuchBucket") {
    // Not an absent object: nothing under this location can exist.
    return Error("the bucket does not exist (" + http::DescribeAnswer(r, *response) + ")");
  }
  if (response->status == 404) return std::optional<std::string>();
  if (response->status != 200) return Error(http::DescribeAnswer(r, *response));
  return std::optional<std::string>(std::move(response->body));
}

Result<std::string> HttpStorage::RangeResult(const http::HttpRequest& request,
                                             Result<http::HttpResponse> response, uint64_t offset,
                                             uint64_t len) const {
  if (!response.ok()) return Error(response.status().message());
  switch (response->status) {
    case 206:
      return std::move(response->body);
    case 200:  // the whole object: the server ignored Range
      if (offset >= response->body.size()) return std::string();
      return response->body.substr(offset, len == kToEnd ? std::string::npos : len);
    case 416:  // the object exists and ends at or before `offset`
      return std::string();
    case 404:
      return Error(request.url + ": no such object (HTTP 404)");
    default:
      return Error(http::DescribeAnswer(request, *response));
  }
}

Result<std::string> HttpStorage::Read(const std::string& path, uint64_t offset, uint64_t len) {
  Result<std::vector<std::string>> one = ReadMany({{path, offset, len}});
  if (!one.ok()) return one.status();
  return std::move((*one)[0]);
}

Result<std::vector<std::string>> HttpStorage::ReadMany(const std::vector<ByteRange>& ranges) {
  std::vector<http::HttpRequest> requests;
  requests.reserve(ranges.size());
  for (const ByteRange& range : ranges) {
    // A zero-length read still proves the object exists: ask for its first byte.
    http::HttpRequest r = Request("GET", range.path);
    r.headers.push_back(RangeHeader(range.offset, range.len == 0 ? 1 : range.len));
    Prepare(&r);
    requests.push_back(std::move(r));
  }
  std::vector<Result<http::HttpResponse>> responses = client_.PerformMany(requests);
  std::vector<std::string> out;
  out.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    Result<std::string> bytes =
        RangeResult(requests[i], std::move(responses[i]), ranges[i].offset, ranges[i].len);
    if (!bytes.ok()) return bytes.status();
    if (ranges[i].len == 0) bytes->clear();
    out.push_back(std::move(*bytes));
  }
  return out;
}

Result<bool> HttpStorage::Exists(const std::string& path) {
  http::HttpRequest r = Request("HEAD", path);
  Prepare(&r);
  Result<http::HttpResponse> response = client_.Perform(r);
  if (!response.ok()) return Error(response.status().message());
  if (response->status == 404) return false;
  if (response->status != 200) return Error(http::DescribeAnswer(r, *response));
  return true;
}

Status HttpStorage::Put(const std::string& path, std::string_view) {
  return Status::InvalidArgument("dataset " + location_ + " is read-only over HTTP (cannot write " +
                                 path + "); write through s3:// or a local directory");
}

Result<std::vector<std::string>> HttpStorage::List(const std::string& prefix) {
  return Status::InvalidArgument("dataset " + location_ +
                                 ": HTTP cannot list objects (needed to list '" + prefix +
                                 "'); use a branch or tag name or a full commit id");
}

Status HttpStorage::ReplaceIf(const std::string& path, const std::optional<std::string>&,
                              std::string_view bytes, const std::function<void()>&) {
  return Put(path, bytes);
}

Result<std::unique_ptr<Storage>> OpenHttpStorage(const std::string& url,
                                                 const StorageOptions& options) {
  const size_t host = url.find("://");
  if (host == std::string::npos || host + 3 >= url.size() || url[host + 3] == '/') {
    return Status::InvalidArgument("dataset " + url + ": expected http(s)://HOST[:PORT][/PATH]");
  }
  return std::unique_ptr<Storage>(new HttpStorage(url, url, options));
}

}  // namespace cohort::data
