// AWS Signature Version 4 (header-based, as S3 documents it).
#include "data/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

#include "data/hash.h"
#include "http/url.h"

namespace cohort::data {

namespace {

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Every header that is signed, lower-case names, sorted by name.
std::vector<std::pair<std::string, std::string>> SignedHeaders(const SigV4Request& r,
                                                               const AwsCredentials& creds,
                                                               const std::string& amz_date) {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("host", r.host);
  h.emplace_back("x-amz-content-sha256", r.payload_sha256);
  h.emplace_back("x-amz-date", amz_date);
  if (!creds.session_token.empty()) h.emplace_back("x-amz-security-token", creds.session_token);
  for (const auto& [name, value] : r.headers) h.emplace_back(Lower(name), Trim(value));
  std::sort(h.begin(), h.end());
  return h;
}

std::string CanonicalQuery(const SigV4Request& r) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [name, value] : r.query)
    q.emplace_back(http::UriEncode(name, true), http::UriEncode(value, true));
  std::sort(q.begin(), q.end());
  std::string out;
  for (const auto& [name, value] : q) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

}  // namespace

SigV4Request SigV4RequestFor(const std::string& method, const std::string& url,
                             const std::string& payload_sha256) {
  SigV4Request s;
  s.method = method;
  s.payload_sha256 = payload_sha256;
  const size_t scheme = url.find("://");
  const size_t host_at = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t query_at = url.find('?', host_at);
  const size_t path_at = std::min(url.find('/', host_at), query_at);
  s.host = url.substr(host_at, path_at - host_at);
  s.canonical_uri = path_at == query_at ? "/" : url.substr(path_at, query_at - path_at);
  if (query_at == std::string::npos) return s;
  const std::string q = url.substr(query_at + 1);
  for (size_t at = 0; at < q.size();) {
    const size_t amp = std::min(q.find('&', at), q.size());
    const std::string pair = q.substr(at, amp - at);
    const size_t eq = pair.find('=');
    s.query.emplace_back(http::UriDecode(pair.substr(0, eq)),
                         eq == std::string::npos ? "" : http::UriDecode(pair.substr(eq + 1)));
    at = amp + 1;
  }
  return s;
}

std::string AmzDate(std::time_t t) {
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string SignatureV4(const SigV4Request& request, const AwsCredentials& credentials,
                        const std::string& region, const std::string& service,
                        const std::string& amz_date) {
  const auto headers = SignedHeaders(request, credentials, amz_date);
  std::string canonical_headers, signed_names;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    signed_names += (signed_names.empty() ? "" : ";") + name;
  }
  const std::string canonical = request.method + "\n" + request.canonical_uri + "\n" +
                                CanonicalQuery(request) + "\n" + canonical_headers + "\n" +
                                signed_names + "\n" + request.payload_sha256;
  const std::string day = amz_date.substr(0, 8);
  const std::string scope = day + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical);
  std::string key = Hmac("AWS4" + credentials.secret_key, day);
  key = Hmac(key, region);
  key = Hmac(key, service);
  key = Hmac(key, "aws4_request");
  return Hex(Hmac(key, to_sign));
}

std::vector<std::string> SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                                const std::string& region, const std::string& service,
                                const std::string& amz_date) {
  std::string signed_names;
  for (const auto& [name, value] : SignedHeaders(request, credentials, amz_date))
    signed_names += (signed_names.empty() ? "" : ";") + name;
  std::vector<std::string> out = {"x-amz-date: " + amz_date,
                                  "x-amz-content-sha256: " + request.payload_sha256};
  if (!credentials.session_token.empty())
    out.push_back("x-amz-security-token: " + credentials.session_token);
  out.push_back("Authorization: AWS4-HMAC-SHA256 Credential=" + credentials.access_key + "/" +
                amz_date.substr(0, 8) + "/" + region + "/" + service +
                "/aws4_request, SignedHeaders=" + signed_names +
                ", Signature=" + SignatureV4(request, credentials, region, service, amz_date));
  return out;
}

}  // namespace cohort::data
