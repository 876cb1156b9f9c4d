// cohort._c10d: the extension behind cohort.torch.distributed, the one part
// of cohort built against LibTorch. It creates ProcessGroupCohort objects,
// which Python sees as torch.distributed ProcessGroups (torch 1.13) or
// Backends (torch 2.x): the types torch's own module registered with pybind11.
#include <torch/csrc/utils/pybind.h>

#include <chrono>

#include "c10d/process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "The cohort torch.distributed backend (ProcessGroupCohort over cohort's runtime).";
  // Registers torch's ProcessGroup and Store types with pybind11.
  py::module_::import("torch.distributed");
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_seconds,
         int process_set, const std::string& name_prefix,
         int64_t channel) -> c10::intrusive_ptr<cohort_c10d::C10dBackend> {
        const auto timeout =
            std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
        return c10::make_intrusive<cohort_c10d::ProcessGroupCohort>(
            store, rank, size, timeout, process_set, name_prefix, channel);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_seconds"),
      py::arg("process_set"), py::arg("name_prefix"), py::arg("channel"),
      "A ProcessGroup over cohort process set `process_set` (0: every rank); cohort must be "
      "initialized and the set added on every rank first. Opens cohort's point-to-point "
      "messages (collective the first time: create the default group first).");
}
