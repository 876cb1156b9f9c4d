// Worker for the multi-process tests of GPU tensors through the engine and
// the C API (include/cohort/c_api.h), run under `cohort run`. The engine is
// given tests/gpu/support's fake CUDA (device memory is host memory shared
// between processes through fake IPC handles; streams run lazily, only
// when the host must see their work), so every path above the CUDA API
// runs here: the submit-time event on the caller's stream, the per-set GPU
// collectives, fusion in device memory, completions joined on the caller's
// stream. Exits 0 only when every check passed.
//
//   gpu_engine_worker [--api fake|real] [--gpu-per-rank] [--nccl] MODE
//   --api real      the GPU stack this machine has (tools/device-check.sh), not the fake
//   --gpu-per-rank  every rank has a GPU of its own (else the ranks of a host
//                   share one); real: device = local rank % devices
//   --nccl          fake: a (fake) NCCL is loadable; both: no process-set check
//
// Modes:
//   check    every dtype x op: allreduce (out of place, in place with pre/post
//            scale, Adasum for float32/64), grouped allreduce (fused on the
//            device), broadcast from every root, allgather into a GPU buffer
//            (uneven rows), reduce-scatter into one; and, without --nccl, an
//            allreduce in a process set of the even ranks. Inputs are written
//            by work queued on the caller's stream (run only if the engine
//            waits for it); results are read by work queued on the caller's
//            stream after cohort_synchronize_on_stream (or after cohort_wait).
//            Each equals byte for byte the same operation on host tensors
//            through the engine.
//   refuse   exact errors: a host buffer passed as a GPU tensor, a GPU buffer
//            passed as a host tensor, a second device, an engine-held output,
//            alltoall; ranks that disagree on host or GPU get a mismatch.
//   missing  no fake: the GPU stack is searched for at the first GPU tensor,
//            whose error names the missing driver; host tensors still work.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/c_api.h"
#include "common/value_convert.h"
#include "engine/runtime.h"
#include "support/fake_gpu_provider.h"

namespace cohort::gpu {
namespace {

int g_failures = 0;
int g_rank = 0;

void Fail(const std::string& what) {
  if (g_failures++ < 8) std::fprintf(stderr, "rank %d: %s\n", g_rank, what.c_str());
}

void Die(const std::string& what, const cohort_error& err) {
  std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what.c_str(), err.message);
  std::exit(1);
}

#define C_OK(call)                    \
  do {                                \
    cohort_error err_{};              \
    if ((call(&err_)) != COHORT_OK) { \
      Die(#call, err_);               \
    }                                 \
  } while (0)

// The caller's side: a stream of its own ("torch's current stream"), device
// buffers written and read by copies queued on it, through the CudaApi only
// (the fake's or the driver's). With the fake, queued work runs only when
// something waits for it: a collective that did not wait for the caller's
// stream reads the buffer before the upload, and a result read without the
// join on the caller's stream is read before the collective wrote it.
class Caller {
 public:
  Caller(CudaApi& api, int device) : api_(api), device_(device) {
    Check(api_.UseDevice(device_), "UseDevice");
    Result<StreamHandle> s = api_.CreateStream();
    Check(s.status(), "CreateStream");
    stream_ = *s;
    Result<EventHandle> e = api_.CreateEvent();
    Check(e.status(), "CreateEvent");
    event_ = *e;
  }
  ~Caller() {
    (void)api_.UseDevice(device_);
    (void)SynchronizeStream(api_, stream_, event_, Deadline::AfterSeconds(60), "the caller");
    for (DevicePtr p : owned_) (void)api_.Free(p);
    for (void* p : pinned_) (void)api_.FreePinned(p);
    (void)api_.DestroyEvent(event_);
    (void)api_.DestroyStream(stream_);
  }
  StreamHandle stream() const { return stream_; }
  cohort_device device() const { return cohort_device{device_, stream_}; }

  DevicePtr Alloc(size_t bytes) {
    Result<DevicePtr> p = api_.Alloc(std::max<size_t>(bytes, 1));
    Check(p.status(), "Alloc");
    owned_.push_back(*p);
    return *p;
  }
  // Queued on the caller's stream; the pinned source lives until the end.
  DevicePtr Upload(const std::vector<unsigned char>& host) {
    const DevicePtr d = Alloc(host.size());
    if (host.empty()) return d;
    void* staging = Pinned(host.size());
    std::memcpy(staging, host.data(), host.size());
    Check(api_.CopyAsync(d, AsDevicePtr(staging), host.size(), stream_), "CopyAsync up");
    return d;
  }
  // Queued on the caller's stream, then the host waits for that stream.
  std::vector<unsigned char> Download(DevicePtr d, size_t bytes) {
    std::vector<unsigned char> out(bytes);
    if (bytes == 0) return out;
    void* staging = Pinned(bytes);
    Check(api_.CopyAsync(AsDevicePtr(staging), d, bytes, stream_), "CopyAsync down");
    Check(SynchronizeStream(api_, stream_, event_, Deadline::AfterSeconds(60), "the download"),
          "SynchronizeStream");
    std::memcpy(out.data(), staging, bytes);
    return out;
  }

 private:
  static void Check(const Status& s, const char* what) {
    if (s.ok()) return;
    std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what, s.ToString().c_str());
    std::exit(1);
  }
  void* Pinned(size_t bytes) {
    Result<void*> p = api_.AllocPinned(bytes);
    Check(p.status(), "AllocPinned");
    pinned_.push_back(*p);
    return *p;
  }

  CudaApi& api_;
  const int device_;
  StreamHandle stream_ = nullptr;
  EventHandle event_ = nullptr;
  std::vector<DevicePtr> owned_;
  std::vector<void*> pinned_;
};

// Small integers, so every result is exact in every type whatever the order
// of reduction (as in gpu_collectives_worker.cc).
std::vector<unsigned char> Fill(DataType t, ReduceOp op, size_t count, int rank) {
  const size_t es = DataTypeSize(t);
  std::vector<unsigned char> buf(std::max<size_t>(count, 1) * es, 0);
  for (size_t i = 0; i < count; ++i) {
    double v;
    if (t == DataType::kBool) {
      v = (rank * 3 + i) % 3 == 0 ? 1 : 0;
    } else if (op == ReduceOp::kProduct) {
      const int k = static_cast<int>((rank * 5 + i * 3) % 4);
      v = k == 3 ? (t == DataType::kUInt8 ? 1 : -1) : (k == 1 ? 2 : 1);
    } else {
      v = static_cast<double>((rank * 31 + i * 7) % 11) - (t == DataType::kUInt8 ? 0 : 5);
    }
    StoreAs(t, v, &buf[i * es]);
  }
  return buf;
}

void Compare(const std::string& what, const std::vector<unsigned char>& got,
             const std::vector<unsigned char>& want, size_t bytes) {
  // memcmp of zero bytes may get null pointers (empty vectors): UBSan's error.
  if (got.size() < bytes || want.size() < bytes ||
      (bytes > 0 && std::memcmp(got.data(), want.data(), bytes) != 0)) {
    Fail(what + ": the GPU tensor's result differs from the host tensor's");
  }
}

int64_t Wait(int64_t h) {
  C_OK([&](cohort_error* e) { return cohort_wait(h, 60, e); });
  return h;
}

std::string Name(const std::string& base, DataType t, int op, const char* side) {
  return base + "." + DataTypeName(t) + "." + std::to_string(op) + "." + side;
}

void CheckAllreduce(Caller& c, DataType t, ReduceOp op, size_t count, double pre, double post,
                    bool in_place, int set) {
  const size_t bytes = count * DataTypeSize(t);
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  const std::vector<unsigned char> input = Fill(t, op, count, g_rank);
  const cohort_allreduce_options o{static_cast<int>(op), pre, post, COHORT_COMPRESSION_NONE, set};
  std::vector<unsigned char> want = input;
  const std::string base =
      "ar" + std::to_string(count) + (in_place ? "i" : "") + "s" + std::to_string(set);
  int64_t h = 0;
  C_OK([&](cohort_error* e) {
    return cohort_allreduce_async(Name(base, t, int(op), "host").c_str(), input.data(), want.data(),
                                  shape, 1, static_cast<int>(t), &o, &h, e);
  });
  Wait(h);
  cohort_release(h);
  const DevicePtr send = c.Upload(input);
  const DevicePtr recv = in_place ? send : c.Alloc(bytes);
  const cohort_device d = c.device();
  C_OK([&](cohort_error* e) {
    return cohort_allreduce_async_on_device(Name(base, t, int(op), "gpu").c_str(), AsPointer(send),
                                            AsPointer(recv), shape, 1, static_cast<int>(t), &o, &d,
                                            &h, e);
  });
  C_OK([&](cohort_error* e) { return cohort_synchronize_on_stream(h, c.stream(), 60, e); });
  Compare("allreduce " + Name(base, t, int(op), "gpu"), c.Download(recv, bytes), want, bytes);
  cohort_release(h);
}

// Several tensors negotiated as one group: fused into the GPU fusion buffer.
void CheckGrouped(Caller& c, DataType t, ReduceOp op) {
  const int n = 4;
  const int64_t counts[n] = {3, 1, 17, 8};
  const cohort_allreduce_options o{static_cast<int>(op), 1.0, 1.0, COHORT_COMPRESSION_NONE, 0};
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  std::vector<std::vector<unsigned char>> inputs, wants;
  std::vector<const void*> host_sends, gpu_sends;
  std::vector<void*> host_recvs, gpu_recvs;
  std::vector<const int64_t*> shapes;
  std::vector<int> ndims(n, 1);
  for (int i = 0; i < n; ++i) {
    inputs.push_back(Fill(t, op, counts[i] + i, g_rank));
    inputs.back().resize(counts[i] * DataTypeSize(t));
    wants.push_back(inputs.back());
    shapes.push_back(&counts[i]);
  }
  for (int i = 0; i < n; ++i) {
    host_sends.push_back(inputs[i].data());
    host_recvs.push_back(wants[i].data());
    const DevicePtr p = c.Upload(inputs[i]);
    gpu_sends.push_back(AsPointer(p));
    gpu_recvs.push_back(AsPointer(c.Alloc(inputs[i].size())));
  }
  for (const char* side : {"host", "gpu"}) {
    names.clear();
    name_ptrs.clear();
    for (int i = 0; i < n; ++i)
      names.push_back(Name("group" + std::to_string(i), t, int(op), side));
    for (const std::string& s : names) name_ptrs.push_back(s.c_str());
    std::vector<int64_t> handles(n);
    const bool gpu = side[0] == 'g';
    const cohort_device d = c.device();
    C_OK([&](cohort_error* e) {
      return cohort_grouped_allreduce_async_on_device(
          n, name_ptrs.data(), gpu ? gpu_sends.data() : host_sends.data(),
          gpu ? gpu_recvs.data() : host_recvs.data(), shapes.data(), ndims.data(),
          static_cast<int>(t), &o, gpu ? &d : nullptr, handles.data(), e);
    });
    for (int64_t h : handles) {
      Wait(h);  // a GPU tensor's: until the device ran it
      cohort_release(h);
    }
  }
  for (int i = 0; i < n; ++i) {
    Compare("grouped allreduce " + names[i], c.Download(AsDevicePtr(gpu_recvs[i]), wants[i].size()),
            wants[i], wants[i].size());
  }
}

void CheckBroadcast(Caller& c, DataType t, size_t count, int root) {
  const size_t bytes = count * DataTypeSize(t);
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  std::vector<unsigned char> host = Fill(t, ReduceOp::kSum, count, g_rank);
  const DevicePtr buf = c.Upload(host);
  const std::string base = "bc" + std::to_string(count) + "r" + std::to_string(root);
  int64_t h = 0;
  C_OK([&](cohort_error* e) {
    return cohort_broadcast_async(Name(base, t, 0, "host").c_str(), host.data(), shape, 1,
                                  static_cast<int>(t), root, 0, &h, e);
  });
  Wait(h);
  cohort_release(h);
  const cohort_device d = c.device();
  C_OK([&](cohort_error* e) {
    return cohort_broadcast_async_on_device(Name(base, t, 0, "gpu").c_str(), AsPointer(buf), shape,
                                            1, static_cast<int>(t), root, 0, &d, &h, e);
  });
  C_OK([&](cohort_error* e) { return cohort_synchronize_on_stream(h, c.stream(), 60, e); });
  Compare("broadcast " + base, c.Download(buf, bytes), host, bytes);
  cohort_release(h);
}

// Rank r contributes r + 1 rows of 3 (uneven).
void CheckAllgather(Caller& c, DataType t, int size) {
  const int64_t shape[2] = {g_rank + 1, 3};
  const size_t es = DataTypeSize(t);
  const std::vector<unsigned char> input = Fill(t, ReduceOp::kSum, (g_rank + 1) * 3, g_rank);
  const size_t out_elements = static_cast<size_t>(size * (size + 1) / 2 * 3);
  std::vector<unsigned char> want(out_elements * es);
  int64_t h = 0;
  C_OK([&](cohort_error* e) {
    return cohort_allgather_into_async(Name("ag", t, 0, "host").c_str(), input.data(), shape, 2,
                                       static_cast<int>(t), want.data(), out_elements, 0, &h, e);
  });
  Wait(h);
  cohort_release(h);
  const DevicePtr send = c.Upload(input);
  const DevicePtr recv = c.Alloc(want.size());
  const cohort_device d = c.device();
  C_OK([&](cohort_error* e) {
    return cohort_allgather_into_async_on_device(Name("ag", t, 0, "gpu").c_str(), AsPointer(send),
                                                 shape, 2, static_cast<int>(t), AsPointer(recv),
                                                 out_elements, 0, &d, &h, e);
  });
  C_OK([&](cohort_error* e) { return cohort_synchronize_on_stream(h, c.stream(), 60, e); });
  cohort_result* result = nullptr;
  C_OK([&](cohort_error* e) { return cohort_take_result(h, &result, e); });
  if (cohort_result_ndim(result) != 2 || cohort_result_shape(result)[0] != size * (size + 1) / 2 ||
      cohort_result_bytes(result) != 0) {
    Fail(std::string("allgather of GPU tensors: wrong result shape for ") + DataTypeName(t));
  }
  cohort_result_free(result);
  Compare(std::string("allgather ") + DataTypeName(t), c.Download(recv, want.size()), want,
          want.size());
  cohort_release(h);
}

// 2 * size + 1 rows of 2, an even split: rank r receives its rows.
void CheckReduceScatter(Caller& c, DataType t, ReduceOp op, int size) {
  const int64_t rows = 2 * size + 1;
  const int64_t shape[2] = {rows, 2};
  const size_t es = DataTypeSize(t);
  const std::vector<unsigned char> input = Fill(t, op, rows * 2, g_rank);
  const int64_t my_rows = rows / size + (g_rank < rows % size ? 1 : 0);
  const size_t out_elements = static_cast<size_t>(my_rows * 2);
  std::vector<unsigned char> want(out_elements * es);
  int64_t h = 0;
  C_OK([&](cohort_error* e) {
    return cohort_reducescatter_into_async(
        Name("rs", t, int(op), "host").c_str(), input.data(), shape, 2, static_cast<int>(t),
        static_cast<int>(op), nullptr, 0, 0, 1.0, 1.0, want.data(), out_elements, &h, e);
  });
  Wait(h);
  cohort_release(h);
  const DevicePtr send = c.Upload(input);
  const DevicePtr recv = c.Alloc(want.size());
  const cohort_device d = c.device();
  C_OK([&](cohort_error* e) {
    return cohort_reducescatter_into_async_on_device(
        Name("rs", t, int(op), "gpu").c_str(), AsPointer(send), shape, 2, static_cast<int>(t),
        static_cast<int>(op), nullptr, 0, 0, 1.0, 1.0, AsPointer(recv), out_elements, &d, &h, e);
  });
  C_OK([&](cohort_error* e) { return cohort_synchronize_on_stream(h, c.stream(), 60, e); });
  Compare(std::string("reducescatter ") + DataTypeName(t) + " " + ReduceOpName(op),
          c.Download(recv, want.size()), want, want.size());
  cohort_release(h);
}

int CheckMode(CudaApi& api, int device, bool nccl) {
  Caller c(api, device);
  const int size = cohort_size();
  cohort_engine_stats before{}, after{};
  for (int ti = 0; ti < kNumDataTypes; ++ti) {
    const DataType t = static_cast<DataType>(ti);
    for (ReduceOp op :
         {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}}) {
        CheckAllreduce(c, t, op, count, 1.0, 1.0, false, 0);
      }
      if (op == ReduceOp::kSum || op == ReduceOp::kAverage) {
        CheckAllreduce(c, t, op, 7, 0.5, 2.0, true, 0);
      }
      cohort_get_engine_stats(&before);
      CheckGrouped(c, t, op);
      cohort_get_engine_stats(&after);
      // Host and GPU groups: each fused once (never with each other).
      if (after.fused_allreduces - before.fused_allreduces != 2) {
        Fail(std::string("grouped allreduce of ") + DataTypeName(t) + ": " +
             std::to_string(after.fused_allreduces - before.fused_allreduces) +
             " fused allreduces, expected 2 (host, GPU)");
      }
      CheckReduceScatter(c, t, op, size);
    }
    if (t == DataType::kFloat32 || t == DataType::kFloat64) {
      CheckAllreduce(c, t, ReduceOp::kAdasum, 33, 1.0, 1.0, false, 0);
    }
    for (int root = 0; root < size; ++root) CheckBroadcast(c, t, 13, root);
    CheckAllgather(c, t, size);
  }
  if (!nccl && size > 2) {
    // A process set of the even ranks: GPU collectives of its own.
    std::vector<int> even;
    for (int r = 0; r < size; r += 2) even.push_back(r);
    int set = -1;
    C_OK([&](cohort_error* e) {
      return cohort_add_process_set(even.data(), static_cast<int>(even.size()), &set, e);
    });
    if (g_rank % 2 == 0) {
      for (DataType t : {DataType::kFloat32, DataType::kInt64}) {
        CheckAllreduce(c, t, ReduceOp::kSum, 100, 1.0, 1.0, false, set);
      }
    }
    C_OK([&](cohort_error* e) { return cohort_remove_process_set(set, e); });
  }
  if (g_failures > 0) return 1;
  std::printf("rank %d: every GPU tensor through the engine equals the host path\n", g_rank);
  return 0;
}

// Expects the call to fail with `code` and a message containing `part`.
void ExpectError(const std::string& what, const std::function<int(cohort_error*)>& call, int code,
                 const std::string& part) {
  cohort_error err{};
  const int got = call(&err);
  if (got != code || std::string(err.message).find(part) == std::string::npos) {
    Fail(what + ": got code " + std::to_string(got) + " '" + err.message + "', expected code " +
         std::to_string(code) + " with '" + part + "'");
  }
}

int RefuseMode(CudaApi& api, int device) {
  Caller c(api, device);
  CheckAllreduce(c, DataType::kFloat32, ReduceOp::kSum, 4, 1.0, 1.0, false, 0);  // on device 0
  const int64_t shape[1] = {4};
  std::vector<float> host(4, 1.0f);
  const DevicePtr dev = c.Upload(std::vector<unsigned char>(16, 0));
  const cohort_allreduce_options o{COHORT_SUM, 1.0, 1.0, COHORT_COMPRESSION_NONE, 0};
  const cohort_device d = c.device();
  int64_t h = 0;
  ExpectError(
      "host buffer as a GPU tensor",
      [&](cohort_error* e) {
        return cohort_allreduce_async_on_device("h", host.data(), host.data(), shape, 1,
                                                COHORT_FLOAT32, &o, &d, &h, e);
      },
      COHORT_ERR_INVALID_ARGUMENT,
      "allreduce of tensor 'h': its input buffer is host memory, not memory of CUDA device " +
          std::to_string(device) + " (host and GPU buffers cannot be mixed in one operation)");
  ExpectError(
      "GPU buffer as a host tensor",
      [&](cohort_error* e) {
        return cohort_allreduce_async("g", AsPointer(dev), AsPointer(dev), shape, 1, COHORT_FLOAT32,
                                      &o, &h, e);
      },
      COHORT_ERR_INVALID_ARGUMENT,
      "allreduce of tensor 'g': its buffer is memory of CUDA device " + std::to_string(device) +
          " but was submitted as a host tensor (pass its device and stream)");
  const cohort_device other{device + 1, nullptr};
  ExpectError(
      "a second device",
      [&](cohort_error* e) {
        return cohort_allreduce_async_on_device("d1", AsPointer(dev), AsPointer(dev), shape, 1,
                                                COHORT_FLOAT32, &o, &other, &h, e);
      },
      COHORT_ERR_INVALID_ARGUMENT,
      "allreduce of tensor 'd1' on CUDA device " + std::to_string(device + 1) +
          ": this rank's GPU tensors are on CUDA device " + std::to_string(device) +
          "; a rank uses one device");
  const int64_t rs_shape[1] = {2 * cohort_size()};
  const DevicePtr rs = c.Upload(std::vector<unsigned char>(8 * cohort_size(), 0));
  ExpectError(
      "a reduce-scatter of GPU tensors with scale factors",
      [&](cohort_error* e) {
        return cohort_reducescatter_into_async_on_device("rs", AsPointer(rs), rs_shape, 1,
                                                         COHORT_FLOAT32, COHORT_SUM, nullptr, 0, 0,
                                                         0.5, 1.0, AsPointer(rs), 2, &d, &h, e);
      },
      COHORT_ERR_INVALID_ARGUMENT,
      "reducescatter of tensor 'rs' on CUDA device " + std::to_string(device) +
          ": scale factors of a reduce-scatter of GPU tensors are not supported (scale the tensor "
          "before and after)");
  // Ranks that disagree on where the tensor is: a mismatch on every rank.
  int64_t mixed = 0;
  std::vector<float> mine(4, 1.0f);
  const DevicePtr gpu_buf = c.Upload(std::vector<unsigned char>(16, 0));
  C_OK([&](cohort_error* e) {
    return g_rank == 0
               ? cohort_allreduce_async_on_device("mixed", AsPointer(gpu_buf), AsPointer(gpu_buf),
                                                  shape, 1, COHORT_FLOAT32, &o, &d, &mixed, e)
               : cohort_allreduce_async("mixed", mine.data(), mine.data(), shape, 1, COHORT_FLOAT32,
                                        &o, &mixed, e);
  });
  ExpectError(
      "ranks disagreeing on host or GPU",
      [&](cohort_error* e) { return cohort_wait(mixed, 60, e); }, COHORT_ERR_MISMATCH,
      "tensor 'mixed': ranks disagree on the memory the tensor is in: rank 0: GPU; ");
  cohort_release(mixed);
  if (g_failures > 0) return 1;
  std::printf("rank %d: every refusal as expected\n", g_rank);
  return 0;
}

// COHORT_CUDA_LIBRARY_PATH: the (empty) folder searched first.
int MissingMode() {
  const char* folder = std::getenv("COHORT_CUDA_LIBRARY_PATH");
  const std::string first = folder != nullptr ? std::string(folder) + "/" : "";
  const int64_t shape[1] = {4};
  std::vector<float> buf(4, 1.0f);
  const cohort_allreduce_options o{COHORT_SUM, 1.0, 1.0, COHORT_COMPRESSION_NONE, 0};
  const cohort_device d{0, nullptr};
  int64_t h = 0;
  ExpectError(
      "a GPU tensor without a driver",
      [&](cohort_error* e) {
        return cohort_allreduce_async_on_device("x", buf.data(), buf.data(), shape, 1,
                                                COHORT_FLOAT32, &o, &d, &h, e);
      },
      COHORT_ERR_NOT_INITIALIZED,
      "allreduce of tensor 'x' on CUDA device 0: CUDA driver not found (tried " + first +
          "libcuda.so.1: cannot open shared object file: No such file or directory; ");
  // Host tensors are unaffected.
  C_OK([&](cohort_error* e) {
    return cohort_allreduce_async("y", buf.data(), buf.data(), shape, 1, COHORT_FLOAT32, &o, &h, e);
  });
  Wait(h);
  cohort_release(h);
  if (buf[0] != static_cast<float>(cohort_size())) Fail("host allreduce after the GPU error");
  if (cohort_cuda_built() != 1) Fail("cohort_cuda_built() is not 1");
  if (g_failures > 0) return 1;
  std::printf("rank %d: the missing driver is named\n", g_rank);
  return 0;
}

int Main(int argc, char** argv) {
  bool gpu_per_rank = false, nccl = false, real = false;
  std::string mode;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu-per-rank") {
      gpu_per_rank = true;
    } else if (a == "--nccl") {
      nccl = true;
    } else if (a == "--api") {
      real = i + 1 < argc && std::string(argv[++i]) == "real";
    } else {
      mode = a;
    }
  }
  C_OK(cohort_init);
  g_rank = cohort_rank();
  int rc = 2;
  if (mode == "missing") {
    rc = MissingMode();
  } else if (real) {
    // The runtime's own provider: the GPU stack found on this machine.
    Runtime* rt = RunningRuntime();
    Result<GpuDeps> deps = rt != nullptr ? rt->gpu_provider().Deps() : Status::NotInitialized("");
    Result<int> devices = deps.ok() ? deps->api->DeviceCount() : Result<int>(deps.status());
    if (!devices.ok() || *devices < 1) {
      std::fprintf(stderr, "rank %d: no GPU: %s\n", g_rank,
                   devices.ok() ? "no CUDA device" : devices.status().ToString().c_str());
      return 1;
    }
    const int device = gpu_per_rank ? rt->comm().mesh().local_rank % *devices : 0;
    if (mode == "check") rc = CheckMode(*deps->api, device, nccl);
    if (mode == "refuse") rc = RefuseMode(*deps->api, device);
  } else {
    Runtime* rt = RunningRuntime();
    Result<GpuStackOptions> options = GpuStackOptionsFromEnv(ProcessEnv());
    if (rt == nullptr || !options.ok()) return 2;
    testing::FakeCudaOptions fake;
    const std::string host = rt->comm().mesh().peers[g_rank].host_key;
    fake.gpu_id = "fake-" + std::to_string(std::hash<std::string>()(host) % 100000) +
                  (gpu_per_rank ? "-rank" + std::to_string(g_rank) : "");
    auto provider =
        std::make_unique<testing::FakeGpuProvider>(fake, nccl ? &rt->comm() : nullptr, *options);
    testing::FakeCuda& cuda = provider->cuda();
    if (!rt->SetGpuProvider(std::move(provider)).ok()) return 2;
    if (mode == "check") rc = CheckMode(cuda, 0, nccl);
    if (mode == "refuse") rc = RefuseMode(cuda, 0);
  }
  C_OK(cohort_shutdown);
  return rc;
}

}  // namespace
}  // namespace cohort::gpu

int main(int argc, char** argv) { return cohort::gpu::Main(argc, argv); }
