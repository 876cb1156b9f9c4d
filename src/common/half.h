// Conversions between float32 and the 16-bit float formats (IEEE binary16 and
// bfloat16). Both round to nearest, ties to even, and keep NaN a NaN.
#ifndef COHORT_COMMON_HALF_H_
#define COHORT_COMMON_HALF_H_

#include <bit>
#include <cstdint>

namespace cohort {

inline float BFloat16ToFloat(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t FloatToBFloat16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float Float16ToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf/NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Subnormal or zero: value = mant * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

inline uint16_t FloatToFloat16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;    // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;   // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                         // below 2^-14: subnormal half
    // Shift in the implicit bit and round at the 2^-24 position.
    if (abs < 0x33000000u) return sign;            // below 2^-25: rounds to zero
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;              // 14..24
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t r = abs - 0x38000000u;                  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);                  // round to nearest even at bit 13
  return sign | static_cast<uint16_t>(r >> 13);
}

}  // namespace cohort

#endif  // COHORT_COMMON_HALF_H_
