// Binds point-to-point messages (c_api.h, "Point-to-point messages"): tagged
// sends and receives between two ranks, which cohort.torch.parallel uses to
// move a pipeline's activations and gradients. Buffers cross as addresses;
// the caller keeps them alive until the handle completes.
#include <cstdint>
#include <string>

#include "bindings.h"
#include "cohort/c_api.h"
#include "errors.h"

namespace py = pybind11;

namespace cohort_python {
namespace {

void* Address(uintptr_t address) { return reinterpret_cast<void*>(address); }

int64_t SendAsync(int dst, int64_t channel, int64_t tag, uintptr_t data, uint64_t bytes,
                  double timeout_seconds) {
  cohort_error err{};
  int64_t handle = -1;
  Check(cohort_send_async(dst, channel, tag, Address(data), bytes, timeout_seconds, &handle, &err),
        err);
  return handle;
}

// From one named source only: the sender is known, so no source is reported
// (an address for it would have to outlive the binding's call).
int64_t RecvAsync(int src, int64_t channel, int64_t tag, uintptr_t data, uint64_t bytes,
                  double timeout_seconds) {
  if (src < 0)
    throw CohortValueError("recv: source rank " + std::to_string(src) + " is not a rank");
  cohort_error err{};
  int64_t handle = -1;
  Check(cohort_recv_async(src, channel, tag, Address(data), bytes, timeout_seconds, nullptr,
                          &handle, &err),
        err);
  return handle;
}

}  // namespace

void BindPointToPoint(py::module_& m) {
  // Collective: builds the messages' mesh (waits for every rank).
  m.def(
      "p2p_open",
      [] {
        cohort_error err{};
        Check(cohort_p2p_open(&err), err);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def("send_async", SendAsync, py::arg("dst"), py::arg("channel"), py::arg("tag"),
        py::arg("data"), py::arg("bytes"), py::arg("timeout_seconds") = -1.0);
  m.def("recv_async", RecvAsync, py::arg("src"), py::arg("channel"), py::arg("tag"),
        py::arg("data"), py::arg("bytes"), py::arg("timeout_seconds") = -1.0);
}

}  // namespace cohort_python
