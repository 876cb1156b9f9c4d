// The reduction kernels compiled for AVX2 (see CMakeLists.txt for the flags).
#define COHORT_KERNEL_NAMESPACE avx2
#include "collectives/reduce_kernels_impl.h"
