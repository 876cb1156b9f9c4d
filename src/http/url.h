// URL helpers every HTTP client and server of cohort shares.
#ifndef COHORT_HTTP_URL_H_
#define COHORT_HTTP_URL_H_

#include <string>
#include <string_view>

namespace cohort::http {

// Whether `location` is an "http://" or "https://" URL (the form every
// cohort location that may name a server shares: datasets, checkpoints,
// tracking stores).
bool IsHttpUrl(const std::string& location);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay,
// '/' stays unless `encode_slash`, everything else becomes %XX (upper case).
std::string UriEncode(std::string_view text, bool encode_slash);
// %XX sequences back to bytes.
std::string UriDecode(const std::string& text);

}  // namespace cohort::http

#endif  // COHORT_HTTP_URL_H_
