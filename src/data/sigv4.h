// AWS Signature Version 4 for S3 requests: the canonical request, the
// string to sign and the Authorization header, computed with OpenSSL.
#ifndef COHORT_DATA_SIGV4_H_
#define COHORT_DATA_SIGV4_H_

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort::data {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty unless temporary credentials
};

struct SigV4Request {
  std::string method;         // "GET", "PUT", ...
  std::string host;           // as the Host header carries it: "host" or "host:port"
  std::string canonical_uri;  // the path, already URI-encoded ("/bucket/a%20b")
  std::vector<std::pair<std::string, std::string>> query;    // decoded names and values
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers to sign ("range")
  std::string payload_sha256;                                // hex SHA-256 of the body
};

// The request to sign for `url` ("http://host:port/path?a=b&c=d", path and
// query already percent-encoded): host, canonical URI and decoded query.
SigV4Request SigV4RequestFor(const std::string& method, const std::string& url,
                             const std::string& payload_sha256);

// The header lines ("Name: value") to send with the request: x-amz-date,
// x-amz-content-sha256, x-amz-security-token (with a session token) and
// Authorization. `amz_date` is "YYYYMMDDTHHMMSSZ" (AmzDate).
std::vector<std::string> SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                                const std::string& region, const std::string& service,
                                const std::string& amz_date);

// The signature alone (64 hex digits), for tests against AWS's examples.
std::string SignatureV4(const SigV4Request& request, const AwsCredentials& credentials,
                        const std::string& region, const std::string& service,
                        const std::string& amz_date);

// "20130524T000000Z" for `t` (UTC).
std::string AmzDate(std::time_t t);

}  // namespace cohort::data

#endif  // COHORT_DATA_SIGV4_H_
