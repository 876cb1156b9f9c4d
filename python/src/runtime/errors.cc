// Exception types of the cohort Python package and the mapping from C codes.
#include "errors.h"

#include <string>

namespace py = pybind11;

namespace cohort_python {

void RegisterErrors(py::module_& m) {
  // Kept alive by the module for the interpreter's lifetime (pybind11's idiom
  // for exception types: a function-local static, never destroyed).
  static py::exception<CohortError> runtime_error(m, "CohortError", PyExc_RuntimeError);
  py::object bases = py::make_tuple(runtime_error, py::handle(PyExc_ValueError));
  static py::exception<CohortValueError> value_error(m, "CohortValueError", bases);
  // The translator runs with the GIL held, whatever the binding released.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CohortValueError& e) {
      PyErr_SetString(value_error.ptr(), e.what());
    } catch (const CohortError& e) {
      PyErr_SetString(runtime_error.ptr(), e.what());
    }
  });
}

void Check(int code, const cohort_error& err) {
  if (code == COHORT_OK) return;
  const std::string message =
      err.code == code ? std::string(err.message) : "cohort error code " + std::to_string(code);
  if (code == COHORT_ERR_INVALID_ARGUMENT) throw CohortValueError(message);
  throw CohortError(message);
}

}  // namespace cohort_python
