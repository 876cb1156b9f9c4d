// Exception types of the cohort Python package and the mapping from C codes.
#include "errors.h"

#include <string>

namespace py = pybind11;

namespace cohort_python {
namespace {

// Set once at import; the module object keeps the types alive.
PyObject* g_runtime_error = nullptr;
PyObject* g_value_error = nullptr;

}  // namespace

void RegisterErrors(py::module_& m) {
  static py::exception<std::runtime_error> runtime_error(m, "CohortError", PyExc_RuntimeError);
  py::object bases = py::make_tuple(runtime_error, py::handle(PyExc_ValueError));
  static py::exception<std::invalid_argument> value_error(m, "CohortValueError", bases);
  g_runtime_error = runtime_error.ptr();
  g_value_error = value_error.ptr();
}

void Check(int code, const cohort_error& err) {
  if (code == COHORT_OK) return;
  PyObject* type = code == COHORT_ERR_INVALID_ARGUMENT ? g_value_error : g_runtime_error;
  const std::string message =
      err.code == code ? std::string(err.message) : "cohort error code " + std::to_string(code);
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

}  // namespace cohort_python
