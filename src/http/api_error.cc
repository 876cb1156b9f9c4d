// The error table: Status code <-> error_code <-> HTTP status.
#include "http/api_error.h"

#include <optional>

namespace cohort::http {
namespace {

struct ErrorRow {
  std::optional<Status::Code> code;  // none: a protocol answer no Status stands for
  const char* error_code;
  int http_status;
};

constexpr ErrorRow kRows[] = {
    {Status::Code::kInvalidArgument, "INVALID_PARAMETER_VALUE", 400},
    {Status::Code::kNotFound, "RESOURCE_DOES_NOT_EXIST", 404},
    {Status::Code::kAlreadyExists, "RESOURCE_ALREADY_EXISTS", 400},
    {Status::Code::kPermissionDenied, "PERMISSION_DENIED", 403},
    {Status::Code::kUnauthenticated, "UNAUTHENTICATED", 401},
    {Status::Code::kUnavailable, "TEMPORARILY_UNAVAILABLE", 503},
    {std::nullopt, "BAD_REQUEST", 400},         // the body is not the JSON asked for
    {std::nullopt, "ENDPOINT_NOT_FOUND", 404},  // no route for the path
    {std::nullopt, "NOT_IMPLEMENTED", 501},     // a feature the server was started without
    {std::nullopt, "INTERNAL_ERROR", 500},      // every other code
};

const ErrorRow* RowNamed(const std::string& error_code) {
  for (const ErrorRow& row : kRows) {
    if (error_code == row.error_code) return &row;
  }
  return nullptr;
}

}  // namespace

const char* ErrorCodeOf(Status::Code code) {
  for (const ErrorRow& row : kRows) {
    if (row.code == code) return row.error_code;
  }
  return "INTERNAL_ERROR";
}

int HttpStatusOf(const std::string& error_code) {
  const ErrorRow* row = RowNamed(error_code);
  return row == nullptr ? 500 : row->http_status;
}

Status::Code CodeOfErrorCode(const std::string& error_code) {
  const ErrorRow* row = RowNamed(error_code);
  if (row == nullptr || !row->code) return Status::Code::kInvalidArgument;
  return *row->code;
}

}  // namespace cohort::http
