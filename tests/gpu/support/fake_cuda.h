// FakeCuda: a CudaApi without a GPU, for tests. Device memory is host memory
// (memfd mappings, so another process can map it through a fake IPC
// handle); a stream is a queue of operations; an event is a marker in one;
// kernels are the generated reduction kernels compiled for the host
// (host_kernels.h), looked up by name.
//
// Work does not run when it is queued. By default (kLazy) it runs only when
// the host must see it: EventDone on an event runs what its record depends
// on, in stream order, resolving waits on other streams' records first;
// freeing memory runs everything (the driver's frees synchronize). A
// transport that reads a peer's buffer without first waiting for the
// peer's copy therefore reads stale data, and a test sees it. kRandom runs
// nothing on its own; RunRandomly(seed) then runs ready operations of
// random streams one at a time until all are done, which checks orderings
// under every interleaving a seed picks. kEager runs each operation as soon
// as it is queued and ready.
#ifndef COHORT_TESTS_GPU_SUPPORT_FAKE_CUDA_H_
#define COHORT_TESTS_GPU_SUPPORT_FAKE_CUDA_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <list>
#include <set>
#include <string>

#include "gpu/cuda_api.h"

namespace cohort::gpu::testing {

struct FakeCudaOptions {
  enum class Policy { kLazy, kRandom, kEager };
  Policy policy = Policy::kLazy;
  int devices = 1;
  // Device d's PCI id is "<gpu_id>:<d>": processes with the same gpu_id
  // share GPUs; give each rank its own to model a GPU per rank.
  std::string gpu_id = "fake0";
  int cc_major = 9;
  int cc_minor = 0;
  int multiprocessors = 4;
};

class FakeCuda : public CudaApi {
 public:
  explicit FakeCuda(FakeCudaOptions options = {});
  ~FakeCuda() override;

  std::string Describe() const override { return "fake CUDA (" + options_.gpu_id + ")"; }
  Result<int> DeviceCount() override { return options_.devices; }
  Result<DeviceInfo> GetDeviceInfo(int device) override;
  Status UseDevice(int device) override;
  Result<DevicePtr> Alloc(size_t bytes) override;
  Status Free(DevicePtr ptr) override;
  Result<void*> AllocPinned(size_t bytes) override;
  Status FreePinned(void* ptr) override;
  Status CopyAsync(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) override;
  Result<StreamHandle> CreateStream() override;
  Status DestroyStream(StreamHandle stream) override;
  Result<EventHandle> CreateEvent() override;
  Status DestroyEvent(EventHandle event) override;
  Status RecordEvent(EventHandle event, StreamHandle stream) override;
  Status StreamWaitEvent(StreamHandle stream, EventHandle event) override;
  Result<bool> EventDone(EventHandle event) override;
  Result<IpcMemHandle> IpcGetMemHandle(DevicePtr ptr) override;
  Result<DevicePtr> IpcOpenMemHandle(const IpcMemHandle& handle) override;
  Status IpcCloseMemHandle(DevicePtr ptr) override;
  Result<ModuleHandle> LoadModule(const std::string& image) override;
  Status UnloadModule(ModuleHandle module) override;
  Result<FunctionHandle> GetFunction(ModuleHandle module, const std::string& name) override;
  Status Launch(FunctionHandle function, LaunchShape shape, StreamHandle stream,
                void** params) override;
  Result<PointerInfo> GetPointerInfo(const void* ptr) override;

  // Queues host work on a stream (a stand-in for a framework's kernel).
  Status Enqueue(StreamHandle stream, std::function<void()> work);
  // Runs everything queued on `stream` (and what it waits for).
  Status Flush(StreamHandle stream);
  // kRandom: runs every queued operation, picking among the ready stream
  // heads with a generator seeded by `seed`. Fails on a deadlock.
  Status RunRandomly(uint64_t seed);
  // The next call of `method` ("IpcOpenMemHandle", "Alloc", ...) fails.
  void FailNext(const std::string& method);

  struct Counts {
    size_t device_allocations = 0;  // live
    size_t pinned_allocations = 0;  // live
    size_t ipc_mappings = 0;        // open
    size_t streams = 0;             // live (created, not destroyed)
    size_t events = 0;              // live
    size_t modules = 0;             // loaded
    size_t launches = 0;            // since creation
    size_t copies = 0;              // since creation
  };
  Counts counts() const;

 private:
  struct Op {
    enum class Kind { kWork, kRecord, kWait } kind;
    std::function<void()> work;
    uint64_t event = 0;
    uint64_t record = 0;  // kRecord: its number; kWait: the record waited for (0: none)
  };
  struct StreamState {
    std::deque<Op> ops;
  };
  struct EventState {
    uint64_t last_record = 0;                     // the most recent record issued (0: never)
    std::set<uint64_t> completed;                 // records that have run
    std::map<uint64_t, uint64_t> pending_stream;  // record -> stream it is queued on
  };
  struct Allocation {
    size_t bytes;
    int fd;
    int device;
  };

  Status Injected(const std::string& method);
  StreamState* FindStream(StreamHandle handle);
  bool Ready(const Op& op) const;
  // Runs the head of `stream_id` (which must be ready).
  void RunHead(uint64_t stream_id);
  // Runs `stream_id` through the op for `record` (or everything when 0).
  Status Drive(uint64_t stream_id, uint64_t record, int depth);
  Status DriveAll();
  Status Queued(uint64_t stream_id, Op op);

  const FakeCudaOptions options_;
  mutable std::mutex mu_;
  int current_device_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, StreamState> streams_;  // id 0: the legacy default stream
  std::map<uint64_t, EventState> events_;
  std::map<uintptr_t, Allocation> allocations_;
  std::map<uintptr_t, size_t> mappings_;  // peers' buffers mapped here
  std::set<void*> pinned_;
  // One entry per load, as the driver gives each cuModuleLoadData its own
  // module: two kernel caches loading the same kernel unload separately.
  std::list<std::string> modules_;
  std::map<std::string, int> fail_next_;
  Counts totals_;
};

}  // namespace cohort::gpu::testing

#endif  // COHORT_TESTS_GPU_SUPPORT_FAKE_CUDA_H_
