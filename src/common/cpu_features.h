// What the CPU running this process can do, asked once: the kernels that are
// compiled twice (generic x86-64 and AVX2) pick their variant with it.
#ifndef COHORT_COMMON_CPU_FEATURES_H_
#define COHORT_COMMON_CPU_FEATURES_H_

namespace cohort {

inline bool CpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

}  // namespace cohort

#endif  // COHORT_COMMON_CPU_FEATURES_H_
