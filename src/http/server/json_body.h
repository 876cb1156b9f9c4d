// A request's JSON body parsed without exceptions or unbounded recursion:
// nlohmann's SAX parser builds the document, so a number out of range, bad
// UTF-8, a syntax error or nesting past the limit is an error value naming
// the field and byte, not a throw (or, for deep nesting, a stack overflow
// later, when the document is printed or destroyed).
#ifndef COHORT_HTTP_SERVER_JSON_BODY_H_
#define COHORT_HTTP_SERVER_JSON_BODY_H_

#include <string_view>

#include <nlohmann/json.hpp>

#include "cohort/status.h"

namespace cohort::http {

// Containers (objects and arrays) nested deeper than this are refused;
// MLflow's requests nest four deep.
inline constexpr int kMaxJsonDepth = 64;

// The document in `text`; errors start "Malformed JSON request body: " and
// end "(field 'metrics[2].value', byte 57)" where a field is known.
Result<nlohmann::json> ParseJsonBody(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_JSON_BODY_H_
