// Kernel loops shared by the generic and the AVX2 translation units
// (reduce_kernels.cc and reduce_kernels_avx2.cc). Included only there; each
// includer defines COHORT_KERNEL_NAMESPACE so the two copies do not collide.
#ifndef COHORT_KERNEL_NAMESPACE
#error "define COHORT_KERNEL_NAMESPACE before including reduce_kernels_impl.h"
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/half.h"
#include "cohort/types.h"

namespace cohort::COHORT_KERNEL_NAMESPACE {

struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };
struct Bool { uint8_t v; };  // torch.bool / numpy bool_: one byte, 0 or 1

// Arithmetic type an element is computed in.
template <typename T> struct Compute { using type = T; };
template <> struct Compute<Half> { using type = float; };
template <> struct Compute<BHalf> { using type = float; };

template <typename T> inline typename Compute<T>::type Load(T v) { return v; }
inline float Load(Half v) { return Float16ToFloat(v.bits); }
inline float Load(BHalf v) { return BFloat16ToFloat(v.bits); }
template <typename T> inline T Store(typename Compute<T>::type v) { return v; }
template <> inline Half Store<Half>(float v) { return Half{FloatToFloat16(v)}; }
template <> inline BHalf Store<BHalf>(float v) { return BHalf{FloatToBFloat16(v)}; }

// Integer + and * in unsigned arithmetic: wrap-around without undefined behaviour.
template <typename C> inline C Add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename C> inline C Mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T, typename F>
void Loop(T* dst, const T* a, const T* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) dst[i] = Store<T>(f(Load(a[i]), Load(b[i])));
}

template <typename T>
void ReduceTyped(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  using C = typename Compute<T>::type;
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum:  // not reached: RunAllreduce hands Adasum to adasum_allreduce.cc
      Loop(d, x, y, n, [](C p, C q) { return Add(p, q); });
      break;
    case ReduceOp::kMin: Loop(d, x, y, n, [](C p, C q) { return q < p ? q : p; }); break;
    case ReduceOp::kMax: Loop(d, x, y, n, [](C p, C q) { return p < q ? q : p; }); break;
    case ReduceOp::kProduct: Loop(d, x, y, n, [](C p, C q) { return Mul(p, q); }); break;
  }
}

// Converts a double to integer type C, truncating toward zero and saturating.
template <typename C> inline C SaturateCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<C>::min())) return std::numeric_limits<C>::min();
  if (v >= static_cast<double>(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
  return static_cast<C>(v);
}

template <typename T>
void ScaleTyped(void* dst, const void* src, size_t n, double factor) {
  using C = typename Compute<T>::type;
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  if constexpr (std::is_integral_v<C>) {
    for (size_t i = 0; i < n; ++i) d[i] = SaturateCast<C>(static_cast<double>(s[i]) * factor);
  } else {
    const C f = static_cast<C>(factor);
    for (size_t i = 0; i < n; ++i) d[i] = Store<T>(Load(s[i]) * f);
  }
}

template <typename T>
void DivideTyped(void* buf, size_t n, int divisor) {
  using C = typename Compute<T>::type;
  T* d = static_cast<T*>(buf);
  const C q = static_cast<C>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = Store<T>(Load(d[i]) / q);
}

template <template <typename> class Fn, typename... Args>
void Dispatch(DataType type, Args... args) {
  switch (type) {
    case DataType::kUInt8: Fn<uint8_t>::Run(args...); break;
    case DataType::kInt8: Fn<int8_t>::Run(args...); break;
    case DataType::kInt32: Fn<int32_t>::Run(args...); break;
    case DataType::kInt64: Fn<int64_t>::Run(args...); break;
    case DataType::kFloat16: Fn<Half>::Run(args...); break;
    case DataType::kBFloat16: Fn<BHalf>::Run(args...); break;
    case DataType::kFloat32: Fn<float>::Run(args...); break;
    case DataType::kFloat64: Fn<double>::Run(args...); break;
    case DataType::kInt16: Fn<int16_t>::Run(args...); break;
    case DataType::kBool: Fn<Bool>::Run(args...); break;
  }
}

template <typename T> struct ReduceFn {
  static void Run(void* d, const void* a, const void* b, size_t n, ReduceOp op) {
    ReduceTyped<T>(d, a, b, n, op);
  }
};
template <typename T> struct ScaleFn {
  static void Run(void* d, const void* s, size_t n, double f) { ScaleTyped<T>(d, s, n, f); }
};
template <typename T> struct DivideFn {
  static void Run(void* d, size_t n, int q) { DivideTyped<T>(d, n, q); }
};

// bool is logical: Sum, Average and Max are "or", Min and Product are "and";
// scaling by a non-zero factor keeps a value, by zero clears it; the average's
// division leaves "or" as it is (any rank's true stays true).
template <> struct ReduceFn<Bool> {
  static void Run(void* d, const void* a, const void* b, size_t n, ReduceOp op) {
    uint8_t* dst = static_cast<uint8_t*>(d);
    const uint8_t* x = static_cast<const uint8_t*>(a);
    const uint8_t* y = static_cast<const uint8_t*>(b);
    const bool conj = op == ReduceOp::kMin || op == ReduceOp::kProduct;
    for (size_t i = 0; i < n; ++i) {
      dst[i] = conj ? (x[i] != 0 && y[i] != 0) : (x[i] != 0 || y[i] != 0);
    }
  }
};
template <> struct ScaleFn<Bool> {
  static void Run(void* d, const void* s, size_t n, double f) {
    uint8_t* dst = static_cast<uint8_t*>(d);
    const uint8_t* src = static_cast<const uint8_t*>(s);
    for (size_t i = 0; i < n; ++i) dst[i] = f != 0.0 && src[i] != 0;
  }
};
template <> struct DivideFn<Bool> {
  static void Run(void*, size_t, int) {}
};

void ReduceTwo(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  Dispatch<ReduceFn>(type, dst, a, b, count, op);
}

void Scale(void* dst, const void* src, size_t count, DataType type, double factor) {
  Dispatch<ScaleFn>(type, dst, src, count, factor);
}

void Divide(void* buf, size_t count, DataType type, int divisor) {
  Dispatch<DivideFn>(type, buf, count, divisor);
}

void ToHalf(void* dst, DataType dst_type, const float* src, size_t n) {
  if (dst_type == DataType::kFloat16) {
    Half* d = static_cast<Half*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = Store<Half>(src[i]);
  } else {
    BHalf* d = static_cast<BHalf*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = Store<BHalf>(src[i]);
  }
}

void FromHalf(float* dst, const void* src, DataType src_type, size_t n) {
  if (src_type == DataType::kFloat16) {
    const Half* s = static_cast<const Half*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = Load(s[i]);
  } else {
    const BHalf* s = static_cast<const BHalf*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = Load(s[i]);
  }
}

}  // namespace cohort::COHORT_KERNEL_NAMESPACE
