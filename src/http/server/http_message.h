// ServerRequest and ServerResponse: what `cohort server`'s handlers take and
// give, and the small helpers that read a request's target (percent-decoding,
// query strings).
#ifndef COHORT_HTTP_SERVER_HTTP_MESSAGE_H_
#define COHORT_HTTP_SERVER_HTTP_MESSAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/server/spooled_file.h"

namespace cohort::http {

struct ServerRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // percent-decoded, without the query
  std::string query;                           // raw, after '?'
  std::map<std::string, std::string> headers;  // lower-case names
  bool http10 = false;                         // HTTP/1.0 (else 1.1)
  // The body, in memory; or, for an upload the server streamed to disk
  // (HttpServerOptions::admit chose a spool folder), in `body_file`.
  std::string body;
  std::shared_ptr<SpooledFile> body_file;
  // The header's value, or "" when absent. `name` in lower case.
  std::string Header(const std::string& name) const;
};

// A response body read from an open file (artifact downloads): the server
// sends it in pieces from the file instead of holding it in memory.
struct FileBody {
  Fd fd;
  uint64_t size = 0;
};

struct ServerResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::shared_ptr<FileBody> file;  // when set, the body (then `body` is empty)
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using HttpHandler = std::function<ServerResponse(const ServerRequest&)>;

// A text/plain answer: `message` and a newline.
ServerResponse PlainError(int status, const std::string& message);
// `text` in ASCII lower case (header names, media types, host names).
std::string AsciiLower(std::string_view text);
// `text` without leading and trailing spaces and tabs.
std::string_view TrimSpaces(std::string_view text);
// The value of a hex digit, or -1.
int HexDigitValue(char c);
// Percent-decoding of a path or query component ('+' stays '+').
std::string PercentDecode(const std::string& text);
// "a=1&b=x%20y" -> {a: [1], b: ["x y"]} ('+' is a space in a query).
std::multimap<std::string, std::string> ParseQuery(const std::string& query);
const char* ReasonPhrase(int status);
// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF).
bool IsUtf8(const std::string& text);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_HTTP_MESSAGE_H_
