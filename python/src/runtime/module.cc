// Entry point of cohort._cohort, the compiled half of the cohort package.
#include "bindings.h"
#include "errors.h"

PYBIND11_MODULE(_cohort, m) {
  m.doc() = "cohort runtime over c_api.h (tensors as address, shape and dtype code)";
  cohort_python::RegisterErrors(m);
  cohort_python::BindJob(m);
  cohort_python::BindOperations(m);
  cohort_python::BindHandles(m);
  cohort_python::BindPointToPoint(m);
  cohort_python::BindSettings(m);
  cohort_python::BindCompression(m);
}
