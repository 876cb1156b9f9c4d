// CUDA IPC buffers among the ranks of a host (ipc_peers.h).
#include "gpu/transport/ipc_peers.h"

#include <cstring>

#include "collectives/collectives.h"
#include "common/logging.h"
#include "gpu/stream.h"
#include "gpu/transport/outcomes.h"

namespace cohort::gpu {
namespace {

// What each rank tells the others at setup: where its buffer is.
struct Exported {
  char handle[64];
  uint64_t bytes;
};

// One message every rank shares, naming the first rank whose `step` failed.
Status FirstFailure(Communicator& local, const std::vector<std::string>& outcomes,
                    const char* step) {
  const int l = FirstFailedRank(outcomes);
  if (l < 0) return Status::OK();
  return Status::NotInitialized(std::string("CUDA IPC among the ranks of a host failed: ") +
                                local.mesh().Describe(l) + " could not " + step + ": " +
                                outcomes[l]);
}

}  // namespace

Result<std::unique_ptr<IpcPeers>> IpcPeers::Create(Communicator& local, CudaApi& api,
                                                   size_t buffer_bytes) {
  std::unique_ptr<IpcPeers> peers(new IpcPeers(local, api));
  const int n = local.size();
  peers->me_ = local.rank();
  // Halves a multiple of 256 bytes, so every half starts aligned for any type.
  peers->half_bytes_ = std::max<size_t>(256, buffer_bytes / 2 / 256 * 256);

  // Allocate and export; agree that every rank could.
  Exported mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.bytes = 2 * peers->half_bytes_;
  Result<DeviceBuffer> own = DeviceBuffer::Allocate(api, mine.bytes);
  Status exported = own.status();
  if (own.ok()) {
    peers->own_ = std::move(*own);
    Result<IpcMemHandle> handle = api.IpcGetMemHandle(peers->own_.ptr());
    exported = handle.status();
    if (handle.ok()) std::memcpy(mine.handle, handle->bytes.data(), sizeof(mine.handle));
  }
  Result<std::vector<std::string>> outcomes = GatherOutcomes(local, exported);
  if (!outcomes.ok()) return outcomes.status();
  COHORT_RETURN_IF_ERROR(FirstFailure(local, *outcomes, "export its buffer"));
  std::vector<Exported> all(n);
  std::vector<size_t> counts(n, sizeof(Exported));
  COHORT_RETURN_IF_ERROR(
      RunAllgather(local, &mine, sizeof(mine), all.data(), counts.data(), DataType::kUInt8));

  // Map every peer's buffer; then agree that every rank mapped every peer.
  peers->buffers_.assign(n, 0);
  peers->buffers_[peers->me_] = peers->own_.ptr();
  Status opened = Status::OK();
  for (int l = 0; l < n && opened.ok(); ++l) {
    if (l == peers->me_) continue;
    if (all[l].bytes != mine.bytes) {
      opened = Status::InvalidArgument("its buffer is " + std::to_string(mine.bytes) +
                                       " bytes but " + local.mesh().Describe(l) + "'s is " +
                                       std::to_string(all[l].bytes) +
                                       " (set COHORT_GPU_BUFFER_BYTES alike on every rank)");
      break;
    }
    IpcMemHandle handle;
    std::memcpy(handle.bytes.data(), all[l].handle, handle.bytes.size());
    Result<DevicePtr> ptr = api.IpcOpenMemHandle(handle);
    if (ptr.ok()) {
      peers->buffers_[l] = *ptr;
    } else {
      opened = ptr.status().WithContext("mapping " + local.mesh().Describe(l) + "'s buffer");
    }
  }
  Result<std::vector<std::string>> mapped = GatherOutcomes(local, opened);
  if (!mapped.ok()) return mapped.status();
  COHORT_RETURN_IF_ERROR(FirstFailure(local, *mapped, "map its peers' buffers"));
  return peers;
}

IpcPeers::~IpcPeers() {
  for (int l = 0; l < size(); ++l) {
    if (l == me_ || buffers_[l] == 0) continue;
    Status closed = api_.IpcCloseMemHandle(buffers_[l]);
    if (!closed.ok()) {
      COHORT_LOG(kWarning) << "unmapping a peer's GPU buffer: " << closed.message();
    }
  }
}

CallHeader IpcPeers::NextHeader(CollectiveKind kind, size_t count, DataType type) {
  CallHeader h;
  h.call = ++calls_;
  h.kind = static_cast<int32_t>(kind);
  h.count = count;
  h.dtype = static_cast<int32_t>(type);
  return h;
}

Status IpcPeers::Exchange(const CallHeader& header) {
  const int n = size();
  std::vector<CallHeader> all(n);
  std::vector<size_t> counts(n, sizeof(CallHeader));
  COHORT_RETURN_IF_ERROR(RunAllgather(local_, &header, sizeof(CallHeader), all.data(),
                                      counts.data(), DataType::kUInt8));
  for (int l = 0; l < n; ++l) {
    Status same = CompareCalls(header, local_.mesh().Name(me_), all[l], local_.mesh().Name(l));
    if (!same.ok()) return local_.Fail(same);
  }
  return Status::OK();
}

Status IpcPeers::Sync(GpuRun& run, const CallHeader& header, const char* what) {
  if (!local_.failure().ok()) return local_.failure();
  Status done = SynchronizeStream(run.api, run.stream, run.sync_event, local_.CallDeadline(),
                                  std::string("the IPC ") +
                                      CollectiveName(static_cast<CollectiveKind>(header.kind)) +
                                      " (" + what + ")",
                                  [this] { return local_.failure(); });
  if (!done.ok()) return local_.Fail(done);
  if (size() == 1) return Status::OK();
  // The exchange runs as an allgather: a lost peer or a timeout there says
  // which GPU collective it served (a mismatch names the calls already).
  Status exchanged = Exchange(header);
  if (exchanged.ok() || exchanged.code() == Status::Code::kMismatch) return exchanged;
  return exchanged.WithContext(std::string("GPU ") +
                               CollectiveName(static_cast<CollectiveKind>(header.kind)) + " (" +
                               what + ")");
}

}  // namespace cohort::gpu
