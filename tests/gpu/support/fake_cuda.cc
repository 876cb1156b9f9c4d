// The fake CUDA API for tests (fake_cuda.h).
#include "support/fake_cuda.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/reduce_kernel_source.h"
#include "support/host_kernels.h"

namespace cohort::gpu::testing {
namespace {

constexpr char kIpcMagic[8] = "FAKEIPC";
constexpr char kModulePrefix[] = "fake-module:";

uint64_t IdOf(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }
void* HandleOf(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }

struct IpcPayload {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t bytes;
};
static_assert(sizeof(IpcPayload) <= sizeof(IpcMemHandle::bytes));

}  // namespace

FakeCuda::FakeCuda(FakeCudaOptions options) : options_(std::move(options)) {
  streams_[0];  // the legacy default stream
}

FakeCuda::~FakeCuda() {
  std::lock_guard<std::mutex> lock(mu_);
  (void)DriveAll();
  for (const auto& [base, a] : allocations_) {
    munmap(reinterpret_cast<void*>(base), a.bytes);
    close(a.fd);
  }
  for (const auto& [base, bytes] : mappings_) munmap(reinterpret_cast<void*>(base), bytes);
  for (void* p : pinned_) std::free(p);
}

Status FakeCuda::Injected(const std::string& method) {
  auto it = fail_next_.find(method);
  if (it == fail_next_.end() || it->second == 0) return Status::OK();
  --it->second;
  return Status::Internal("fake CUDA: injected failure in " + method);
}

void FakeCuda::FailNext(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  ++fail_next_[method];
}

FakeCuda::Counts FakeCuda::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c = totals_;
  c.device_allocations = allocations_.size();
  c.pinned_allocations = pinned_.size();
  c.ipc_mappings = mappings_.size();
  c.streams = streams_.size() - 1;
  c.modules = modules_.size();
  return c;
}

Result<DeviceInfo> FakeCuda::GetDeviceInfo(int device) {
  if (device < 0 || device >= options_.devices) {
    return Status::InvalidArgument("fake CUDA: no device " + std::to_string(device));
  }
  DeviceInfo info;
  info.ordinal = device;
  info.name = "Fake GPU";
  info.cc_major = options_.cc_major;
  info.cc_minor = options_.cc_minor;
  info.multiprocessors = options_.multiprocessors;
  info.pci_id = options_.gpu_id + ":" + std::to_string(device);
  return info;
}

Status FakeCuda::UseDevice(int device) {
  if (device < 0 || device >= options_.devices) {
    return Status::InvalidArgument("fake CUDA: no device " + std::to_string(device));
  }
  std::lock_guard<std::mutex> lock(mu_);
  current_device_ = device;
  return Status::OK();
}

Result<DevicePtr> FakeCuda::Alloc(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("Alloc"));
  if (bytes == 0) return Status::InvalidArgument("fake CUDA: cuMemAlloc of 0 bytes");
  const int fd = memfd_create("cohort-fake-gpu", 0);
  if (fd < 0) return Status::IoError("memfd_create: " + std::string(std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return Status::IoError("ftruncate: " + std::string(std::strerror(errno)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return Status::IoError("mmap: " + std::string(std::strerror(errno)));
  }
  // Fresh device memory holds garbage, not zeros: tests must not rely on it.
  std::memset(p, 0xa5, bytes);
  allocations_[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, fd, current_device_};
  return AsDevicePtr(p);
}

Status FakeCuda::Free(DevicePtr ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(DriveAll());  // the driver's free synchronizes
  auto it = allocations_.find(ptr);
  if (it == allocations_.end())
    return Status::InvalidArgument("fake CUDA: freeing a non-allocation");
  munmap(reinterpret_cast<void*>(it->first), it->second.bytes);
  close(it->second.fd);
  allocations_.erase(it);
  return Status::OK();
}

Result<void*> FakeCuda::AllocPinned(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("AllocPinned"));
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) return Status::IoError("fake CUDA: out of host memory");
  std::memset(p, 0x5a, bytes);
  pinned_.insert(p);
  return p;
}

Status FakeCuda::FreePinned(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(DriveAll());
  if (pinned_.erase(ptr) == 0)
    return Status::InvalidArgument("fake CUDA: freeing unknown pinned memory");
  std::free(ptr);
  return Status::OK();
}

FakeCuda::StreamState* FakeCuda::FindStream(StreamHandle handle) {
  auto it = streams_.find(IdOf(handle));
  return it == streams_.end() ? nullptr : &it->second;
}

bool FakeCuda::Ready(const Op& op) const {
  if (op.kind != Op::Kind::kWait || op.record == 0) return true;
  const EventState& e = events_.at(op.event);
  return e.completed.count(op.record) > 0;
}

void FakeCuda::RunHead(uint64_t stream_id) {
  StreamState& s = streams_[stream_id];
  Op op = std::move(s.ops.front());
  s.ops.pop_front();
  if (op.kind == Op::Kind::kWork) {
    op.work();
  } else if (op.kind == Op::Kind::kRecord) {
    EventState& e = events_[op.event];
    e.completed.insert(op.record);
    e.pending_stream.erase(op.record);
  }
}

Status FakeCuda::Drive(uint64_t stream_id, uint64_t record, int depth) {
  if (depth > 64) return Status::Internal("fake CUDA: streams wait on each other in a cycle");
  for (;;) {
    StreamState& s = streams_[stream_id];
    if (s.ops.empty()) {
      if (record == 0) return Status::OK();
      return Status::Internal("fake CUDA: waited-for record is not queued");
    }
    const Op& head = s.ops.front();
    if (!Ready(head)) {
      const EventState& e = events_.at(head.event);
      auto at = e.pending_stream.find(head.record);
      if (at == e.pending_stream.end()) return Status::Internal("fake CUDA: lost a record");
      COHORT_RETURN_IF_ERROR(Drive(at->second, head.record, depth + 1));
    }
    const bool target =
        s.ops.front().kind == Op::Kind::kRecord && s.ops.front().record == record && record != 0;
    RunHead(stream_id);
    if (target) return Status::OK();
  }
}

Status FakeCuda::DriveAll() {
  for (auto& [id, s] : streams_) COHORT_RETURN_IF_ERROR(Drive(id, 0, 0));
  return Status::OK();
}

Status FakeCuda::Queued(uint64_t stream_id, Op op) {
  streams_[stream_id].ops.push_back(std::move(op));
  if (options_.policy != FakeCudaOptions::Policy::kEager) return Status::OK();
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& [id, s] : streams_) {
      while (!s.ops.empty() && Ready(s.ops.front())) {
        RunHead(id);
        progress = true;
      }
    }
  }
  return Status::OK();
}

Status FakeCuda::Enqueue(StreamHandle stream, std::function<void()> work) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  return Queued(IdOf(stream), Op{Op::Kind::kWork, std::move(work), 0, 0});
}

Status FakeCuda::Flush(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  return Drive(IdOf(stream), 0, 0);
}

Status FakeCuda::RunRandomly(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::mt19937_64 rng(seed);
  for (;;) {
    std::vector<uint64_t> ready, busy;
    for (auto& [id, s] : streams_) {
      if (s.ops.empty()) continue;
      (Ready(s.ops.front()) ? ready : busy).push_back(id);
    }
    if (ready.empty()) {
      if (busy.empty()) return Status::OK();
      return Status::Internal("fake CUDA: every stream waits on another (deadlock)");
    }
    RunHead(ready[rng() % ready.size()]);
  }
}

Status FakeCuda::CopyAsync(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("CopyAsync"));
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  if (bytes == 0) return Status::OK();
  ++totals_.copies;
  return Queued(
      IdOf(stream),
      Op{Op::Kind::kWork,
         [dst, src, bytes] { std::memmove(AsPointer(dst), AsPointer(src), bytes); }, 0, 0});
}

Result<StreamHandle> FakeCuda::CreateStream() {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("CreateStream"));
  const uint64_t id = next_id_++;
  streams_[id];
  return HandleOf(id);
}

Status FakeCuda::DestroyStream(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = IdOf(stream);
  if (id == 0 || FindStream(stream) == nullptr) {
    return Status::InvalidArgument("fake CUDA: destroying an unknown stream");
  }
  COHORT_RETURN_IF_ERROR(Drive(id, 0, 0));  // queued work still completes
  streams_.erase(id);
  return Status::OK();
}

Result<EventHandle> FakeCuda::CreateEvent() {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("CreateEvent"));
  const uint64_t id = next_id_++;
  events_[id];
  ++totals_.events;
  return HandleOf(id);
}

Status FakeCuda::DestroyEvent(EventHandle event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.count(IdOf(event)) == 0) return Status::InvalidArgument("fake CUDA: unknown event");
  // Waits already queued on it stay valid (as with the driver); the state
  // stays for them.
  --totals_.events;
  return Status::OK();
}

Status FakeCuda::RecordEvent(EventHandle event, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto e = events_.find(IdOf(event));
  if (e == events_.end()) return Status::InvalidArgument("fake CUDA: recording an unknown event");
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  const uint64_t record = next_id_++;
  e->second.last_record = record;
  e->second.pending_stream[record] = IdOf(stream);
  return Queued(IdOf(stream), Op{Op::Kind::kRecord, nullptr, IdOf(event), record});
}

Status FakeCuda::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  std::lock_guard<std::mutex> lock(mu_);
  auto e = events_.find(IdOf(event));
  if (e == events_.end()) return Status::InvalidArgument("fake CUDA: waiting on an unknown event");
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  // Binds to the record current now, as cuStreamWaitEvent does.
  return Queued(IdOf(stream), Op{Op::Kind::kWait, nullptr, IdOf(event), e->second.last_record});
}

Result<bool> FakeCuda::EventDone(EventHandle event) {
  std::lock_guard<std::mutex> lock(mu_);
  auto e = events_.find(IdOf(event));
  if (e == events_.end()) return Status::InvalidArgument("fake CUDA: querying an unknown event");
  const uint64_t record = e->second.last_record;
  if (record == 0 || e->second.completed.count(record) > 0) return true;
  if (options_.policy != FakeCudaOptions::Policy::kLazy) return false;
  const uint64_t stream = e->second.pending_stream.at(record);
  COHORT_RETURN_IF_ERROR(Drive(stream, record, 0));
  return events_[IdOf(event)].completed.count(record) > 0;
}

Result<IpcMemHandle> FakeCuda::IpcGetMemHandle(DevicePtr ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("IpcGetMemHandle"));
  auto it = allocations_.find(ptr);
  if (it == allocations_.end()) {
    return Status::InvalidArgument(
        "fake CUDA: IPC handle of a pointer that is no allocation's base");
  }
  IpcPayload payload;
  std::memcpy(payload.magic, kIpcMagic, sizeof(payload.magic));
  payload.pid = getpid();
  payload.fd = it->second.fd;
  payload.bytes = it->second.bytes;
  IpcMemHandle handle;
  std::memcpy(handle.bytes.data(), &payload, sizeof(payload));
  return handle;
}

Result<DevicePtr> FakeCuda::IpcOpenMemHandle(const IpcMemHandle& handle) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("IpcOpenMemHandle"));
  IpcPayload payload;
  std::memcpy(&payload, handle.bytes.data(), sizeof(payload));
  if (std::memcmp(payload.magic, kIpcMagic, sizeof(kIpcMagic)) != 0) {
    return Status::InvalidArgument("fake CUDA: not an IPC handle");
  }
  if (payload.pid == getpid()) {
    return Status::InvalidArgument("fake CUDA: opening this process's own IPC handle");
  }
  const std::string path =
      "/proc/" + std::to_string(payload.pid) + "/fd/" + std::to_string(payload.fd);
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return Status::IoError("fake CUDA: open " + path + ": " + std::strerror(errno));
  void* p = mmap(nullptr, payload.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return Status::IoError("fake CUDA: mmap " + path);
  mappings_[reinterpret_cast<uintptr_t>(p)] = payload.bytes;
  return AsDevicePtr(p);
}

Status FakeCuda::IpcCloseMemHandle(DevicePtr ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(DriveAll());
  auto it = mappings_.find(ptr);
  if (it == mappings_.end())
    return Status::InvalidArgument("fake CUDA: closing an unknown mapping");
  munmap(reinterpret_cast<void*>(it->first), it->second);
  mappings_.erase(it);
  return Status::OK();
}

Result<ModuleHandle> FakeCuda::LoadModule(const std::string& image) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("LoadModule"));
  if (image.rfind(kModulePrefix, 0) != 0) {
    return Status::InvalidArgument("fake CUDA: not a module image");
  }
  const std::string name = image.substr(sizeof(kModulePrefix) - 1);
  if (FindHostKernel(name) == nullptr) {
    return Status::InvalidArgument("fake CUDA: no host kernel " + name);
  }
  modules_.push_back(name);
  return ModuleHandle{&modules_.back()};
}

Status FakeCuda::UnloadModule(ModuleHandle module) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = modules_.begin(); it != modules_.end(); ++it) {
    if (&*it == module) {
      modules_.erase(it);
      return Status::OK();
    }
  }
  return Status::InvalidArgument("fake CUDA: unloading a module that is not loaded");
}

Result<FunctionHandle> FakeCuda::GetFunction(ModuleHandle module, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (*static_cast<std::string*>(module) != name) {
    return Status::InvalidArgument("fake CUDA: module has no function " + name);
  }
  return FunctionHandle{reinterpret_cast<void*>(FindHostKernel(name))};
}

Status FakeCuda::Launch(FunctionHandle function, LaunchShape shape, StreamHandle stream,
                        void** params) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(Injected("Launch"));
  if (FindStream(stream) == nullptr) return Status::InvalidArgument("fake CUDA: unknown stream");
  if (shape.grid == 0 || shape.block == 0) return Status::InvalidArgument("fake CUDA: empty grid");
  // The driver copies the arguments at launch; so does the fake.
  std::array<unsigned char, sizeof(ReduceKernelArgs)> args;
  std::memcpy(args.data(), params[0], args.size());
  const HostKernel kernel = reinterpret_cast<HostKernel>(function);
  ++totals_.launches;
  return Queued(IdOf(stream), Op{Op::Kind::kWork, [kernel, args] { kernel(args.data()); }, 0, 0});
}

Result<PointerInfo> FakeCuda::GetPointerInfo(const void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = allocations_.upper_bound(p);
  if (it != allocations_.begin()) {
    --it;
    if (p < it->first + it->second.bytes) {
      return PointerInfo{PointerInfo::Kind::kDevice, it->second.device};
    }
  }
  return PointerInfo{};
}

}  // namespace cohort::gpu::testing
