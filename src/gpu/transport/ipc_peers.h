// IpcPeers: the ranks of one host sharing device memory through CUDA IPC.
// Each rank allocates one buffer (COHORT_GPU_BUFFER_BYTES) once, exports it,
// and maps every peer's; the IPC collectives (ipc_collectives.h) copy their
// inputs into their own buffer and read the peers' directly. This works as
// well when several ranks share one GPU (each is its own process with its
// own context; IPC maps between them).
//
// Every buffer is two halves. Chunks are numbered across calls (like the
// shared-memory slots of the CPU path) and chunk g uses half g % 2 of every
// rank. The protocol, for every collective and every chunk:
//   a rank writes its own half; Sync; it reads the peers' halves (and may
//   write parts of its half no peer reads in that step, then Sync again and
//   read those); EndChunk.
// Sync = the host waits (bounded) for its stream to finish what it queued,
// then an exchange of CallHeaders among the host's ranks that doubles as a
// barrier and a check that every rank runs the same call.
// Invariant: a rank writes half p for chunk g only after the first Sync of
// chunk g-1, which no peer enters before its stream has finished reading
// chunk g-2, the last one that used half p. So reads of a call's last chunk
// need no wait before the call returns: the stream orders everything after.
#ifndef COHORT_GPU_TRANSPORT_IPC_PEERS_H_
#define COHORT_GPU_TRANSPORT_IPC_PEERS_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"
#include "gpu/device_memory.h"
#include "gpu/transport/gpu_run.h"

namespace cohort::gpu {

class IpcPeers {
 public:
  // Collective over `local` (the ranks of this host, this one among them):
  // allocate, export, exchange and map. When any rank fails, every rank gets
  // the same error naming the first rank that failed and why (and frees
  // what it had). `local` must outlive the result.
  static Result<std::unique_ptr<IpcPeers>> Create(Communicator& local, CudaApi& api,
                                                  size_t buffer_bytes);
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  int size() const { return static_cast<int>(buffers_.size()); }
  int me() const { return me_; }
  Communicator& comm() { return local_; }
  size_t half_bytes() const { return half_bytes_; }
  // Local rank l's half of the current chunk (mapped for peers).
  DevicePtr Half(int l) const { return buffers_[l] + (chunk_ % 2) * half_bytes_; }

  // A Sync of the current chunk (see above). `header` describes the call;
  // `what` names the step in errors. Any failure breaks the communicator (so
  // every peer fails too).
  Status Sync(GpuRun& run, const CallHeader& header, const char* what);
  // Moves to the next chunk (the other half of every buffer).
  void EndChunk() { ++chunk_; }

  // A header for the next call (its sequence number among IPC calls).
  CallHeader NextHeader(CollectiveKind kind, size_t count, DataType type);

 private:
  IpcPeers(Communicator& local, CudaApi& api) : local_(local), api_(api) {}
  Status Exchange(const CallHeader& header);

  Communicator& local_;
  CudaApi& api_;
  int me_ = 0;
  DeviceBuffer own_;
  std::vector<DevicePtr> buffers_;  // by local rank: own_.ptr() or a peer's mapping
  size_t half_bytes_ = 0;
  uint64_t chunk_ = 0;
  uint64_t calls_ = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_IPC_PEERS_H_
