// CUDA IPC buffers among the ranks of a host (ipc_peers.h).
#include "gpu/transport/ipc_peers.h"

#include <cstring>

#include "collectives/collectives.h"
#include "common/logging.h"
#include "gpu/stream.h"

namespace cohort::gpu {
namespace {

// What each rank tells the others at setup: its handle, or why it has none.
struct SetupRecord {
  char handle[64];
  uint64_t bytes;
  int32_t ok;
  char error[436];
};
static_assert(sizeof(SetupRecord) == 512);

SetupRecord Record(const Status& status) {
  SetupRecord r;
  std::memset(&r, 0, sizeof(r));
  r.ok = status.ok() ? 1 : 0;
  std::strncpy(r.error, status.message().c_str(), sizeof(r.error) - 1);
  return r;
}

// Allgathers one record per local rank.
Result<std::vector<SetupRecord>> Gather(Communicator& local, const SetupRecord& mine) {
  const int n = local.size();
  std::vector<SetupRecord> all(n);
  std::vector<size_t> counts(n, sizeof(SetupRecord));
  COHORT_RETURN_IF_ERROR(RunAllgather(local, &mine, sizeof(SetupRecord), all.data(),
                                      counts.data(), DataType::kUInt8));
  return all;
}

// The first failure among the records, as one message every rank shares.
Status FirstFailure(Communicator& local, const std::vector<SetupRecord>& all, const char* step) {
  for (int l = 0; l < static_cast<int>(all.size()); ++l) {
    if (all[l].ok) continue;
    return Status::NotInitialized(std::string("CUDA IPC among the ranks of a host failed: ") +
                                  local.mesh().Describe(l) + " could not " + step + ": " +
                                  std::string(all[l].error, strnlen(all[l].error, sizeof(all[l].error))));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<IpcPeers>> IpcPeers::Create(Communicator& local, CudaApi& api,
                                                   size_t buffer_bytes) {
  std::unique_ptr<IpcPeers> peers(new IpcPeers(local, api));
  const int n = local.size();
  peers->me_ = local.rank();
  // Halves a multiple of 256 bytes, so every half starts aligned for any type.
  peers->half_bytes_ = std::max<size_t>(256, buffer_bytes / 2 / 256 * 256);

  Status mine = Status::OK();
  SetupRecord record;
  Result<DeviceBuffer> own = DeviceBuffer::Allocate(api, 2 * peers->half_bytes_);
  if (own.ok()) {
    peers->own_ = std::move(*own);
    Result<IpcMemHandle> handle = api.IpcGetMemHandle(peers->own_.ptr());
    mine = handle.status();
    record = Record(mine);
    if (handle.ok()) std::memcpy(record.handle, handle->bytes.data(), sizeof(record.handle));
  } else {
    mine = own.status();
    record = Record(mine);
  }
  record.bytes = 2 * peers->half_bytes_;
  Result<std::vector<SetupRecord>> all = Gather(local, record);
  if (!all.ok()) return all.status();
  COHORT_RETURN_IF_ERROR(FirstFailure(local, *all, "export its buffer"));

  // Map every peer's buffer; then agree that every rank mapped every peer.
  peers->buffers_.assign(n, 0);
  peers->buffers_[peers->me_] = peers->own_.ptr();
  Status opened = Status::OK();
  for (int l = 0; l < n && opened.ok(); ++l) {
    if (l == peers->me_) continue;
    if ((*all)[l].bytes != record.bytes) {
      opened = Status::InvalidArgument(
          "its buffer is " + std::to_string(record.bytes) + " bytes but " +
          local.mesh().Describe(l) + "'s is " + std::to_string((*all)[l].bytes) +
          " (set COHORT_GPU_BUFFER_BYTES alike on every rank)");
      break;
    }
    IpcMemHandle handle;
    std::memcpy(handle.bytes.data(), (*all)[l].handle, handle.bytes.size());
    Result<DevicePtr> ptr = api.IpcOpenMemHandle(handle);
    if (ptr.ok()) {
      peers->buffers_[l] = *ptr;
    } else {
      opened = ptr.status().WithContext("mapping " + local.mesh().Describe(l) + "'s buffer");
    }
  }
  Result<std::vector<SetupRecord>> agreed = Gather(local, Record(opened));
  if (!agreed.ok()) return agreed.status();
  COHORT_RETURN_IF_ERROR(FirstFailure(local, *agreed, "map its peers' buffers"));
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
    Status same =
        CompareCalls(header, local_.mesh().Name(me_), all[l], local_.mesh().Name(l));
    if (!same.ok()) return local_.Fail(same);
  }
  return Status::OK();
}

Status IpcPeers::Sync(GpuRun& run, const CallHeader& header, const char* what) {
  if (!local_.failure().ok()) return local_.failure();
  Status done = SynchronizeStream(run.api, run.stream, run.sync_event, local_.CallDeadline(),
                                  std::string("the IPC ") + CollectiveName(static_cast<CollectiveKind>(header.kind)) +
                                      " (" + what + ")",
                                  [this] { return local_.failure(); });
  if (!done.ok()) return local_.Fail(done);
  if (size() == 1) return Status::OK();
  return Exchange(header);
}

}  // namespace cohort::gpu
