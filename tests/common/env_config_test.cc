// Tests of environment parsing and of the names of types and ops.
#include "common/env_config.h"

#include <gtest/gtest.h>

#include <map>

#include "cohort/types.h"

namespace cohort {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(EnvConfig, IntsAndDoubles) {
  EnvLookup env = FakeEnv({{"A", "42"}, {"B", "4x"}, {"C", "0.25"}, {"E", ""}});
  EXPECT_EQ(*EnvInt(env, "A", 1), 42);
  EXPECT_EQ(*EnvInt(env, "MISSING", 7), 7);
  EXPECT_EQ(*EnvInt(env, "E", 7), 7);
  Result<int64_t> bad = EnvInt(env, "B", 1);
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "B='4x' is not an integer");
  EXPECT_EQ(*EnvDouble(env, "C", 0), 0.25);
}

TEST(EnvConfig, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("64K"), 65536u);
  EXPECT_EQ(*ParseByteSize("16M"), 16u << 20);
  EXPECT_EQ(*ParseByteSize("1G"), 1u << 30);
  EXPECT_FALSE(ParseByteSize("12Q").ok());
  EXPECT_FALSE(ParseByteSize("-1").ok());
  EXPECT_FALSE(ParseByteSize("").ok());
}

TEST(Types, NamesRoundTrip) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = static_cast<DataType>(i);
    EXPECT_EQ(*ParseDataType(DataTypeName(t)), t);
  }
  for (int i = 0; i < kNumReduceOps; ++i) {
    auto op = static_cast<ReduceOp>(i);
    EXPECT_EQ(*ParseReduceOp(ReduceOpName(op)), op);
  }
  EXPECT_EQ(DataTypeSize(DataType::kBFloat16), 2u);
  EXPECT_FALSE(ParseDataType("complex64").ok());
  EXPECT_FALSE(IsValidDataType(kNumDataTypes));
  EXPECT_EQ(*ParseDataType("int16"), DataType::kInt16);
  EXPECT_EQ(*ParseDataType("bool"), DataType::kBool);
  EXPECT_EQ(*ParseReduceOp("adasum"), ReduceOp::kAdasum);
  EXPECT_FALSE(IsValidReduceOp(-1));
}

}  // namespace
}  // namespace cohort
