// Single-element conversions between double and every DataType.
#include "common/value_convert.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/half.h"

namespace cohort {
namespace {

template <typename T>
void PutInt(double v, void* dst) {
  T out;
  if (std::isnan(v)) {
    out = 0;
  } else if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
    out = std::numeric_limits<T>::min();
  } else if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    out = std::numeric_limits<T>::max();
  } else {
    out = static_cast<T>(v);
  }
  std::memcpy(dst, &out, sizeof(T));
}

template <typename T>
T Get(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  return v;
}

}  // namespace

void StoreAs(DataType type, double value, void* dst) {
  switch (type) {
    case DataType::kUInt8: return PutInt<uint8_t>(value, dst);
    case DataType::kInt8: return PutInt<int8_t>(value, dst);
    case DataType::kInt32: return PutInt<int32_t>(value, dst);
    case DataType::kInt64: return PutInt<int64_t>(value, dst);
    case DataType::kFloat16: {
      uint16_t h = FloatToFloat16(static_cast<float>(value));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kBFloat16: {
      uint16_t h = FloatToBFloat16(static_cast<float>(value));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kFloat32: {
      float f = static_cast<float>(value);
      std::memcpy(dst, &f, 4);
      return;
    }
    case DataType::kFloat64: std::memcpy(dst, &value, 8); return;
    case DataType::kInt16: return PutInt<int16_t>(value, dst);
    case DataType::kBool: {
      const uint8_t b = value != 0;
      std::memcpy(dst, &b, 1);
      return;
    }
  }
}

double LoadAs(DataType type, const void* src) {
  switch (type) {
    case DataType::kUInt8: return Get<uint8_t>(src);
    case DataType::kInt8: return Get<int8_t>(src);
    case DataType::kInt32: return Get<int32_t>(src);
    case DataType::kInt64: return static_cast<double>(Get<int64_t>(src));
    case DataType::kFloat16: return Float16ToFloat(Get<uint16_t>(src));
    case DataType::kBFloat16: return BFloat16ToFloat(Get<uint16_t>(src));
    case DataType::kFloat32: return Get<float>(src);
    case DataType::kFloat64: return Get<double>(src);
    case DataType::kInt16: return Get<int16_t>(src);
    case DataType::kBool: return Get<uint8_t>(src) != 0;
  }
  return 0;
}

}  // namespace cohort
