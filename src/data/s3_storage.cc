// Dataset storage in an S3-compatible object store: path-style requests
// (ENDPOINT/BUCKET/PREFIX/KEY) signed with SigV4; reads as in HttpStorage,
// PutObject for Put, ListObjects for List, and conditional PutObject for
// ReplaceIf.
//
// ReplaceIf reads the key and its ETag, compares the content with what the
// caller expects, then PUTs with If-Match: ETAG (or If-None-Match: * when the
// key must be absent); 412 or 409 means another writer got there first. AWS
// S3 (since 2024), MinIO and Ceph enforce these headers, which makes the swap
// atomic. Servers that ignore them (plain s3rver) still get the comparison,
// so a stale writer is refused, but two writers racing inside the window
// between the GET and the PUT can both succeed: such stores give no
// primitive that could close it (docs/dataset-format.md, "Storage").
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "data/hash.h"
#include "data/http_storage.h"
#include "data/sigv4.h"
#include "http/client.h"
#include "http/url.h"

namespace cohort::data {

namespace {

std::string XmlUnescape(const std::string& s) {
  static const std::pair<const char*, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (s.compare(i, std::strlen(entity), entity) == 0) {
        out.push_back(c);
        i += std::strlen(entity) - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(s[i]);
  }
  return out;
}

// The text of every <tag>...</tag> in `xml`, in order.
std::vector<std::string> XmlValues(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    at += open.size();
    size_t end = xml.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(XmlUnescape(xml.substr(at, end - at)));
    at = end;
  }
  return out;
}

// "2026-11-23T16:40:05.000Z" -> seconds since the epoch; INT64_MAX when
// unreadable, so an object of unknown age is never taken for an old one.
int64_t ParseIsoTime(const std::string& text) {
  std::tm tm{};
  if (strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return INT64_MAX;
  return static_cast<int64_t>(timegm(&tm));
}

// endpoint/bucket[/prefix]. Built by appending: GCC 12's -Wrestrict misfires on
// `"/" + std::string` chains inlined into a constructor's initializer list.
std::string ObjectBaseUrl(const std::string& endpoint, const std::string& bucket,
                          const std::string& prefix) {
  std::string url = endpoint;
  url.append("/").append(bucket);
  if (!prefix.empty()) url.append("/").append(http::UriEncode(prefix, false));
  return url;
}

class S3Storage : public HttpStorage {
 public:
  S3Storage(std::string location, std::string endpoint, std::string bucket, std::string prefix,
            AwsCredentials credentials, std::string region, const StorageOptions& options)
      : HttpStorage(location, ObjectBaseUrl(endpoint, bucket, prefix), options),
        bucket_url_(endpoint + "/" + bucket),
        prefix_(std::move(prefix)),
        credentials_(std::move(credentials)),
        region_(std::move(region)) {}

  Status Put(const std::string& path, std::string_view bytes) override {
    return PutWith(path, bytes, "");
  }

  Status Delete(const std::string& path) override {
    http::HttpRequest r = Request("DELETE", path);
    Prepare(&r);
    Result<http::HttpResponse> response = client().Perform(r);
    if (!response.ok()) return Error(response.status().message());
    if (response->status != 204 && response->status != 200 && response->status != 404) {
      return Error(http::DescribeAnswer(r, *response));
    }
    return Status::OK();
  }

  Result<std::vector<std::string>> List(const std::string& prefix) override {
    Result<std::vector<ListedObject>> listed = ListModified(prefix);
    if (!listed.ok()) return listed.status();
    std::vector<std::string> keys;
    for (ListedObject& o : *listed) keys.push_back(std::move(o.key));
    return keys;
  }

  Result<std::vector<ListedObject>> ListModified(const std::string& prefix) override {
    // Keys under `prefix` as a directory: "refs" lists "refs/...", not "refsX".
    std::string full = prefix_.empty() ? "" : prefix_ + "/";
    if (!prefix.empty()) full += prefix + "/";
    // ListObjects (version 1) paged by `marker`, the last key seen: every
    // S3-compatible store has it, while version 2's continuation tokens fail
    // in s3rver on current Node (it encrypts them with DES, which OpenSSL 3
    // no longer offers).
    std::vector<ListedObject> keys;
    for (std::string marker;;) {
      http::HttpRequest r;
      r.url = bucket_url_ + "?prefix=" + http::UriEncode(full, true);
      if (!marker.empty()) r.url += "&marker=" + http::UriEncode(marker, true);
      Prepare(&r);
      Result<http::HttpResponse> response = client().Perform(r);
      if (!response.ok()) return Error(response.status().message());
      if (response->status != 200) return Error(http::DescribeAnswer(r, *response));
      std::vector<std::string> page = XmlValues(response->body, "Key");
      // Each <Contents> holds one <Key> and one <LastModified>, in that order.
      std::vector<std::string> times = XmlValues(response->body, "LastModified");
      if (times.size() != page.size())
        return Error(http::DescribeAnswer(r, *response) + ": a listing without LastModified times");
      for (size_t i = 0; i < page.size(); ++i) {
        keys.push_back({prefix_.empty() ? page[i] : page[i].substr(prefix_.size() + 1),
                        ParseIsoTime(times[i])});
      }
      std::vector<std::string> truncated = XmlValues(response->body, "IsTruncated");
      if (page.empty() || truncated.empty() || truncated[0] != "true") break;
      marker = page.back();
    }
    std::sort(keys.begin(), keys.end(),
              [](const ListedObject& a, const ListedObject& b) { return a.key < b.key; });
    return keys;
  }

  Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                   std::string_view bytes, const std::function<void()>& while_locked) override {
    http::HttpRequest get = Request("GET", path);
    Prepare(&get);
    Result<http::HttpResponse> current = client().Perform(get);
    if (!current.ok()) return Error(current.status().message());
    if (current->status != 200 && current->status != 404)
      return Error(http::DescribeAnswer(get, *current));
    std::optional<std::string> found;
    if (current->status == 200) found = current->body;
    if (found != expected) {
      return ConflictError(path + " changed: expected " + QuoteContent(expected) + ", found " +
                           QuoteContent(found));
    }
    if (while_locked) while_locked();
    return PutWith(path, bytes,
                   found ? "If-Match: " + current->Header("etag") : "If-None-Match: *");
  }

 protected:
  void Prepare(http::HttpRequest* r) const override {
    SigV4Request s = SigV4RequestFor(r->method, r->url, Sha256Hex(r->body));
    for (std::string& h : SignV4(s, credentials_, region_, "s3", AmzDate(std::time(nullptr))))
      r->headers.push_back(std::move(h));
  }

 private:
  Status PutWith(const std::string& path, std::string_view bytes, const std::string& condition) {
    http::HttpRequest r = Request("PUT", path);
    r.body.assign(bytes);
    if (!condition.empty()) r.headers.push_back(condition);
    Prepare(&r);
    Result<http::HttpResponse> response = client().Perform(r);
    if (!response.ok()) return Error(response.status().message());
    if (response->status == 412 || response->status == 409) {
      return ConflictError(path + " changed while it was being replaced (" +
                           http::DescribeAnswer(r, *response) + ")");
    }
    if (response->status != 200) return Error(http::DescribeAnswer(r, *response));
    return Status::OK();
  }

  std::string bucket_url_;
  std::string prefix_;
  AwsCredentials credentials_;
  std::string region_;
};

}  // namespace

Result<std::unique_ptr<Storage>> OpenS3Storage(const std::string& url,
                                               const StorageOptions& options) {
  if (url.rfind("s3://", 0) != 0) return Status::InvalidArgument("not an s3:// location: " + url);
  std::string rest = url.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t slash = rest.find('/');
  std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket.empty()) return Status::InvalidArgument("dataset " + url + ": no bucket name");
  if (options.s3_access_key.empty() || options.s3_secret_key.empty()) {
    return Status::InvalidArgument("dataset " + url +
                                   ": no S3 credentials (set AWS_ACCESS_KEY_ID and "
                                   "AWS_SECRET_ACCESS_KEY)");
  }
  std::string region = options.s3_region.empty() ? "us-east-1" : options.s3_region;
  std::string endpoint =
      options.s3_endpoint.empty() ? "https://s3." + region + ".amazonaws.com" : options.s3_endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  AwsCredentials credentials{options.s3_access_key, options.s3_secret_key,
                             options.s3_session_token};
  return std::unique_ptr<Storage>(new S3Storage("s3://" + rest, endpoint, bucket, prefix,
                                                std::move(credentials), region, options));
}

}  // namespace cohort::data
