// Binds PowerSGD's passes over one float32 matrix (c_api.h,
// cohort_powersgd_*): buffers cross as addresses, the caller
// (cohort.torch.powersgd) checks dtype, device and layout. The GIL is
// released while a pass streams the matrix (Check needs no GIL).
#include <cstdint>

#include "bindings.h"
#include "cohort/c_api.h"
#include "errors.h"

namespace py = pybind11;

namespace cohort_python {
namespace {

float* Floats(uintptr_t address) { return reinterpret_cast<float*>(address); }

cohort_powersgd_matrix Matrix(uintptr_t m, uintptr_t error, uint64_t rows, uint64_t cols,
                              uint64_t rank) {
  return cohort_powersgd_matrix{Floats(m), Floats(error), rows, cols, rank};
}

void Project(uintptr_t m, uintptr_t error, uint64_t rows, uint64_t cols, uint64_t rank,
             uintptr_t q_t, uintptr_t p) {
  const cohort_powersgd_matrix x = Matrix(m, error, rows, cols, rank);
  cohort_error err{};
  Check(cohort_powersgd_project(&x, Floats(q_t), Floats(p), &err), err);
}

void ProjectBack(uintptr_t m, uint64_t rows, uint64_t cols, uint64_t rank, uintptr_t p,
                 uintptr_t q_t) {
  const cohort_powersgd_matrix x = Matrix(m, 0, rows, cols, rank);
  cohort_error err{};
  Check(cohort_powersgd_project_back(&x, Floats(p), Floats(q_t), &err), err);
}

void Approximate(uintptr_t m, uintptr_t error, uint64_t rows, uint64_t cols, uint64_t rank,
                 uintptr_t p, uintptr_t q_t) {
  const cohort_powersgd_matrix x = Matrix(m, error, rows, cols, rank);
  cohort_error err{};
  Check(cohort_powersgd_approximate(&x, Floats(p), Floats(q_t), &err), err);
}

}  // namespace

void BindCompression(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  m.def("powersgd_project", Project, Release(), py::arg("m"), py::arg("error"), py::arg("rows"),
        py::arg("cols"), py::arg("rank"), py::arg("q_t"), py::arg("p"),
        "m += error (0: none); p = m q. Addresses of float32, row-major.");
  m.def("powersgd_project_back", ProjectBack, Release(), py::arg("m"), py::arg("rows"),
        py::arg("cols"), py::arg("rank"), py::arg("p"), py::arg("q_t"),
        "q_t = (m^T p)^T. Addresses of float32, row-major.");
  m.def("powersgd_approximate", Approximate, Release(), py::arg("m"), py::arg("error"),
        py::arg("rows"), py::arg("cols"), py::arg("rank"), py::arg("p"), py::arg("q_t"),
        "a = p q^T; error = m - a (0: none); m = a. Addresses of float32, row-major.");
}

}  // namespace cohort_python
