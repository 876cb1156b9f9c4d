// Worker for the multi-process GPU collective tests, run under `cohort run`.
// With --api fake (CI: no GPU) it runs over tests/gpu/support's fake CUDA,
// whose device memory is host memory shared between the processes through
// fake IPC handles; with --api real (tools/device-check.sh, on a GPU
// machine) over the CUDA driver, NVRTC and NCCL found at run time. Each mode
// exits 0 only when every check passed.
//
//   gpu_collectives_worker [--api fake|real] [--gpu-per-rank] [--nccl] MODE
//   --gpu-per-rank  fake: every rank has a GPU of its own (else the ranks of
//                   a host share one); real: device = local rank % devices
//   --nccl          fake: an NCCL (over the CPU collectives) is loadable
//
// Modes:
//   check [quick]   every GPU collective x dtype x op (allreduce with and
//                   without pre/post scale, in and out of place; reduce-
//                   scatter; allgather with uneven counts; broadcast from
//                   every root; alltoall) at sizes 0, 1, odd and several IPC
//                   chunks, each equal byte for byte to the CPU collective on
//                   the same inputs over the same communicator. Prints the
//                   transport ("transport: ipc ...").
//   transport       prints the transport and exits.
//   die             the last rank exits during an allreduce; the others must
//                   fail within the timeout with an error naming it.
//   mismatch        rank 1 allreduces another count; every rank must get a
//                   kMismatch.
//   leak            (fake) after collectives, then one that fails (rank 1
//                   passes another count), once the GPU collectives are gone
//                   no device or pinned memory, IPC mapping, stream or event
//                   is left.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "common/value_convert.h"
#include "engine/runtime.h"
#include "gpu/gpu_stack.h"
#include "gpu/transport/gpu_collectives.h"
#include "support/fake_cuda.h"
#include "support/fake_kernel_compiler.h"
#include "support/fake_nccl.h"

namespace cohort::gpu {
namespace {

int g_failures = 0;
int g_rank = 0;

void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what.c_str(), s.ToString().c_str());
  std::exit(1);
}

#define CHECK_OK(expr)                                  \
  do {                                                  \
    Status check_status_ = (expr);                      \
    if (!check_status_.ok()) Die(#expr, check_status_); \
  } while (0)

struct Args {
  bool real = false;
  bool gpu_per_rank = false;
  bool nccl = false;
  std::string mode;
  bool quick = false;
};

// Everything the checks use: the API (fake or real), the collectives, and
// the CPU communicator for the reference results.
struct Setup {
  Communicator* comm = nullptr;
  CudaApi* api = nullptr;
  std::unique_ptr<GpuStack> stack;
  std::unique_ptr<testing::FakeCuda> fake;
  std::unique_ptr<testing::FakeKernelCompiler> fake_compiler;
  std::unique_ptr<testing::FakeNccl> fake_nccl;
  std::unique_ptr<GpuCollectives> gpu;
};

Status Build(Setup& s, Communicator& comm, const Args& args) {
  s.comm = &comm;
  Result<GpuStackOptions> options = GpuStackOptionsFromEnv(ProcessEnv());
  if (!options.ok()) return options.status();
  GpuDeps deps;
  int device = 0;
  if (args.real) {
    s.stack = GpuStack::Load(*options);
    Result<CudaApi*> api = s.stack->driver();
    if (!api.ok()) return api.status();
    Result<KernelCompiler*> compiler = s.stack->compiler();
    if (!compiler.ok()) return compiler.status();
    Result<NcclApi*> nccl = s.stack->nccl();
    deps = GpuDeps{*api, *compiler, nccl.ok() ? *nccl : nullptr,
                   nccl.ok() ? "" : nccl.status().message()};
    Result<int> devices = (*api)->DeviceCount();
    if (!devices.ok()) return devices.status();
    if (*devices < 1) return Status::NotInitialized("no CUDA device");
    device = args.gpu_per_rank ? comm.mesh().local_rank % *devices : 0;
    s.api = *api;
  } else {
    testing::FakeCudaOptions fake;
    const std::string host = comm.mesh().peers[comm.rank()].host_key;
    fake.gpu_id = "fake-" + std::to_string(std::hash<std::string>()(host) % 100000) +
                  (args.gpu_per_rank ? "-rank" + std::to_string(comm.rank()) : "");
    s.fake = std::make_unique<testing::FakeCuda>(fake);
    s.fake_compiler = std::make_unique<testing::FakeKernelCompiler>();
    if (args.nccl) s.fake_nccl = std::make_unique<testing::FakeNccl>(*s.fake, comm);
    deps = GpuDeps{s.fake.get(), s.fake_compiler.get(), s.fake_nccl.get(),
                   args.nccl ? "" : "NCCL not found (fake CUDA without NCCL)"};
    // COHORT_FAKE_GPU_FAIL=<method>@<rank>: that rank's first call fails.
    if (const char* fail = std::getenv("COHORT_FAKE_GPU_FAIL")) {
      const std::string spec = fail;
      const size_t at = spec.find('@');
      if (at != std::string::npos && std::stoi(spec.substr(at + 1)) == comm.rank()) {
        s.fake->FailNext(spec.substr(0, at));
      }
    }
    s.api = s.fake.get();
  }
  Result<std::unique_ptr<GpuCollectives>> gpu =
      GpuCollectives::Create(comm, deps, device, *options);
  if (!gpu.ok()) return gpu.status();
  s.gpu = std::move(*gpu);
  return Status::OK();
}

// Device copies of host data and back, through pinned memory on the
// collectives' stream (so they are ordered with the collectives).
class DeviceData {
 public:
  explicit DeviceData(Setup& s) : s_(s) {}
  ~DeviceData() {
    for (DevicePtr p : owned_) (void)s_.api->Free(p);
  }
  DevicePtr Alloc(size_t bytes) {
    Result<DevicePtr> p = s_.api->Alloc(std::max<size_t>(bytes, 1));
    if (!p.ok()) Die("Alloc", p.status());
    owned_.push_back(*p);
    return *p;
  }
  DevicePtr Upload(const std::vector<unsigned char>& host) {
    const DevicePtr d = Alloc(host.size());
    Copy(d, host.data(), host.size(), true);
    return d;
  }
  void Copy(DevicePtr device, const void* host, size_t bytes, bool to_device) {
    Result<void*> pinned = s_.api->AllocPinned(std::max<size_t>(bytes, 1));
    if (!pinned.ok()) Die("AllocPinned", pinned.status());
    if (to_device) std::memcpy(*pinned, host, bytes);
    CHECK_OK(to_device ? s_.api->CopyAsync(device, AsDevicePtr(*pinned), bytes, s_.gpu->stream())
                       : s_.api->CopyAsync(AsDevicePtr(*pinned), device, bytes, s_.gpu->stream()));
    CHECK_OK(s_.gpu->Synchronize());
    if (!to_device) std::memcpy(const_cast<void*>(host), *pinned, bytes);
    CHECK_OK(s_.api->FreePinned(*pinned));
  }
  std::vector<unsigned char> Download(DevicePtr device, size_t bytes) {
    std::vector<unsigned char> host(bytes);
    Copy(device, host.data(), bytes, false);
    return host;
  }

 private:
  Setup& s_;
  std::vector<DevicePtr> owned_;
};

// Small integers, so every result is exact in every type whatever the
// order of reduction (as in tests/collectives/collectives_worker.cc).
double Input(DataType t, ReduceOp op, int rank, size_t i) {
  const bool is_unsigned = t == DataType::kUInt8;
  if (t == DataType::kBool) return (rank * 3 + i) % 3 == 0 ? 1 : 0;
  if (op == ReduceOp::kProduct) {
    const int v = static_cast<int>((rank * 5 + i * 3) % 4);
    if (v == 3) return is_unsigned ? 1 : -1;
    return v == 1 ? 2 : 1;
  }
  const double v = static_cast<double>((rank * 31 + i * 7) % 11);
  return is_unsigned ? v : v - 5;
}

std::vector<unsigned char> Fill(DataType t, ReduceOp op, size_t count, size_t offset, int rank) {
  const size_t es = DataTypeSize(t);
  std::vector<unsigned char> buf(std::max<size_t>(count, 1) * es, 0);
  for (size_t i = 0; i < count; ++i) StoreAs(t, Input(t, op, rank, offset + i), &buf[i * es]);
  return buf;
}

void Compare(const std::string& what, DataType t, const std::vector<unsigned char>& got,
             const std::vector<unsigned char>& want, size_t count) {
  const size_t es = DataTypeSize(t);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&got[i * es], &want[i * es], es) == 0) continue;
    if (g_failures++ < 5) {
      std::fprintf(stderr, "rank %d: %s %s: element %zu is %g, the CPU path gives %g\n", g_rank,
                   what.c_str(), DataTypeName(t), i, LoadAs(t, &got[i * es]),
                   LoadAs(t, &want[i * es]));
    }
    return;
  }
}

std::vector<size_t> Sizes(DataType t, bool quick, size_t chunk_bytes) {
  std::vector<size_t> sizes = {0, 1, 7, 1001};
  if (!quick) sizes.push_back(5 * chunk_bytes / DataTypeSize(t) / 2 + 3);  // several chunks, odd
  return sizes;
}

void CheckAllreduce(Setup& s, DataType t, ReduceOp op, size_t count, double pre, double post,
                    bool inplace) {
  Communicator& comm = *s.comm;
  const size_t bytes = count * DataTypeSize(t);
  std::vector<unsigned char> input = Fill(t, op, count, 0, comm.rank());
  std::vector<unsigned char> want(input.size());
  CHECK_OK(RunAllreduce(comm, input.data(), want.data(), count, t, op, pre, post));
  DeviceData d(s);
  const DevicePtr send = d.Upload(input);
  const DevicePtr recv = inplace ? send : d.Alloc(bytes);
  CHECK_OK(s.gpu->Allreduce(send, recv, count, t, op, pre, post));
  Compare(std::string("allreduce ") + ReduceOpName(op) + (inplace ? " in place" : "") + " count " +
              std::to_string(count) + " pre " + std::to_string(pre),
          t, d.Download(recv, std::max<size_t>(bytes, 1)), want, count);
}

void CheckReduceScatter(Setup& s, DataType t, ReduceOp op, size_t count) {
  Communicator& comm = *s.comm;
  const int n = comm.size(), r = comm.rank();
  std::vector<size_t> counts(n);
  size_t total = 0;
  for (int b = 0; b < n; ++b) total += counts[b] = count + (count > 0 ? b : 0);
  std::vector<unsigned char> input = Fill(t, op, total, 0, r);
  std::vector<unsigned char> want(std::max<size_t>(counts[r], 1) * DataTypeSize(t));
  CHECK_OK(RunReduceScatter(comm, input.data(), want.data(), counts.data(), t, op));
  DeviceData d(s);
  const DevicePtr send = d.Upload(input);
  const DevicePtr recv = d.Alloc(want.size());
  CHECK_OK(s.gpu->ReduceScatter(send, recv, counts, t, op));
  Compare(std::string("reducescatter ") + ReduceOpName(op) + " count " + std::to_string(count), t,
          d.Download(recv, want.size()), want, counts[r]);
  // Equal counts: the path NCCL takes.
  std::vector<size_t> equal(n, count);
  std::vector<unsigned char> even_input = Fill(t, op, count * n, 0, r);
  std::vector<unsigned char> even_want(std::max<size_t>(count, 1) * DataTypeSize(t));
  CHECK_OK(RunReduceScatter(comm, even_input.data(), even_want.data(), equal.data(), t, op));
  const DevicePtr even_send = d.Upload(even_input);
  const DevicePtr even_recv = d.Alloc(even_want.size());
  CHECK_OK(s.gpu->ReduceScatter(even_send, even_recv, equal, t, op));
  Compare("reducescatter (equal counts)", t, d.Download(even_recv, even_want.size()), even_want,
          count);
}

void CheckAllgather(Setup& s, DataType t, size_t count, bool uneven) {
  Communicator& comm = *s.comm;
  const int n = comm.size(), r = comm.rank();
  std::vector<size_t> counts(n);
  size_t total = 0;
  for (int p = 0; p < n; ++p) total += counts[p] = uneven && p % 2 == 1 ? count / 2 + p : count;
  std::vector<unsigned char> input = Fill(t, ReduceOp::kSum, counts[r], 1000 * r, r);
  std::vector<unsigned char> want(std::max<size_t>(total, 1) * DataTypeSize(t));
  CHECK_OK(RunAllgather(comm, input.data(), counts[r], want.data(), counts.data(), t));
  DeviceData d(s);
  const DevicePtr send = d.Upload(input);
  const DevicePtr recv = d.Alloc(want.size());
  CHECK_OK(s.gpu->Allgather(send, recv, counts, t));
  Compare(
      std::string("allgather") + (uneven ? " (uneven)" : "") + " count " + std::to_string(count), t,
      d.Download(recv, want.size()), want, total);
}

void CheckBroadcast(Setup& s, DataType t, size_t count, int root) {
  Communicator& comm = *s.comm;
  std::vector<unsigned char> data = Fill(t, ReduceOp::kSum, count, 0, comm.rank());
  std::vector<unsigned char> want = data;
  CHECK_OK(RunBroadcast(comm, want.data(), count, t, root));
  DeviceData d(s);
  const DevicePtr buf = d.Upload(data);
  CHECK_OK(s.gpu->Broadcast(buf, count, t, root));
  Compare("broadcast from " + std::to_string(root), t, d.Download(buf, data.size()), want, count);
}

void CheckAlltoall(Setup& s, DataType t, size_t count) {
  Communicator& comm = *s.comm;
  const int n = comm.size(), r = comm.rank();
  std::vector<size_t> send_counts(n), recv_counts(n);
  size_t in = 0, out = 0;
  for (int p = 0; p < n; ++p) {
    in += send_counts[p] = count + r + p;
    out += recv_counts[p] = count + p + r;
  }
  std::vector<unsigned char> input = Fill(t, ReduceOp::kSum, in, 0, r);
  std::vector<unsigned char> want(std::max<size_t>(out, 1) * DataTypeSize(t));
  CHECK_OK(RunAlltoall(comm, input.data(), send_counts.data(), want.data(), recv_counts.data(), t));
  DeviceData d(s);
  const DevicePtr send = d.Upload(input);
  const DevicePtr recv = d.Alloc(want.size());
  CHECK_OK(s.gpu->Alltoall(send, send_counts, recv, recv_counts, t));
  Compare("alltoall", t, d.Download(recv, want.size()), want, out);
}

int Check(Setup& s, bool quick) {
  std::printf("rank %d transport: %s\n", s.comm->rank(), s.gpu->Describe().c_str());
  Result<GpuStackOptions> options = GpuStackOptionsFromEnv(ProcessEnv());
  if (!options.ok()) Die("GpuStackOptionsFromEnv", options.status());
  const size_t chunk = options->buffer_bytes / 2;
  for (int ti = 0; ti < kNumDataTypes; ++ti) {
    const DataType t = static_cast<DataType>(ti);
    for (size_t count : Sizes(t, quick, chunk)) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProduct}) {
        CheckAllreduce(s, t, op, count, 1.0, 1.0, false);
        if (op == ReduceOp::kSum || op == ReduceOp::kAverage) {
          CheckAllreduce(s, t, op, count, 0.5, 2.0, true);
        }
        CheckReduceScatter(s, t, op, count);
      }
      if (IsFloatingPoint(t) && t != DataType::kFloat16 && t != DataType::kBFloat16 &&
          count < 2000) {
        CheckAllreduce(s, t, ReduceOp::kAdasum, count, 1.0, 1.0, false);
      }
      CheckAllgather(s, t, count, false);
      CheckAllgather(s, t, count, true);
      for (int root = 0; root < s.comm->size(); ++root) CheckBroadcast(s, t, count, root);
      CheckAlltoall(s, t, count);
    }
  }
  if (g_failures > 0) {
    std::fprintf(stderr, "rank %d: %d GPU results differ from the CPU path\n", g_rank, g_failures);
    return 1;
  }
  std::printf("rank %d: every GPU collective equals the CPU path\n", g_rank);
  return 0;
}

// The last rank exits after the collectives are set up, while the others
// start an allreduce; they must fail, naming it.
int DieMode(Setup& s) {
  Communicator& comm = *s.comm;
  const int last = comm.size() - 1;
  DeviceData d(s);
  const size_t count = 1 << 16;
  const DevicePtr buf = d.Upload(Fill(DataType::kFloat32, ReduceOp::kSum, count, 0, comm.rank()));
  if (comm.rank() == last) raise(SIGKILL);  // a crash: no goodbye to anyone
  Status st = s.gpu->Allreduce(buf, buf, count, DataType::kFloat32, ReduceOp::kSum);
  if (st.ok()) st = s.gpu->Synchronize();
  if (st.ok()) {
    std::fprintf(stderr, "rank %d: allreduce with a dead peer succeeded\n", comm.rank());
    return 1;
  }
  const std::string named = "rank " + std::to_string(last);
  std::printf("rank %d failed as expected: %s\n", comm.rank(), st.ToString().c_str());
  if (st.message().find(named) == std::string::npos) {
    std::fprintf(stderr, "rank %d: the error does not name %s\n", comm.rank(), named.c_str());
    return 1;
  }
  return 0;
}

int MismatchMode(Setup& s) {
  Communicator& comm = *s.comm;
  const size_t count = comm.rank() == 1 ? 300 : 200;
  DeviceData d(s);
  const DevicePtr buf = d.Alloc(300 * 4);
  Status st = s.gpu->Allreduce(buf, buf, count, DataType::kFloat32, ReduceOp::kSum);
  if (st.ok()) st = s.gpu->Synchronize();
  std::printf("rank %d: %s\n", comm.rank(), st.ToString().c_str());
  return st.code() == Status::Code::kMismatch ? 0 : 1;
}

int LeakMode(Setup& s, const Args& args) {
  if (args.real) {
    std::fprintf(stderr, "leak mode needs --api fake (it reads the fake's counters)\n");
    return 2;
  }
  {
    DeviceData d(s);
    const DevicePtr buf = d.Upload(Fill(DataType::kInt32, ReduceOp::kSum, 5000, 0, 0));
    CHECK_OK(s.gpu->Allreduce(buf, buf, 5000, DataType::kInt32, ReduceOp::kSum));
    std::vector<size_t> counts(s.comm->size(), 100);
    CHECK_OK(s.gpu->Allgather(buf, buf + 4 * 4000, counts, DataType::kInt8));
    CHECK_OK(s.gpu->Synchronize());
    const size_t count = s.comm->rank() == 1 ? 3000 : 2000;
    Status failed = s.gpu->Allreduce(buf, buf, count, DataType::kInt32, ReduceOp::kSum);
    if (failed.code() != Status::Code::kMismatch) Die("the mismatched allreduce", failed);
  }
  s.gpu.reset();
  const testing::FakeCuda::Counts c = s.fake->counts();
  std::printf(
      "rank %d after shutdown: %zu device allocations, %zu pinned, %zu IPC mappings, %zu "
      "streams, %zu events, %zu launches\n",
      s.comm->rank(), c.device_allocations, c.pinned_allocations, c.ipc_mappings, c.streams,
      c.events, c.launches);
  const bool clean = c.device_allocations == 0 && c.pinned_allocations == 0 &&
                     c.ipc_mappings == 0 && c.streams == 0 && c.events == 0;
  return clean ? 0 : 1;
}

int Main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--api" && i + 1 < argc) {
      args.real = std::string(argv[++i]) == "real";
    } else if (a == "--gpu-per-rank") {
      args.gpu_per_rank = true;
    } else if (a == "--nccl") {
      args.nccl = true;
    } else if (a == "quick") {
      args.quick = true;
    } else if (args.mode.empty()) {
      args.mode = a;
    } else {
      std::fprintf(stderr, "unexpected argument %s\n", a.c_str());
      return 2;
    }
  }
  Result<std::unique_ptr<Runtime>> rt = Runtime::Start(ProcessEnv());
  if (!rt.ok()) Die("Runtime::Start", rt.status());
  Communicator& comm = (*rt)->comm();
  g_rank = comm.rank();
  Setup s;
  Status built = Build(s, comm, args);
  if (!built.ok()) {
    std::printf("rank %d: GPU collectives not available: %s\n", g_rank, built.ToString().c_str());
    std::fflush(stdout);
    // Every rank reports before any exits (`cohort run` stops the others
    // at the first failure); a broken communicator fails this at once.
    (void)RunBarrier(comm);
    return args.mode == "transport" ? 0 : 1;
  }
  if (args.mode == "transport") {
    std::printf("rank %d transport: %s\n", g_rank, s.gpu->Describe().c_str());
    return 0;
  }
  if (args.mode == "check") return Check(s, args.quick);
  if (args.mode == "die") return DieMode(s);
  if (args.mode == "mismatch") return MismatchMode(s);
  if (args.mode == "leak") return LeakMode(s, args);
  std::fprintf(stderr, "unknown mode '%s'\n", args.mode.c_str());
  return 2;
}

}  // namespace
}  // namespace cohort::gpu

int main(int argc, char** argv) { return cohort::gpu::Main(argc, argv); }
