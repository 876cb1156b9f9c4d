// The PowerSGD kernels compiled for AVX2 (see CMakeLists.txt for the flags).
#define COHORT_KERNEL_NAMESPACE avx2
#include "compression/powersgd_kernels_impl.h"
