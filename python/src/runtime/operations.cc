// Binds the asynchronous named collectives. Each takes buffer addresses (the
// caller keeps the memory alive until the handle completes), a shape and a
// dtype code, and returns the engine's handle(s).
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "cohort/c_api.h"
#include "errors.h"

namespace py = pybind11;

namespace cohort_python {
namespace {

using Shape = std::vector<int64_t>;

void* Address(uintptr_t address) { return reinterpret_cast<void*>(address); }

// Submits through `f(handle_out, err)` and returns the handle.
template <typename F>
int64_t Submit(F f) {
  cohort_error err{};
  int64_t handle = -1;
  const int code = f(&handle, &err);
  Check(code, err);
  return handle;
}

int NDim(const Shape& shape) { return static_cast<int>(shape.size()); }

// A GPU tensor's (device index, stream address) from Python; None: host memory.
using OptionalDevice = std::optional<std::pair<int, uintptr_t>>;

struct DeviceArg {
  explicit DeviceArg(const OptionalDevice& d)
      : value{d ? d->first : -1, d ? Address(d->second) : nullptr} {}
  const cohort_device* get() const { return value.device >= 0 ? &value : nullptr; }
  cohort_device value;
};

// The engine's wire compression is a C/C++ option: from Python, compression is
// Horovod's Compression classes, applied to the tensor before and after
// (docs/python.md), so the allreduce bindings always pass COHORT_COMPRESSION_NONE.
int64_t AllreduceAsync(const std::string& name, uintptr_t send, uintptr_t recv, const Shape& shape,
                       int dtype, int op, double prescale, double postscale, int process_set,
                       const OptionalDevice& device) {
  const cohort_allreduce_options options{op, prescale, postscale, COHORT_COMPRESSION_NONE,
                                         process_set};
  const DeviceArg d(device);
  return Submit([&](int64_t* h, cohort_error* e) {
    return cohort_allreduce_async_on_device(name.c_str(), Address(send), Address(recv),
                                            shape.data(), NDim(shape), dtype, &options, d.get(), h,
                                            e);
  });
}

std::vector<int64_t> GroupedAllreduceAsync(const std::vector<std::string>& names,
                                           const std::vector<uintptr_t>& sends,
                                           const std::vector<uintptr_t>& recvs,
                                           const std::vector<Shape>& shapes, int dtype, int op,
                                           double prescale, double postscale, int process_set,
                                           const OptionalDevice& device) {
  const size_t n = names.size();
  if (sends.size() != n || recvs.size() != n || shapes.size() != n) {
    throw py::value_error("grouped allreduce: names, sends, recvs and shapes differ in length");
  }
  std::vector<const char*> name_ptrs;
  std::vector<const void*> send_ptrs;
  std::vector<void*> recv_ptrs;
  std::vector<const int64_t*> shape_ptrs;
  std::vector<int> ndims;
  for (size_t i = 0; i < n; ++i) {
    name_ptrs.push_back(names[i].c_str());
    send_ptrs.push_back(Address(sends[i]));
    recv_ptrs.push_back(Address(recvs[i]));
    shape_ptrs.push_back(shapes[i].data());
    ndims.push_back(NDim(shapes[i]));
  }
  const cohort_allreduce_options options{op, prescale, postscale, COHORT_COMPRESSION_NONE,
                                         process_set};
  std::vector<int64_t> handles(n, -1);
  cohort_error err{};
  const DeviceArg d(device);
  const int code = cohort_grouped_allreduce_async_on_device(
      static_cast<int>(n), name_ptrs.data(), send_ptrs.data(), recv_ptrs.data(), shape_ptrs.data(),
      ndims.data(), dtype, &options, d.get(), handles.data(), &err);
  Check(code, err);
  return handles;
}

}  // namespace

void BindOperations(py::module_& m) {
  m.def("allreduce_async", AllreduceAsync, py::arg("name"), py::arg("send"), py::arg("recv"),
        py::arg("shape"), py::arg("dtype"), py::arg("op"), py::arg("prescale_factor") = 1.0,
        py::arg("postscale_factor") = 1.0, py::arg("process_set") = 0,
        py::arg("device") = py::none());
  m.def("grouped_allreduce_async", GroupedAllreduceAsync, py::arg("names"), py::arg("sends"),
        py::arg("recvs"), py::arg("shapes"), py::arg("dtype"), py::arg("op"),
        py::arg("prescale_factor") = 1.0, py::arg("postscale_factor") = 1.0,
        py::arg("process_set") = 0, py::arg("device") = py::none());
  m.def(
      "broadcast_async",
      [](const std::string& name, uintptr_t buf, const Shape& shape, int dtype, int root,
         int process_set, const OptionalDevice& device) {
        const DeviceArg d(device);
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_broadcast_async_on_device(name.c_str(), Address(buf), shape.data(),
                                                  NDim(shape), dtype, root, process_set, d.get(), h,
                                                  e);
        });
      },
      py::arg("name"), py::arg("buf"), py::arg("shape"), py::arg("dtype"), py::arg("root"),
      py::arg("process_set") = 0, py::arg("device") = py::none());
  m.def(
      "allgather_async",
      [](const std::string& name, uintptr_t send, const Shape& shape, int dtype, int process_set) {
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_allgather_async(name.c_str(), Address(send), shape.data(), NDim(shape),
                                        dtype, process_set, h, e);
        });
      },
      py::arg("name"), py::arg("send"), py::arg("shape"), py::arg("dtype"),
      py::arg("process_set") = 0);
  m.def(
      "reducescatter_async",
      [](const std::string& name, uintptr_t send, const Shape& shape, int dtype, int op,
         const std::vector<int64_t>& recv_rows, int process_set, double prescale,
         double postscale) {
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_reducescatter_async(
              name.c_str(), Address(send), shape.data(), NDim(shape), dtype, op, recv_rows.data(),
              static_cast<int>(recv_rows.size()), process_set, prescale, postscale, h, e);
        });
      },
      py::arg("name"), py::arg("send"), py::arg("shape"), py::arg("dtype"), py::arg("op"),
      py::arg("recv_rows") = std::vector<int64_t>{}, py::arg("process_set") = 0,
      py::arg("prescale") = 1.0, py::arg("postscale") = 1.0);
  m.def(
      "allgather_into_async",
      [](const std::string& name, uintptr_t send, const Shape& shape, int dtype, uintptr_t recv,
         uint64_t recv_elements, int process_set, const OptionalDevice& device) {
        const DeviceArg d(device);
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_allgather_into_async_on_device(name.c_str(), Address(send), shape.data(),
                                                       NDim(shape), dtype, Address(recv),
                                                       recv_elements, process_set, d.get(), h, e);
        });
      },
      py::arg("name"), py::arg("send"), py::arg("shape"), py::arg("dtype"), py::arg("recv"),
      py::arg("recv_elements"), py::arg("process_set") = 0, py::arg("device") = py::none());
  m.def(
      "reducescatter_into_async",
      [](const std::string& name, uintptr_t send, const Shape& shape, int dtype, int op,
         const std::vector<int64_t>& recv_rows, int process_set, double prescale, double postscale,
         uintptr_t recv, uint64_t recv_elements, const OptionalDevice& device) {
        const DeviceArg d(device);
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_reducescatter_into_async_on_device(
              name.c_str(), Address(send), shape.data(), NDim(shape), dtype, op, recv_rows.data(),
              static_cast<int>(recv_rows.size()), process_set, prescale, postscale, Address(recv),
              recv_elements, d.get(), h, e);
        });
      },
      py::arg("name"), py::arg("send"), py::arg("shape"), py::arg("dtype"), py::arg("op"),
      py::arg("recv_rows"), py::arg("process_set"), py::arg("prescale"), py::arg("postscale"),
      py::arg("recv"), py::arg("recv_elements"), py::arg("device") = py::none());
  m.def(
      "alltoall_async",
      [](const std::string& name, uintptr_t send, const Shape& shape, int dtype,
         const std::vector<int64_t>& splits, int process_set) {
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_alltoall_async(name.c_str(), Address(send), shape.data(), NDim(shape),
                                       dtype, splits.data(), static_cast<int>(splits.size()),
                                       process_set, h, e);
        });
      },
      py::arg("name"), py::arg("send"), py::arg("shape"), py::arg("dtype"), py::arg("splits"),
      py::arg("process_set") = 0);
  m.def(
      "barrier_async",
      [](const std::string& name, int process_set) {
        return Submit([&](int64_t* h, cohort_error* e) {
          return cohort_barrier_async(name.c_str(), process_set, h, e);
        });
      },
      py::arg("name"), py::arg("process_set") = 0);
  m.def("join_async", [] { return Submit(cohort_join_async); });
  // GPU tensors (docs/gpu.md): the caller's stream waits for a handle's result.
  m.def(
      "synchronize_on_stream",
      [](int64_t handle, uintptr_t stream, double timeout_seconds) {
        cohort_error err{};
        int code;
        {
          py::gil_scoped_release released;  // the engine thread may need the GIL meanwhile
          code = cohort_synchronize_on_stream(handle, Address(stream), timeout_seconds, &err);
        }
        Check(code, err);
      },
      py::arg("handle"), py::arg("stream"), py::arg("timeout_seconds") = -1.0);
  m.def("cuda_built", [] { return cohort_cuda_built() == 1; });
  m.def("nccl_built", [] {
    py::gil_scoped_release released;
    return cohort_nccl_built();
  });
  m.def("gpu_report", [] {
    std::string out(1 << 16, '\0');
    cohort_error err{};
    Check(cohort_gpu_report(out.data(), static_cast<int>(out.size()), &err), err);
    out.resize(std::strlen(out.c_str()));
    return out;
  });
  m.def(
      "start_timeline_marking_cycles",
      [](const std::string& path, bool mark_cycles) {
        cohort_error err{};
        Check(cohort_start_timeline_marking_cycles(path.c_str(), mark_cycles ? 1 : 0, &err), err);
      },
      py::arg("path"), py::arg("mark_cycles"));
}

}  // namespace cohort_python
