// Binds what happens to a handle after submission: poll, wait (without the
// GIL, so other Python threads and autograd keep running), taking an
// operation's output, and release.
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "cohort/c_api.h"
#include "errors.h"

namespace py = pybind11;

namespace cohort_python {
namespace {

// Owns a cohort_result: the output tensor's bytes, shape and splits.
class Result {
 public:
  explicit Result(cohort_result* r) : r_(r, cohort_result_free) {}

  std::vector<int64_t> shape() const {
    const int64_t* s = cohort_result_shape(r_.get());
    return std::vector<int64_t>(s, s + cohort_result_ndim(r_.get()));
  }
  std::vector<int64_t> splits() const {
    const int64_t* s = cohort_result_splits(r_.get());
    return std::vector<int64_t>(s, s + cohort_result_num_splits(r_.get()));
  }
  uint64_t nbytes() const { return cohort_result_bytes(r_.get()); }
  int64_t last_joined_rank() const { return cohort_result_last_joined_rank(r_.get()); }

  // Copies the bytes into a caller's buffer of exactly nbytes() bytes.
  void CopyTo(uintptr_t address, uint64_t capacity) const {
    if (capacity != nbytes()) {
      throw py::value_error("result holds " + std::to_string(nbytes()) +
                            " bytes but the destination has " + std::to_string(capacity));
    }
    if (capacity > 0) {
      std::memcpy(reinterpret_cast<void*>(address), cohort_result_data(r_.get()), capacity);
    }
  }

 private:
  std::unique_ptr<cohort_result, void (*)(cohort_result*)> r_;
};

// Runs Python's signal handlers (Ctrl-C raises KeyboardInterrupt there);
// nonzero when one raised, leaving the exception set for the caller.
int PythonSignalRaised(void*) {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

void Wait(int64_t handle, double timeout_seconds) {
  cohort_error err{};
  int code;
  {
    py::gil_scoped_release release;
    code = cohort_wait_interruptible(handle, timeout_seconds, PythonSignalRaised, nullptr, &err);
  }
  if (code == COHORT_ERR_INTERRUPTED) throw py::error_already_set();
  Check(code, err);
}

}  // namespace

void BindHandles(py::module_& m) {
  py::class_<Result>(m, "Result", "The output of a completed operation, owned by Python")
      .def_property_readonly("shape", &Result::shape)
      .def_property_readonly("splits", &Result::splits)
      .def_property_readonly("nbytes", &Result::nbytes)
      .def_property_readonly("last_joined_rank", &Result::last_joined_rank)
      .def("copy_to", &Result::CopyTo, py::arg("address"), py::arg("capacity"));

  m.def(
      "poll",
      [](int64_t handle) {
        cohort_error err{};
        int done = 0;
        Check(cohort_poll(handle, &done, &err), err);
        return done != 0;
      },
      py::arg("handle"));
  m.def("wait", Wait, py::arg("handle"), py::arg("timeout_seconds") = -1.0);
  m.def(
      "take_result",
      [](int64_t handle) {
        cohort_error err{};
        cohort_result* r = nullptr;
        Check(cohort_take_result(handle, &r, &err), err);
        return Result(r);
      },
      py::arg("handle"));
  m.def("release", cohort_release, py::arg("handle"));
}

}  // namespace cohort_python
