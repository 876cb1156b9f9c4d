// Checks that need a real GPU, as a plain program (the minimal build on the
// GPU machine has no gtest; tools/device-check.sh runs it there, ctest runs
// it everywhere). Without a driver or a device it prints why and exits 77,
// which ctest reports as skipped.
//
//   1. the stack: driver, NVRTC (and NCCL when present) load and describe
//      themselves; a device pointer reports its device, pinned memory none
//   2. every reduction kernel compiles with NVRTC for this device, and a
//      second cache over the same folder loads them all from disk
//   3. every kernel on the device equals the host build of the same source
//      bit for bit (and so the CPU kernels, tests/gpu/gpu_reduce_kernels_test.cc),
//      for every dtype x op, 1, 2, 3 and 17 inputs, with and without
//      pre/post scale and the average's division, on random bit patterns
//      (infinities and subnormals included), except that a NaN may come out
//      as another NaN (a GPU's arithmetic returns its canonical NaN where the
//      CPU propagates an input's payload and sign)
//   4. stream ordering: a caller stream busy with a long kernel; the engine
//      work ordered after it (StreamOrdering::Enter) sees its result, and
//      the caller's next work (Join) sees the engine's
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "common/env_config.h"
#include "common/value_convert.h"
#include "gpu/device_memory.h"
#include "gpu/device_reduce.h"
#include "gpu/gpu_stack.h"
#include "gpu/kernel_cache.h"
#include "gpu/stream_ordering.h"
#include "support/host_kernels.h"

namespace cohort::gpu {
namespace {

int g_failures = 0;

void Fail(const std::string& what) {
  ++g_failures;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
}

bool Ok(const Status& s, const std::string& what) {
  if (!s.ok()) Fail(what + ": " + s.ToString());
  return s.ok();
}

// Random bytes, with special float values planted at some positions.
std::vector<unsigned char> RandomData(DataType t, size_t count, std::mt19937_64& rng) {
  const size_t es = DataTypeSize(t);
  std::vector<unsigned char> v(count * es);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  if (t == DataType::kBool) {
    for (size_t i = 0; i < count; ++i)
      v[i] = (i % 7 == 3) ? 2 : v[i] & 1;  // one non-canonical true
  }
  return v;
}

bool BothNaN(DataType t, const unsigned char* a, const unsigned char* b) {
  if (!IsFloatingPoint(t)) return false;
  return std::isnan(LoadAs(t, a)) && std::isnan(LoadAs(t, b));
}

struct Device {
  CudaApi& api;
  StreamHandle stream;
  EventHandle event;
};

Status Sync(Device& d) {
  return SynchronizeStream(d.api, d.stream, d.event, Deadline::AfterSeconds(60), "a check");
}

Status ToDevice(Device& d, DevicePtr dst, const std::vector<unsigned char>& host,
                PinnedBuffer& pin) {
  std::memcpy(pin.data(), host.data(), host.size());
  COHORT_RETURN_IF_ERROR(d.api.CopyAsync(dst, pin.device_ptr(), host.size(), d.stream));
  return Sync(d);
}

Result<std::vector<unsigned char>> ToHost(Device& d, DevicePtr src, size_t bytes,
                                          PinnedBuffer& pin) {
  COHORT_RETURN_IF_ERROR(d.api.CopyAsync(pin.device_ptr(), src, bytes, d.stream));
  COHORT_RETURN_IF_ERROR(Sync(d));
  const unsigned char* p = static_cast<const unsigned char*>(pin.data());
  return std::vector<unsigned char>(p, p + bytes);
}

void CheckKernelsEqualHost(Device& d, DeviceReducer& reducer) {
  std::mt19937_64 rng(20240601);
  const size_t count = 4099;  // several blocks, an odd tail
  const int max_inputs = 17;
  std::vector<DeviceBuffer> inputs;
  Result<PinnedBuffer> pin = PinnedBuffer::Allocate(d.api, count * 8);
  if (!pin.ok()) return (void)Ok(pin.status(), "pinned buffer");
  for (int k = 0; k < max_inputs + 1; ++k) {
    Result<DeviceBuffer> b = DeviceBuffer::Allocate(d.api, count * 8);
    if (!b.ok()) return (void)Ok(b.status(), "device buffer");
    inputs.push_back(std::move(*b));
  }
  int checked = 0;
  for (int ti = 0; ti < kNumDataTypes; ++ti) {
    const DataType t = static_cast<DataType>(ti);
    const size_t es = DataTypeSize(t);
    for (ReduceOp op :
         {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (int n : {1, 2, 3, max_inputs}) {
        for (int variant = 0; variant < 2; ++variant) {
          ReduceSpec spec;
          spec.type = t;
          spec.op = op;
          spec.finish = true;
          spec.ranks = 3;
          spec.prescale = variant == 0 ? 1.0 : 0.375;
          spec.postscale = variant == 0 ? 1.0 : -2.5;
          std::vector<std::vector<unsigned char>> host(n);
          std::vector<DevicePtr> srcs(n);
          for (int k = 0; k < n; ++k) {
            host[k] = RandomData(t, count, rng);
            if (!Ok(ToDevice(d, inputs[k].ptr(), host[k], *pin), "upload")) return;
            srcs[k] = inputs[k].ptr();
          }
          const DevicePtr out = inputs[max_inputs].ptr();
          if (!Ok(reducer.Reduce(out, srcs, count, spec, d.stream), "device reduce")) return;
          Result<std::vector<unsigned char>> got = ToHost(d, out, count * es, *pin);
          if (!got.ok()) return (void)Ok(got.status(), "download");
          // The host build of the same kernel, in rounds as DeviceReducer does.
          std::vector<unsigned char> want(count * es);
          testing::HostKernel kernel = testing::FindHostKernel(ReduceKernelName(t, op));
          int next = 0;
          bool first = true;
          while (next < n) {
            ReduceKernelArgs a;
            a.dst = AsDevicePtr(want.data());
            a.count = count;
            a.prescale = spec.prescale;
            a.postscale = spec.postscale;
            a.divisor = op == ReduceOp::kAverage ? spec.ranks : 1;
            int m = 0;
            if (!first) a.src[m++] = AsDevicePtr(want.data());
            a.first_prescaled = first ? 0 : 1;
            while (m < kMaxReduceSources && next < n) a.src[m++] = AsDevicePtr(host[next++].data());
            a.nsrc = m;
            a.finish = next == n ? 1 : 0;
            kernel(&a);
            first = false;
          }
          ++checked;
          if (*got != want) {
            for (size_t i = 0; i < count; ++i) {
              if (std::memcmp(&(*got)[i * es], &want[i * es], es) != 0 &&
                  !BothNaN(t, &(*got)[i * es], &want[i * es])) {
                Fail(std::string("kernel ") + ReduceKernelName(t, op) + " with " +
                     std::to_string(n) + " inputs, variant " + std::to_string(variant) +
                     ": element " + std::to_string(i) + " differs from the host build");
                break;
              }
            }
          }
        }
      }
    }
  }
  std::printf("kernels: %d device reductions equal the host build\n", checked);
}

void CheckOrdering(Device& d, DeviceReducer& reducer) {
  Result<Stream> caller = Stream::Create(d.api);
  if (!caller.ok()) return (void)Ok(caller.status(), "caller stream");
  const size_t count = 64 << 20;  // a kernel long enough to race with
  Result<DeviceBuffer> a = DeviceBuffer::Allocate(d.api, count * 4);
  Result<DeviceBuffer> b = DeviceBuffer::Allocate(d.api, count * 4);
  Result<DeviceBuffer> c = DeviceBuffer::Allocate(d.api, count * 4);
  Result<PinnedBuffer> pin = PinnedBuffer::Allocate(d.api, 16);
  if (!a.ok() || !b.ok() || !c.ok() || !pin.ok()) return Fail("buffers for the ordering check");
  StreamOrdering ordering(d.api, d.stream);
  for (int round = 0; round < 3; ++round) {
    // Caller: a = 1 everywhere (scale of a constant pattern), then a *= 3.
    std::vector<unsigned char> ones(16, 0);
    const float one = 1.0f + round;
    for (int i = 0; i < 4; ++i) std::memcpy(&ones[i * 4], &one, 4);
    std::memcpy(pin->data(), ones.data(), 16);
    Device caller_device{d.api, caller->handle(), d.event};
    for (size_t at = 0; at < count * 4; at += 16 << 20) {
      // A large copy in pieces, then a slow reduce over all of it.
      Ok(d.api.CopyAsync(a->ptr() + at, pin->device_ptr(), 16, caller->handle()), "copy");
    }
    ReduceSpec triple{DataType::kFloat32, ReduceOp::kSum, 3.0, false, false, 1, 1.0};
    Ok(reducer.Reduce(a->ptr(), {a->ptr()}, count, triple, caller->handle()), "caller kernel");
    // Engine: b = a after Enter; Leave; caller: c = b after Join.
    Ok(ordering.Enter(caller->handle()), "Enter");
    Ok(d.api.CopyAsync(b->ptr(), a->ptr(), count * 4, d.stream), "engine copy");
    Result<Completion> done = ordering.Leave();
    if (!done.ok()) return (void)Ok(done.status(), "Leave");
    Ok(ordering.Join(*done, caller->handle()), "Join");
    Ok(d.api.CopyAsync(c->ptr(), b->ptr(), count * 4, caller->handle()), "caller copy");
    Ok(Sync(caller_device), "caller sync");
    Result<std::vector<unsigned char>> first = ToHost(d, c->ptr(), 4, *pin);
    if (!first.ok()) return (void)Ok(first.status(), "download");
    float value = 0;
    std::memcpy(&value, first->data(), 4);
    if (value != 3.0f * one) Fail("stream ordering: the engine read before the caller's kernel");
  }
  std::printf("ordering: %zu events for 3 rounds\n", ordering.events_created());
}

int Main() {
  Result<GpuStackOptions> options = GpuStackOptionsFromEnv(ProcessEnv());
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n", options.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*options);
  std::printf("%s", stack->Report().c_str());
  Result<CudaApi*> api = stack->driver();
  if (!api.ok()) {
    std::printf("SKIPPED: no GPU: %s\n", api.status().message().c_str());
    return 77;
  }
  Result<int> devices = (*api)->DeviceCount();
  if (!devices.ok() || *devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  Result<KernelCompiler*> compiler = stack->compiler();
  if (!compiler.ok()) {
    std::fprintf(stderr, "FAILED: a GPU without NVRTC: %s\n", compiler.status().message().c_str());
    return 1;
  }
  if (!Ok((*api)->UseDevice(0), "UseDevice(0)")) return 1;
  Result<DeviceInfo> info = (*api)->GetDeviceInfo(0);
  if (!Ok(info.status(), "GetDeviceInfo")) return 1;
  std::printf("device 0: %s, compute capability %d.%d, %d SMs, PCI %s\n", info->name.c_str(),
              info->cc_major, info->cc_minor, info->multiprocessors, info->pci_id.c_str());
  Result<Stream> stream = Stream::Create(**api);
  Result<Event> event = Event::Create(**api);
  if (!stream.ok() || !event.ok()) return Fail("stream and event"), 1;
  Device d{**api, stream->handle(), event->handle()};

  // 1. Pointers.
  Result<DeviceBuffer> probe = DeviceBuffer::Allocate(**api, 256);
  Result<PinnedBuffer> pinned = PinnedBuffer::Allocate(**api, 256);
  if (probe.ok() && pinned.ok()) {
    Result<PointerInfo> p = (*api)->GetPointerInfo(AsPointer(probe->ptr()));
    if (!p.ok() || p->kind != PointerInfo::Kind::kDevice || p->device != 0) {
      Fail("a device pointer does not report device 0");
    }
    Result<PointerInfo> h = (*api)->GetPointerInfo(pinned->data());
    if (!h.ok() || h->kind != PointerInfo::Kind::kHost) Fail("pinned memory reports a device");
    int on_stack = 0;
    Result<PointerInfo> s = (*api)->GetPointerInfo(&on_stack);
    if (!s.ok() || s->kind != PointerInfo::Kind::kHost) Fail("stack memory reports a device");
  } else {
    Fail("allocating device and pinned memory");
  }

  // 2. Compile everything, then load everything from disk.
  char dir_template[] = "/tmp/cohort-kernels-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  {
    KernelCache cache(**api, **compiler, dir);
    for (int ti = 0; ti < kNumDataTypes; ++ti) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        Ok(cache.Reduce(static_cast<DataType>(ti), op, *info).status(), "compiling a kernel");
      }
    }
    std::printf("kernel cache: %d compiled\n", cache.counts().compiled);
  }
  KernelCache cache(**api, **compiler, dir);
  DeviceReducer reducer(**api, cache, *info);
  for (int ti = 0; ti < kNumDataTypes; ++ti) {
    Ok(cache.Reduce(static_cast<DataType>(ti), ReduceOp::kSum, *info).status(), "cached kernel");
  }
  if (cache.counts().compiled != 0 || cache.counts().disk_hits != kNumDataTypes) {
    Fail("a second cache compiled again instead of loading from disk");
  }

  // 3. and 4.
  CheckKernelsEqualHost(d, reducer);
  CheckOrdering(d, reducer);
  const std::string rm = "rm -rf " + dir;
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  if (g_failures > 0) {
    std::printf("%d device checks FAILED\n", g_failures);
    return 1;
  }
  std::printf("every device check passed\n");
  return 0;
}

}  // namespace
}  // namespace cohort::gpu

int main() { return cohort::gpu::Main(); }
