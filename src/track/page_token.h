// Search page tokens: opaque to clients, an offset inside (base64 of
// {"offset": N}, as MLflow's own stores write them).
#ifndef COHORT_TRACK_PAGE_TOKEN_H_
#define COHORT_TRACK_PAGE_TOKEN_H_

#include <cstdint>
#include <string>

#include "cohort/status.h"

namespace cohort::track {

std::string EncodePageToken(int64_t offset);
// "" is offset 0; anything not made by EncodePageToken fails naming the token.
Result<int64_t> DecodePageToken(const std::string& token);

}  // namespace cohort::track

#endif  // COHORT_TRACK_PAGE_TOKEN_H_
