// Tests of the reduction kernels: exact values for every dtype and op,
// integer wrap-around, saturation of scale factors, half-precision rounding.
#include "collectives/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/half.h"
#include "common/value_convert.h"

namespace cohort {
namespace {

std::vector<unsigned char> Buffer(DataType t, const std::vector<double>& values) {
  std::vector<unsigned char> out(values.size() * DataTypeSize(t));
  for (size_t i = 0; i < values.size(); ++i) StoreAs(t, values[i], &out[i * DataTypeSize(t)]);
  return out;
}

std::vector<double> Values(DataType t, const std::vector<unsigned char>& buf) {
  std::vector<double> out(buf.size() / DataTypeSize(t));
  for (size_t i = 0; i < out.size(); ++i) out[i] = LoadAs(t, &buf[i * DataTypeSize(t)]);
  return out;
}

const DataType kAllTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
                              DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
                              DataType::kFloat32, DataType::kFloat64, DataType::kInt16};

TEST(ReduceKernels, BoolIsLogical) {
  const uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1};
  const uint8_t any[4] = {0, 1, 1, 1}, all[4] = {0, 0, 0, 1};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax, ReduceOp::kMin,
                      ReduceOp::kProduct}) {
    uint8_t out[4];
    ReduceTwo(out, a, b, 4, DataType::kBool, op);
    const bool conj = op == ReduceOp::kMin || op == ReduceOp::kProduct;
    EXPECT_EQ(0, std::memcmp(out, conj ? all : any, 4)) << ReduceOpName(op);
  }
  uint8_t buf[4] = {0, 1, 1, 0};
  FinishReduction(buf, 4, DataType::kBool, ReduceOp::kAverage, 3, 1.0);
  EXPECT_EQ(buf[1], 1);
  ScaleCopy(buf, buf, 4, DataType::kBool, 0.0);
  EXPECT_EQ(buf[1], 0);
  EXPECT_EQ(DataTypeSize(DataType::kBool), 1u);
  EXPECT_EQ(DataTypeSize(DataType::kInt16), 2u);
  EXPECT_STREQ(DataTypeName(DataType::kInt16), "int16");
}

// Long enough (and odd) to go through vector loops and their scalar tails.
constexpr size_t kLen = 67;

TEST(ReduceKernels, EveryOpOnEveryTypeIsExact) {
  for (DataType t : kAllTypes) {
    const bool is_unsigned = t == DataType::kUInt8;
    std::vector<double> a(kLen), b(kLen);
    for (size_t i = 0; i < kLen; ++i) {
      a[i] = static_cast<double>(i % 9) - (is_unsigned ? 0 : 4);
      b[i] = static_cast<double>((i * 5) % 7) - (is_unsigned ? 0 : 3);
    }
    auto ba = Buffer(t, a), bb = Buffer(t, b);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                        ReduceOp::kProduct}) {
      std::vector<unsigned char> out(ba.size());
      ReduceTwo(out.data(), ba.data(), bb.data(), kLen, t, op);
      std::vector<double> got = Values(t, out);
      for (size_t i = 0; i < kLen; ++i) {
        double want = op == ReduceOp::kMin   ? std::min(a[i], b[i])
                      : op == ReduceOp::kMax ? std::max(a[i], b[i])
                      : op == ReduceOp::kProduct ? a[i] * b[i]
                                                 : a[i] + b[i];
        ASSERT_EQ(got[i], want) << DataTypeName(t) << " " << ReduceOpName(op) << " at " << i;
      }
    }
  }
}

TEST(ReduceKernels, InPlaceAliasing) {
  std::vector<float> a(kLen, 1.5f), b(kLen, 2.0f);
  ReduceTwo(a.data(), a.data(), b.data(), kLen, DataType::kFloat32, ReduceOp::kSum);
  for (float v : a) EXPECT_EQ(v, 3.5f);
}

TEST(ReduceKernels, IntegerSumAndProductWrapAround) {
  int8_t a[3] = {127, -128, 100}, b[3] = {1, -1, 100};
  ReduceTwo(a, a, b, 3, DataType::kInt8, ReduceOp::kSum);
  EXPECT_EQ(a[0], -128);
  EXPECT_EQ(a[1], 127);
  EXPECT_EQ(a[2], -56);
  uint8_t u[2] = {200, 16}, v[2] = {2, 16};
  ReduceTwo(u, u, v, 2, DataType::kUInt8, ReduceOp::kProduct);
  EXPECT_EQ(u[0], 144);  // 400 mod 256
  EXPECT_EQ(u[1], 0);    // 256 mod 256
  int64_t big[1] = {std::numeric_limits<int64_t>::max()}, one[1] = {1};
  ReduceTwo(big, big, one, 1, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(big[0], std::numeric_limits<int64_t>::min());
}

TEST(ReduceKernels, AverageTruncatesIntegersAndDividesFloats) {
  int32_t ints[4] = {7, -7, 8, 0};
  FinishReduction(ints, 4, DataType::kInt32, ReduceOp::kAverage, 3, 1.0);
  EXPECT_EQ(ints[0], 2);
  EXPECT_EQ(ints[1], -2);
  EXPECT_EQ(ints[2], 2);
  EXPECT_EQ(ints[3], 0);
  float f[1] = {7.0f};
  FinishReduction(f, 1, DataType::kFloat32, ReduceOp::kAverage, 2, 1.0);
  EXPECT_EQ(f[0], 3.5f);
  // Sum is not divided; post-scale always applies.
  double d[1] = {3.0};
  FinishReduction(d, 1, DataType::kFloat64, ReduceOp::kSum, 4, 0.5);
  EXPECT_EQ(d[0], 1.5);
}

TEST(ReduceKernels, ScaleTruncatesAndSaturatesIntegers) {
  int8_t v[4] = {100, -100, 3, -3};
  int8_t out[4];
  ScaleCopy(out, v, 4, DataType::kInt8, 2.0);
  EXPECT_EQ(out[0], 127);
  EXPECT_EQ(out[1], -128);
  EXPECT_EQ(out[2], 6);
  ScaleCopy(out, v, 4, DataType::kInt8, 0.5);
  EXPECT_EQ(out[2], 1);
  EXPECT_EQ(out[3], -1);
  uint8_t u[1] = {10};
  ScaleCopy(u, u, 1, DataType::kUInt8, -1.0);
  EXPECT_EQ(u[0], 0);
}

TEST(ReduceKernels, HalfTypesAreComputedInFloatAndRoundedToNearestEven) {
  // 2048 + 1 is not representable in float16: it rounds to even (2048).
  uint16_t a[1] = {FloatToFloat16(2048.0f)}, b[1] = {FloatToFloat16(1.0f)};
  ReduceTwo(a, a, b, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(Float16ToFloat(a[0]), 2048.0f);
  uint16_t c[1] = {FloatToFloat16(2048.0f)}, d[1] = {FloatToFloat16(3.0f)};
  ReduceTwo(c, c, d, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(Float16ToFloat(c[0]), 2052.0f);  // 2051 -> tie -> even 2052
  uint16_t e[1] = {FloatToBFloat16(256.0f)}, f[1] = {FloatToBFloat16(1.0f)};
  ReduceTwo(e, e, f, 1, DataType::kBFloat16, ReduceOp::kSum);
  EXPECT_EQ(BFloat16ToFloat(e[0]), 256.0f);
}

TEST(Half, Float16KnownEncodings) {
  EXPECT_EQ(FloatToFloat16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToFloat16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7c00);          // rounds up to infinity
  EXPECT_EQ(FloatToFloat16(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToFloat16(0.0f), 0x0000);
  EXPECT_EQ(FloatToFloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToFloat16(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(NAN))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half round-trips
    ASSERT_EQ(FloatToFloat16(Float16ToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Half, BFloat16KnownEncodings) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-1.0f), 0xbf80);
  EXPECT_EQ(FloatToBFloat16(1.00390625f), 0x3f80);  // halfway: ties to even
  EXPECT_EQ(FloatToBFloat16(1.01171875f), 0x3f82);  // halfway above odd: rounds up
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    ASSERT_EQ(FloatToBFloat16(BFloat16ToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

}  // namespace
}  // namespace cohort
