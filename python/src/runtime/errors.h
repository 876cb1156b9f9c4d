// Turning c_api.h error reports into Python exceptions: the engine's message
// unchanged, as cohort.CohortError (a RuntimeError) or, for bad arguments as
// Horovod reports them, cohort.CohortValueError (also a ValueError).
//
// Check() throws C++ exceptions, never touches the Python error state: it is
// called from bindings that release the GIL (init, shutdown, wait), and
// pybind11 translates the exception into the Python one only after the GIL is
// taken back.
#ifndef COHORT_PYTHON_RUNTIME_ERRORS_H_
#define COHORT_PYTHON_RUNTIME_ERRORS_H_

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "cohort/c_api.h"

namespace cohort_python {

// What a failed c_api.h call throws; translated to cohort.CohortError.
class CohortError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A rejected argument; translated to cohort.CohortValueError.
class CohortValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Creates the exception types as attributes of `m` and registers their
// translation.
void RegisterErrors(pybind11::module_& m);

// Throws CohortError/CohortValueError for a failed c_api.h call (code != 0).
// Safe with or without the GIL held.
void Check(int code, const cohort_error& err);

}  // namespace cohort_python

#endif  // COHORT_PYTHON_RUNTIME_ERRORS_H_
