// Strict parsing of a request's head.
#include "http/server/request_head.h"

#include <cctype>

namespace cohort::http {
namespace {

constexpr size_t kMaxMethodBytes = 20;

// RFC 9110 token characters (header names).
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

// A field value may hold visible characters, spaces, tabs and obs-text;
// never CR, LF or NUL.
bool IsFieldValue(std::string_view s) {
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u == '\t') continue;
    if (u < 0x20 || u == 0x7F) return false;
  }
  return true;
}

// Headers that must appear at most once: a second copy is how requests are
// smuggled past a proxy that reads the other one.
bool MustBeSingle(const std::string& name) {
  return name == "host" || name == "content-length" || name == "transfer-encoding";
}

std::optional<ServerResponse> ParseRequestLine(std::string_view line, ServerRequest* req) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return PlainError(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return PlainError(version.substr(0, 5) == "HTTP/" ? 505 : 400, "unsupported HTTP version");
  }
  req->http10 = version == "HTTP/1.0";
  if (method.empty() || method.size() > kMaxMethodBytes) return PlainError(400, "malformed method");
  for (char c : method) {
    if (!std::isupper(static_cast<unsigned char>(c))) return PlainError(400, "malformed method");
  }
  req->method = std::string(method);
  if (target.empty() || target[0] != '/') return PlainError(400, "malformed request target");
  for (char c : target) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F) return PlainError(400, "malformed request target");
  }
  size_t q = target.find('?');
  req->path = PercentDecode(std::string(target.substr(0, q)));
  if (q != std::string_view::npos) req->query = std::string(target.substr(q + 1));
  return std::nullopt;
}

}  // namespace

std::optional<ServerResponse> ParseRequestHead(std::string_view head, ServerRequest* req) {
  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  if (line.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    return PlainError(400, "malformed request line");
  }
  if (auto error = ParseRequestLine(line, req)) return error;
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    if (field.empty()) continue;
    if (field[0] == ' ' || field[0] == '\t')
      return PlainError(400, "folded header lines are refused");
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || !IsToken(field.substr(0, colon))) {
      return PlainError(400, "malformed header");
    }
    std::string_view value = TrimSpaces(field.substr(colon + 1));
    if (!IsFieldValue(value)) return PlainError(400, "malformed header value");
    std::string name = AsciiLower(field.substr(0, colon));
    auto [it, inserted] = req->headers.emplace(name, std::string(value));
    if (!inserted) {
      if (MustBeSingle(name)) return PlainError(400, "header '" + name + "' appears twice");
      it->second += ", " + std::string(value);
    }
  }
  if (req->headers.count("content-length") && req->headers.count("transfer-encoding")) {
    return PlainError(400, "a request may not carry both Content-Length and Transfer-Encoding");
  }
  return std::nullopt;
}

}  // namespace cohort::http
