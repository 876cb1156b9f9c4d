// Turning c_api.h error reports into Python exceptions: the engine's message
// unchanged, as cohort.CohortError (a RuntimeError) or, for bad arguments as
// Horovod reports them, cohort.CohortValueError (also a ValueError).
#ifndef COHORT_PYTHON_RUNTIME_ERRORS_H_
#define COHORT_PYTHON_RUNTIME_ERRORS_H_

#include <pybind11/pybind11.h>

#include "cohort/c_api.h"

namespace cohort_python {

// Creates the exception types as attributes of `m`.
void RegisterErrors(pybind11::module_& m);

// Raises the Python exception for a failed c_api.h call (code != 0).
void Check(int code, const cohort_error& err);

}  // namespace cohort_python

#endif  // COHORT_PYTHON_RUNTIME_ERRORS_H_
