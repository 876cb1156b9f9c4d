// What the server reads out of a request, refused with a message naming the
// field instead of an exception (issue 25 item 5): JSON bodies (depth,
// numbers out of range, bad UTF-8), integers of any size, query strings, and
// the head itself (smuggling-prone forms).
#include <gtest/gtest.h>

#include <string>

#include "http/server/json_body.h"
#include "http/server/request_head.h"
#include "track/request_fields.h"

namespace cohort::server {
namespace {

std::string ErrorOf(std::string_view text) {
  auto parsed = http::ParseJsonBody(text);
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(JsonBody, ParsesWhatNlohmannParses) {
  auto parsed = http::ParseJsonBody(
      R"({"a": [1, -2, 3.5, "x", true, null, {"b": {}}], "c": 18446744073709551615})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed,
            nlohmann::json::parse(
                R"({"a": [1, -2, 3.5, "x", true, null, {"b": {}}], "c": 18446744073709551615})"));
  auto duplicate = http::ParseJsonBody(R"({"k": 1, "k": 2})");
  ASSERT_TRUE(duplicate.ok());
  EXPECT_EQ((*duplicate)["k"], 2);  // the last one, as nlohmann::json::parse
}

TEST(JsonBody, ErrorsNameTheFieldAndByte) {
  EXPECT_EQ(ErrorOf(R"({"metrics": [{"key": "m"}, {"value": 1e999}]})"),
            "Malformed JSON request body: number overflow parsing '1e999' "
            "(field 'metrics[1].value', byte 42)");
  EXPECT_EQ(ErrorOf("{\"name\": \"\xff\"}"),
            "Malformed JSON request body: parse error at line 1, column 11: syntax error while "
            "parsing value - invalid string: ill-formed UTF-8 byte; last read: '\"\xff' "
            "(field 'name', byte 11)");
  EXPECT_EQ(ErrorOf(""),
            "Malformed JSON request body: parse error at line 1, column 1: syntax error while "
            "parsing value - unexpected end of input; expected '[', '{', or a literal (byte 1)");
  EXPECT_EQ(ErrorOf("[1] x").substr(0, 47), "Malformed JSON request body: parse error at lin");
}

TEST(JsonBody, NestingIsBounded) {
  std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(http::ParseJsonBody(ok).ok());
  std::string deep(1'000'000, '[');  // a stack overflow for a recursive parser or destructor
  EXPECT_EQ(
      ErrorOf(deep), "Malformed JSON request body: nested deeper than 64 levels (field '" + [] {
        std::string s;
        for (int i = 0; i < 64; ++i) s += "[0]";
        return s;
      }() + "', byte 65)");
  EXPECT_EQ(ErrorOf(R"({"a": {"b": [[]]}})").size(), 0u);
  auto shallow = http::ParseJsonBody(R"({"a": {"b": [[]]}})", /*max_depth=*/3);
  ASSERT_FALSE(shallow.ok());
  EXPECT_EQ(shallow.status().message(),
            "Malformed JSON request body: nested deeper than 3 levels (field 'a.b[0]', byte 14)");
}

track::RequestFields Fields(const std::string& body) {
  http::ServerRequest request;
  request.method = "POST";
  request.body = body;
  auto fields = track::RequestFields::FromRequest(request);
  EXPECT_TRUE(fields.ok()) << fields.status().ToString();
  return fields.ok() ? *fields : track::RequestFields(nlohmann::json::object());
}

TEST(RequestFields, IntegersOutOfRangeAreRefusedNamingTheField) {
  const std::string range = "expected an integer (-9223372036854775808 to 9223372036854775807)";
  struct Case {
    std::string body;
    std::string error;  // "" = accepted
    int64_t value;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"n": "9223372036854775807"})", "", INT64_MAX},
           {R"({"n": "-9223372036854775808"})", "", INT64_MIN},
           {R"({"n": 9223372036854775807})", "", INT64_MAX},
           {R"({"n": -9223372036854775808})", "", INT64_MIN},
           {R"({"n": 4.0})", "", 4},
           {R"({"n": "9999999999999999999"})",
            "Invalid value \"9999999999999999999\" for parameter 'n' supplied: " + range, 0},
           {R"({"n": "-9999999999999999999"})",
            "Invalid value \"-9999999999999999999\" for parameter 'n' supplied: " + range, 0},
           {R"({"n": 9223372036854775808})",
            "Invalid value 9223372036854775808 for parameter 'n' supplied: " + range, 0},
           {R"({"n": 1e30})", "Invalid value 1e+30 for parameter 'n' supplied: " + range, 0},
           {R"({"n": 9.3e18})", "Invalid value 9.3e+18 for parameter 'n' supplied: " + range, 0},
           {R"({"n": 4.5})", "Invalid value 4.5 for parameter 'n' supplied: expected an integer",
            0},
           {R"({"n": "12x"})",
            "Invalid value \"12x\" for parameter 'n' supplied: expected an integer", 0},
           {R"({"n": "-"})", "Invalid value \"-\" for parameter 'n' supplied: expected an integer",
            0},
       }) {
    auto n = Fields(c.body).RequiredInt("n");
    if (c.error.empty()) {
      ASSERT_TRUE(n.ok()) << c.body << ": " << n.status().ToString();
      EXPECT_EQ(*n, c.value) << c.body;
    } else {
      ASSERT_FALSE(n.ok()) << c.body;
      EXPECT_EQ(n.status().message(), c.error);
    }
  }
}

TEST(RequestFields, QueryStringsMustBeUtf8) {
  http::ServerRequest request;
  request.method = "GET";
  request.query = "name=%C3%A9t%C3%A9&other=x";
  ASSERT_TRUE(track::RequestFields::FromRequest(request).ok());
  request.query = "name=%ff";
  EXPECT_EQ(track::RequestFields::FromRequest(request).status().message(),
            "Invalid value for parameter 'name' supplied: it is not UTF-8");
  request.query = "%c0%af=1";  // an overlong '/'
  EXPECT_EQ(track::RequestFields::FromRequest(request).status().message(),
            "Invalid query string: a parameter name is not UTF-8");
}

TEST(IsUtf8, RefusesOverlongsSurrogatesAndTruncation) {
  EXPECT_TRUE(http::IsUtf8("plain é 😀"));
  for (const char* bad : {"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xe2\x82", "\x80"}) {
    EXPECT_FALSE(http::IsUtf8(bad)) << bad;
  }
}

std::string HeadError(const std::string& head) {
  http::ServerRequest request;
  auto error = http::ParseRequestHead(head, &request);
  return error ? std::to_string(error->status) + " " + error->body : "";
}

TEST(RequestHead, SmugglingProneFormsAreRefused) {
  EXPECT_EQ(HeadError("GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2"), "");
  http::ServerRequest request;
  ASSERT_FALSE(
      http::ParseRequestHead("GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2", &request));
  EXPECT_EQ(request.path, "/a b");
  EXPECT_EQ(request.query, "x=1");
  EXPECT_EQ(request.Header("x-a"), "1, 2");
  EXPECT_EQ(HeadError("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2"),
            "400 header 'content-length' appears twice\n");
  EXPECT_EQ(HeadError("GET / HTTP/1.1\r\nHost: a\r\nHost: b"), "400 header 'host' appears twice\n");
  EXPECT_EQ(HeadError("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked"),
            "400 a request may not carry both Content-Length and Transfer-Encoding\n");
  EXPECT_EQ(HeadError("GET / HTTP/1.1\r\nX: a\r\n b"), "400 folded header lines are refused\n");
  EXPECT_EQ(HeadError("GET / HTTP/1.1\r\nX y: a"), "400 malformed header\n");
  EXPECT_EQ(HeadError("GET / HTTP/1.1\r\nX: a\nb"), "400 malformed header value\n");
  EXPECT_EQ(HeadError(std::string("GET / HTTP/1.1\r\nX: a\0b", 22)),
            "400 malformed header value\n");
  EXPECT_EQ(HeadError("GET /\x01 HTTP/1.1"), "400 malformed request target\n");
  EXPECT_EQ(HeadError("GET  / HTTP/1.1"), "400 malformed request line\n");
  EXPECT_EQ(HeadError("get / HTTP/1.1"), "400 malformed method\n");
  EXPECT_EQ(HeadError("GET http://x/ HTTP/1.1"), "400 malformed request target\n");
  EXPECT_EQ(HeadError("GET / HTTP/2.0"), "505 unsupported HTTP version\n");
}

}  // namespace
}  // namespace cohort::server
