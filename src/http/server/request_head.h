// The head of an HTTP/1.x request (request line and header fields) parsed
// strictly: what a smuggling or confused proxy could read two ways (two
// Content-Lengths, Content-Length with Transfer-Encoding, folded lines, bare
// CR or LF, NUL) is refused.
#ifndef COHORT_HTTP_SERVER_REQUEST_HEAD_H_
#define COHORT_HTTP_SERVER_REQUEST_HEAD_H_

#include <optional>
#include <string_view>

#include "http/server/http_message.h"

namespace cohort::http {

// Fills `request` (method, path, query, headers, http10) from `head`, the
// bytes before the blank line. nullopt when it parsed; else the error to
// answer before closing the connection.
std::optional<ServerResponse> ParseRequestHead(std::string_view head, ServerRequest* request);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_REQUEST_HEAD_H_
