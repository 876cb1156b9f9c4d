// GPU allreduce benchmark, run under `cohort run -np N` on a GPU machine
// (tools/device-check.sh runs it for the IPC and staged transports):
// nccl-tests' columns (size, time, algbw, busbw, wrong) for sizes from 4 KiB
// to 1 GiB, and beside them the device-to-device copy bandwidth measured in
// the same process (one rank copying one buffer to another on its GPU), the
// yardstick docs/performance.md compares against.
//
//   gpu_collectives_bench [--min BYTES] [--max BYTES] [--iters N]
//   COHORT_GPU_TRANSPORT picks the transport (ipc, staged, nccl, auto).
//
// Time per size: the median over iterations of one allreduce plus
// GpuCollectives::Synchronize (the host waits for the device), after
// warm-up. busbw = algbw * 2 (n-1) / n. "wrong" counts elements of the last
// result that differ from the exact sum (inputs are small integers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "engine/runtime.h"
#include "gpu/device_memory.h"
#include "gpu/gpu_stack.h"
#include "gpu/transport/gpu_collectives.h"

namespace cohort::gpu {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "gpu_collectives_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  size_t min_bytes = 4 << 10, max_bytes = size_t{1} << 30;
  int max_iters = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    Result<uint64_t> value = ParseByteSize(argv[i + 1]);
    if (!value.ok()) return Fail(flag, value.status());
    if (flag == "--min") min_bytes = *value;
    if (flag == "--max") max_bytes = *value;
    if (flag == "--iters") max_iters = static_cast<int>(*value);
  }
  Result<std::unique_ptr<Runtime>> rt = Runtime::Start(ProcessEnv());
  if (!rt.ok()) return Fail("Runtime::Start", rt.status());
  Communicator& comm = (*rt)->comm();
  Result<GpuStackOptions> options = GpuStackOptionsFromEnv(ProcessEnv());
  if (!options.ok()) return Fail("settings", options.status());
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*options);
  Result<CudaApi*> api = stack->driver();
  if (!api.ok()) return Fail("CUDA driver", api.status());
  Result<KernelCompiler*> compiler = stack->compiler();
  if (!compiler.ok()) return Fail("NVRTC", compiler.status());
  Result<NcclApi*> nccl = stack->nccl();
  Result<int> devices = (*api)->DeviceCount();
  if (!devices.ok()) return Fail("devices", devices.status());
  const int device = comm.mesh().local_rank % std::max(1, *devices);
  GpuDeps deps{*api, *compiler, nccl.ok() ? *nccl : nullptr,
               nccl.ok() ? "" : nccl.status().message()};
  Result<std::unique_ptr<GpuCollectives>> gpu =
      GpuCollectives::Create(comm, deps, device, *options);
  if (!gpu.ok()) return Fail("GPU collectives", gpu.status());
  GpuCollectives& g = **gpu;
  CudaApi& cuda = **api;
  const int n = comm.size();
  if (comm.rank() == 0) {
    std::printf("# %s\n# %d ranks; transport %s\n", (*api)->Describe().c_str(), n,
                g.Describe().c_str());
    std::printf("# %12s %10s %12s %10s %10s %8s %14s %10s\n", "bytes", "transport", "time_us",
                "algbw_GBs", "busbw_GBs", "wrong", "d2d_copy_us", "d2d_GBs");
  }
  Result<DeviceBuffer> send = DeviceBuffer::Allocate(cuda, max_bytes);
  Result<DeviceBuffer> recv = DeviceBuffer::Allocate(cuda, max_bytes);
  Result<PinnedBuffer> host = PinnedBuffer::Allocate(cuda, max_bytes);
  if (!send.ok() || !recv.ok() || !host.ok()) {
    return Fail("buffers", !send.ok() ? send.status() : !recv.ok() ? recv.status() : host.status());
  }
  // Input: rank + 1 everywhere (int32), so the sum is n (n + 1) / 2 exactly.
  int32_t* h = static_cast<int32_t*>(host->data());
  for (size_t i = 0; i < max_bytes / 4; ++i) h[i] = comm.rank() + 1;
  Status s = cuda.CopyAsync(send->ptr(), host->device_ptr(), max_bytes, g.stream());
  if (s.ok()) s = g.Synchronize();
  if (!s.ok()) return Fail("upload", s);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / 4;
    const int iters = static_cast<int>(
        std::clamp<size_t>((size_t{8} << 30) / bytes / n, 5, static_cast<size_t>(max_iters)));
    std::vector<double> times, copies;
    for (int it = -2; it < iters; ++it) {  // two warm-up rounds
      const auto t0 = std::chrono::steady_clock::now();
      s = g.Allreduce(send->ptr(), recv->ptr(), count, DataType::kInt32, ReduceOp::kSum);
      if (s.ok()) s = g.Synchronize();
      if (!s.ok()) return Fail("allreduce of " + std::to_string(bytes) + " bytes", s);
      const auto t1 = std::chrono::steady_clock::now();
      s = cuda.CopyAsync(recv->ptr(), send->ptr(), bytes, g.stream());
      if (s.ok()) s = g.Synchronize();
      if (!s.ok()) return Fail("device copy", s);
      const auto t2 = std::chrono::steady_clock::now();
      if (it < 0) continue;
      times.push_back(std::chrono::duration<double>(t1 - t0).count());
      copies.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    // One more allreduce to check.
    s = g.Allreduce(send->ptr(), recv->ptr(), count, DataType::kInt32, ReduceOp::kSum);
    if (s.ok()) s = cuda.CopyAsync(host->device_ptr(), recv->ptr(), bytes, g.stream());
    if (s.ok()) s = g.Synchronize();
    if (!s.ok()) return Fail("checking the result", s);
    const int32_t want = n * (n + 1) / 2;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += h[i] != want;
    for (size_t i = 0; i < count; ++i) h[i] = comm.rank() + 1;  // restore the input pattern
    const double t = Median(times), c = Median(copies);
    const double algbw = bytes / t / 1e9;
    if (comm.rank() == 0) {
      std::printf("  %12zu %10s %12.1f %10.2f %10.2f %8zu %14.1f %10.2f\n", bytes,
                  GpuTransportName(g.TransportForReduction(DataType::kInt32, ReduceOp::kSum)),
                  t * 1e6, algbw, algbw * 2.0 * (n - 1) / n, wrong, c * 1e6, bytes / c / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace cohort::gpu

int main(int argc, char** argv) { return cohort::gpu::Main(argc, argv); }
