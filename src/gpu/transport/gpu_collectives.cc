// GPU collectives over the chosen transport (gpu_collectives.h).
#include "gpu/transport/gpu_collectives.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "collectives/collectives.h"
#include "gpu/transport/ipc_collectives.h"
#include "gpu/transport/nccl_mapping.h"
#include "gpu/transport/outcomes.h"

namespace cohort::gpu {
namespace {

// What each rank tells the others at setup.
struct RankRecord {
  char pci_id[32];
  int32_t device;
  int32_t nccl_ok;
  char error[472];  // why NCCL is missing
};
static_assert(sizeof(RankRecord) == 512);

Result<std::vector<RankRecord>> GatherRecords(Communicator& comm, const RankRecord& mine) {
  std::vector<RankRecord> all(comm.size());
  std::vector<size_t> counts(comm.size(), sizeof(RankRecord));
  COHORT_RETURN_IF_ERROR(
      RunAllgather(comm, &mine, sizeof(RankRecord), all.data(), counts.data(), DataType::kUInt8));
  return all;
}

std::string Text(const char* chars, size_t size) {
  return std::string(chars, strnlen(chars, size));
}

void SetText(char* out, size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::strncpy(out, text.c_str(), size - 1);
}

// The hosts of `comm` (ranks grouped by host key, each ascending; hosts in
// order of their lowest rank).
std::vector<std::vector<int>> Hosts(const Mesh& mesh) {
  std::vector<std::vector<int>> hosts;
  std::map<std::string, size_t> index;
  for (int r = 0; r < mesh.size; ++r) {
    auto [it, added] = index.emplace(mesh.peers[r].host_key, hosts.size());
    if (added) hosts.emplace_back();
    hosts[it->second].push_back(r);
  }
  return hosts;
}

bool EqualCounts(const std::vector<size_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<size_t>()) ==
         counts.end();
}

}  // namespace

Result<std::unique_ptr<GpuCollectives>> GpuCollectives::Create(Communicator& comm,
                                                               const GpuDeps& deps, int device,
                                                               const GpuStackOptions& options) {
  if (deps.api == nullptr || deps.compiler == nullptr) {
    return Status::InvalidArgument("GPU collectives need the CUDA driver and a kernel compiler");
  }
  std::unique_ptr<GpuCollectives> c(new GpuCollectives(comm, *deps.api));
  COHORT_RETURN_IF_ERROR(c->Setup(deps, device, options));
  return c;
}

GpuCollectives::~GpuCollectives() {
  // Queued work may still read the buffers unmapped and freed below: wait
  // for it (bounded). After a failure NCCL's kernels may wait on a dead
  // peer forever, so NCCL is aborted first; IPC and staged work is local
  // copies and kernels, which finish on their own.
  if (!comm_.failure().ok() && nccl_ != nullptr) nccl_->Abort();
  if (stream_.handle() != nullptr && sync_event_.valid()) {
    (void)api_.UseDevice(device_.ordinal);
    (void)SynchronizeStream(api_, stream_.handle(), sync_event_.handle(), comm_.CallDeadline(),
                            "the last GPU collective before shutdown");
  }
}

Status GpuCollectives::Enter() {
  if (!comm_.failure().ok()) return comm_.failure();
  return api_.UseDevice(device_.ordinal);
}

Status GpuCollectives::Setup(const GpuDeps& deps, int device, const GpuStackOptions& options) {
  COHORT_RETURN_IF_ERROR(api_.UseDevice(device));
  Result<DeviceInfo> info = api_.GetDeviceInfo(device);
  if (!info.ok()) return info.status();
  device_ = *info;
  Result<Stream> stream = Stream::Create(api_);
  if (!stream.ok()) return stream.status();
  stream_ = std::move(*stream);
  Result<Event> event = Event::Create(api_);
  if (!event.ok()) return event.status();
  sync_event_ = std::move(*event);
  kernels_ = std::make_unique<KernelCache>(api_, *deps.compiler, options.kernel_cache_dir);
  reducer_ = std::make_unique<DeviceReducer>(api_, *kernels_, device_);

  // 1. Who has which GPU, and who has NCCL.
  RankRecord mine;
  std::memset(&mine, 0, sizeof(mine));
  SetText(mine.pci_id, sizeof(mine.pci_id), device_.pci_id);
  mine.device = device;
  mine.nccl_ok = deps.nccl != nullptr ? 1 : 0;
  SetText(mine.error, sizeof(mine.error), deps.nccl_missing);
  Result<std::vector<RankRecord>> all = GatherRecords(comm_, mine);
  if (!all.ok()) return all.status();
  const Mesh& mesh = comm_.mesh();
  const std::vector<std::vector<int>> hosts = Hosts(mesh);
  facts_.ranks = comm_.size();
  facts_.hosts = static_cast<int>(hosts.size());
  facts_.setting = options.transport;
  for (const std::vector<int>& host : hosts) {
    for (size_t i = 0; i < host.size() && facts_.shared_device.empty(); ++i) {
      for (size_t j = i + 1; j < host.size(); ++j) {
        const RankRecord& a = (*all)[host[i]];
        const RankRecord& b = (*all)[host[j]];
        if (Text(a.pci_id, sizeof(a.pci_id)) != Text(b.pci_id, sizeof(b.pci_id))) continue;
        facts_.shared_device = "ranks " + std::to_string(mesh.Name(host[i])) + " and " +
                               std::to_string(mesh.Name(host[j])) + " share GPU " +
                               Text(a.pci_id, sizeof(a.pci_id));
        break;
      }
    }
  }
  for (int r = 0; r < comm_.size(); ++r) {
    if ((*all)[r].nccl_ok) continue;
    facts_.nccl_missing = "rank " + std::to_string(mesh.Name(r)) + ": " +
                          Text((*all)[r].error, sizeof((*all)[r].error));
    break;
  }

  // 2. CUDA IPC among the ranks of each host.
  std::vector<int> local_ranks;
  int local_index = 0;
  for (const std::vector<int>& host : hosts) {
    auto at = std::find(host.begin(), host.end(), comm_.rank());
    if (at == host.end()) continue;
    local_ranks = host;
    local_index = static_cast<int>(at - host.begin());
  }
  Communicator* local = &comm_;
  if (static_cast<int>(local_ranks.size()) < comm_.size()) {
    local_comm_ = std::make_unique<Communicator>(comm_, local_ranks);
    local = local_comm_.get();
  }
  Status ipc = Status::OK();
  if (local->size() > 1) {
    Result<std::unique_ptr<IpcPeers>> peers = IpcPeers::Create(*local, api_, options.buffer_bytes);
    if (peers.ok()) {
      ipc_ = std::move(*peers);
    } else {
      if (!comm_.failure().ok()) return comm_.failure();
      ipc = peers.status();
    }
  }
  Result<std::vector<std::string>> ipc_outcomes = GatherOutcomes(comm_, ipc);
  if (!ipc_outcomes.ok()) return ipc_outcomes.status();
  if (const int r = FirstFailedRank(*ipc_outcomes); r >= 0) facts_.ipc_missing = (*ipc_outcomes)[r];
  if (!facts_.ipc_missing.empty()) ipc_.reset();

  // 3. The transport, and what it needs.
  Result<GpuTransport> chosen = ChooseGpuTransport(facts_);
  if (!chosen.ok()) return chosen.status();
  transport_ = *chosen;
  if (transport_ == GpuTransport::kNccl) {
    Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(comm_, *deps.nccl);
    if (!nccl.ok()) return nccl.status();
    nccl_ = std::move(*nccl);
    nccl_description_ = deps.nccl->Describe();
  }
  const bool uniform = std::all_of(hosts.begin(), hosts.end(), [&](const std::vector<int>& h) {
    return h.size() == hosts[0].size();
  });
  if (facts_.hosts > 1 && uniform && ipc_ != nullptr) {
    std::vector<int> cross;
    for (const std::vector<int>& host : hosts) cross.push_back(host[local_index]);
    cross_comm_ = std::make_unique<Communicator>(comm_, cross);
  }
  return Status::OK();
}

std::string GpuCollectives::Describe() const {
  std::string s = std::string(GpuTransportName(transport_)) + " among " +
                  std::to_string(facts_.ranks) + " ranks on " + std::to_string(facts_.hosts) +
                  (facts_.hosts == 1 ? " host" : " hosts");
  if (transport_ == GpuTransport::kNccl) s += " (" + nccl_description_ + ")";
  if (transport_ == GpuTransport::kStaged && cross_comm_ != nullptr) s += " (hierarchical)";
  return s + ", GPU " + device_.pci_id + " " + device_.name;
}

GpuTransport GpuCollectives::TransportForReduction(DataType type, ReduceOp op) const {
  return TransportForCall(transport_, facts_, NcclTakesReduction(type, op),
                          op == ReduceOp::kAdasum);
}

Status GpuCollectives::Local(DevicePtr send, DevicePtr recv, size_t count, const ReduceSpec& spec) {
  GpuRun run = Run();
  return run.reducer.Reduce(recv, {send}, count, spec, run.stream);
}

Status GpuCollectives::Allreduce(DevicePtr send, DevicePtr recv, size_t count, DataType type,
                                 ReduceOp op, double prescale, double postscale) {
  COHORT_RETURN_IF_ERROR(Enter());
  ReduceSpec spec;
  spec.type = type;
  spec.op = op;
  spec.prescale = prescale;
  spec.postscale = postscale;
  GpuRun run = Run();
  switch (TransportForReduction(type, op)) {
    case GpuTransport::kNccl:
      return nccl_->Allreduce(run, send, recv, count, spec);
    case GpuTransport::kIpc:
      if (ipc_ == nullptr) {  // one rank
        spec.finish = true;
        return Local(send, recv, count, spec);
      }
      return IpcAllreduce(*ipc_, run, send, recv, count, spec);
    case GpuTransport::kStaged:
      if (op != ReduceOp::kAdasum && cross_comm_ != nullptr) {
        return StagedHierarchicalAllreduce(*ipc_, *cross_comm_, comm_.size(), run, staging_, send,
                                           recv, count, spec);
      }
      return StagedAllreduce(comm_, run, staging_, send, recv, count, spec);
  }
  return Status::Internal("no GPU transport");
}

Status GpuCollectives::ReduceScatter(DevicePtr send, DevicePtr recv,
                                     const std::vector<size_t>& counts, DataType type,
                                     ReduceOp op) {
  COHORT_RETURN_IF_ERROR(Enter());
  if (static_cast<int>(counts.size()) != comm_.size()) {
    return comm_.Fail(Status::InvalidArgument("reducescatter: " + std::to_string(counts.size()) +
                                              " counts for " + std::to_string(comm_.size()) +
                                              " ranks"));
  }
  ReduceSpec spec;
  spec.type = type;
  spec.op = op;
  spec.finish = true;
  spec.ranks = comm_.size();
  GpuRun run = Run();
  const GpuTransport t =
      TransportForCall(transport_, facts_, NcclTakesReduction(type, op) && EqualCounts(counts),
                       op == ReduceOp::kAdasum);
  if (t == GpuTransport::kNccl) return nccl_->ReduceScatter(run, send, recv, counts[0], spec);
  if (t == GpuTransport::kIpc && OneHostIpc()) {
    if (ipc_ == nullptr) return Local(send, recv, counts[0], spec);
    return IpcReduceScatter(*ipc_, run, send, recv, counts, spec);
  }
  return StagedReduceScatter(comm_, run, staging_, send, recv, counts, spec);
}

Status GpuCollectives::Allgather(DevicePtr send, DevicePtr recv, const std::vector<size_t>& counts,
                                 DataType type) {
  COHORT_RETURN_IF_ERROR(Enter());
  if (static_cast<int>(counts.size()) != comm_.size()) {
    return comm_.Fail(Status::InvalidArgument("allgather: " + std::to_string(counts.size()) +
                                              " counts for " + std::to_string(comm_.size()) +
                                              " ranks"));
  }
  GpuRun run = Run();
  const GpuTransport t = TransportForCall(transport_, facts_, EqualCounts(counts), false);
  if (t == GpuTransport::kNccl) return nccl_->Allgather(run, send, recv, counts[0], type);
  if (t == GpuTransport::kIpc && OneHostIpc()) {
    if (ipc_ == nullptr) {
      return api_.CopyAsync(recv, send, counts[0] * DataTypeSize(type), run.stream);
    }
    return IpcAllgather(*ipc_, run, send, recv, counts, type);
  }
  return StagedAllgather(comm_, run, staging_, send, recv, counts, type);
}

Status GpuCollectives::Broadcast(DevicePtr buf, size_t count, DataType type, int root) {
  COHORT_RETURN_IF_ERROR(Enter());
  if (root < 0 || root >= comm_.size()) {
    return comm_.Fail(Status::InvalidArgument("broadcast: root " + std::to_string(root) +
                                              " is not a rank of this job (size " +
                                              std::to_string(comm_.size()) + ")"));
  }
  GpuRun run = Run();
  const GpuTransport t = TransportForCall(transport_, facts_, true, false);
  if (t == GpuTransport::kNccl) return nccl_->Broadcast(run, buf, count, type, root);
  if (t == GpuTransport::kIpc && OneHostIpc()) {
    if (ipc_ == nullptr) return Status::OK();
    return IpcBroadcast(*ipc_, run, buf, count, type, root);
  }
  return StagedBroadcast(comm_, run, staging_, buf, count, type, root);
}

Status GpuCollectives::Alltoall(DevicePtr send, const std::vector<size_t>& send_counts,
                                DevicePtr recv, const std::vector<size_t>& recv_counts,
                                DataType type) {
  COHORT_RETURN_IF_ERROR(Enter());
  if (static_cast<int>(send_counts.size()) != comm_.size() ||
      static_cast<int>(recv_counts.size()) != comm_.size()) {
    return comm_.Fail(
        Status::InvalidArgument("alltoall: needs one send and one receive count "
                                "per rank"));
  }
  GpuRun run = Run();
  return StagedAlltoall(comm_, run, staging_, send, send_counts, recv, recv_counts, type);
}

Status GpuCollectives::Synchronize() {
  COHORT_RETURN_IF_ERROR(Enter());
  Status done =
      SynchronizeStream(api_, stream_.handle(), sync_event_.handle(), comm_.CallDeadline(),
                        "queued GPU collectives", [this] {
                          COHORT_RETURN_IF_ERROR(comm_.failure());
                          COHORT_RETURN_IF_ERROR(CheckPeersAlive(comm_, "a GPU collective"));
                          return nccl_ != nullptr ? nccl_->Health() : Status::OK();
                        });
  if (done.ok()) return done;
  if (nccl_ != nullptr) nccl_->Abort();
  return comm_.Fail(done);
}

}  // namespace cohort::gpu
