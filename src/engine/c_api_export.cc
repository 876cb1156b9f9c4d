// Translation unit of the shared library libcohort.so; the C API itself is
// src/engine/c_api.cc, linked in whole from cohort_core.
#include "cohort/c_api.h"
