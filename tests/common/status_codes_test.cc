// The error kinds are Status codes, and the one table maps each to its
// error_code and HTTP status and back.
#include <gtest/gtest.h>

#include "cohort/status.h"
#include "http/api_error.h"

namespace cohort {
namespace {

TEST(StatusCodes, KindsAreCodesNotText) {
  Status missing = Status::NotFound("Run with id=x not found");
  EXPECT_TRUE(missing.IsNotFound());
  EXPECT_FALSE(missing.IsInvalidArgument());
  EXPECT_EQ(missing.message(), "Run with id=x not found");
  EXPECT_EQ(missing.ToString(), "not found: Run with id=x not found");
  EXPECT_TRUE(Status::AlreadyExists("x").IsAlreadyExists());
  EXPECT_TRUE(Status::PermissionDenied("x").IsPermissionDenied());
  EXPECT_TRUE(Status::Unavailable("x").IsUnavailable());
  EXPECT_TRUE(Status::Aborted("x").IsAborted());
  EXPECT_EQ(Status::Aborted("x").ToString(), "aborted: x");
  // A message that reads like a kind is not that kind.
  EXPECT_FALSE(Status::InvalidArgument("not found: x").IsNotFound());
}

TEST(StatusCodes, OneTableBetweenCodesAndTheWire) {
  struct Row {
    Status::Code code;
    const char* error_code;
    int http_status;
  };
  const Row rows[] = {
      {Status::Code::kInvalidArgument, "INVALID_PARAMETER_VALUE", 400},
      {Status::Code::kNotFound, "RESOURCE_DOES_NOT_EXIST", 404},
      {Status::Code::kAlreadyExists, "RESOURCE_ALREADY_EXISTS", 400},
      {Status::Code::kPermissionDenied, "PERMISSION_DENIED", 403},
      {Status::Code::kUnauthenticated, "UNAUTHENTICATED", 401},
      {Status::Code::kUnavailable, "TEMPORARILY_UNAVAILABLE", 503},
  };
  for (const Row& row : rows) {
    EXPECT_STREQ(http::ErrorCodeOf(row.code), row.error_code);
    EXPECT_EQ(http::HttpStatusOf(row.error_code), row.http_status);
    EXPECT_EQ(http::CodeOfErrorCode(row.error_code), row.code);
  }
  EXPECT_STREQ(http::ErrorCodeOf(Status::Code::kIoError), "INTERNAL_ERROR");
  EXPECT_EQ(http::HttpStatusOf("INTERNAL_ERROR"), 500);
  EXPECT_EQ(http::HttpStatusOf("ENDPOINT_NOT_FOUND"), 404);
  EXPECT_EQ(http::HttpStatusOf("NOT_IMPLEMENTED"), 501);
  EXPECT_EQ(http::HttpStatusOf("NO_SUCH_NAME"), 500);
  // Answers no Status stands for are the caller's mistakes.
  EXPECT_EQ(http::CodeOfErrorCode("BAD_REQUEST"), Status::Code::kInvalidArgument);
  EXPECT_EQ(http::CodeOfErrorCode("ENDPOINT_NOT_FOUND"), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace cohort
