// Argument checks and algorithm selection for every collective.
#include "collectives/collectives.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "collectives/adasum_allreduce.h"
#include "collectives/alltoall.h"
#include "collectives/broadcast.h"
#include "collectives/call_header.h"
#include "collectives/cma_collectives.h"
#include "collectives/hierarchical_allreduce.h"
#include "collectives/recursive_doubling_allreduce.h"
#include "collectives/reduce_kernels.h"
#include "collectives/ring.h"
#include "collectives/shm_allgather.h"
#include "collectives/shm_allreduce.h"
#include "collectives/transfers.h"

namespace cohort {
namespace {

// Local argument checks: a bad argument breaks the communicator like any
// other error, so the peers learn of it instead of waiting for this rank.
Status CheckCommon(Communicator& comm, const char* what, int dtype) {
  if (!comm.failure().ok()) return comm.failure();
  if (!IsValidDataType(dtype)) {
    return comm.Fail(Status::InvalidArgument(std::string(what) + ": invalid data type value " +
                                             std::to_string(dtype)));
  }
  return Status::OK();
}

Status CheckBuffer(Communicator& comm, const char* what, const char* name, const void* p,
                   size_t count) {
  if (p == nullptr && count > 0) {
    return comm.Fail(Status::InvalidArgument(std::string(what) + ": " + name + " is null but " +
                                             std::to_string(count) + " elements were given"));
  }
  return Status::OK();
}

Status CheckOp(Communicator& comm, const char* what, int op) {
  if (!IsValidReduceOp(op)) {
    return comm.Fail(Status::InvalidArgument(std::string(what) + ": invalid reduce op value " +
                                             std::to_string(op)));
  }
  return Status::OK();
}

CallHeader MakeHeader(Communicator& comm, CollectiveKind kind, size_t count, DataType type) {
  CallHeader h;
  h.call = comm.NextCall();
  h.kind = static_cast<int32_t>(kind);
  h.count = count;
  h.dtype = static_cast<int32_t>(type);
  return h;
}

size_t Sum(const size_t* counts, int n) { return std::accumulate(counts, counts + n, size_t{0}); }

RingBlocks BlocksFromCounts(const size_t* counts, int n, DataType type) {
  RingBlocks blocks{std::vector<size_t>(n + 1, 0), type};
  for (int b = 0; b < n; ++b) blocks.offsets[b + 1] = blocks.offsets[b] + counts[b];
  return blocks;
}

Status RingAllreduce(Communicator& comm, void* buf, size_t count, DataType type, ReduceOp op,
                     double postscale, const CallHeader& header) {
  const int n = comm.size(), r = comm.rank();
  const RingMembers ring = AllRanks(comm);
  Transfers transfers(comm, "allreduce");
  transfers.PostHeaderCheck(ring.right(), ring.left(), header, header);
  const RingBlocks blocks = EvenBlocks(count, n, type);
  Clock::time_point start = Clock::now();
  COHORT_RETURN_IF_ERROR(RingReduceScatterPhase(comm, transfers, ring, buf, blocks, op));
  const size_t esize = DataTypeSize(type);
  FinishReduction(static_cast<unsigned char*>(buf) + blocks.offsets[r] * esize,
                  blocks.offsets[r + 1] - blocks.offsets[r], type, op, n, postscale);
  comm.Phase("RING_REDUCESCATTER", start);
  start = Clock::now();
  COHORT_RETURN_IF_ERROR(RingAllgatherPhase(comm, transfers, ring, buf, blocks));
  comm.Phase("RING_ALLGATHER", start);
  return Status::OK();
}

}  // namespace

AllreduceAlgorithm ChooseAllreduceAlgorithm(const Mesh& mesh, size_t bytes,
                                            const CommunicatorOptions& options) {
  if (mesh.all_local_shm()) return AllreduceAlgorithm::kSharedMemory;
  if (bytes <= options.small_message_bytes) return AllreduceAlgorithm::kRecursiveDoubling;
  if (mesh.cross_size > 1 && mesh.local_size > 1 && CheckHierarchicalLayout(mesh).ok()) {
    return AllreduceAlgorithm::kHierarchical;
  }
  return AllreduceAlgorithm::kRing;
}

namespace {

// The allreduce proper. `wire` other than `type`: the hierarchical algorithm
// compressed once per host (float32 data, 16-bit `wire` between hosts).
Status AllreduceOverWire(Communicator& comm, const void* send, void* recv, size_t count,
                         DataType type, ReduceOp op, double prescale, double postscale,
                         AllreduceAlgorithm algorithm, DataType wire) {
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "allreduce", static_cast<int>(type)));
  COHORT_RETURN_IF_ERROR(CheckOp(comm, "allreduce", static_cast<int>(op)));
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allreduce", "send buffer", send, count));
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allreduce", "receive buffer", recv, count));
  CallHeader header = MakeHeader(comm, CollectiveKind::kAllreduce, count, type);
  header.op = static_cast<int32_t>(op);
  header.prescale = prescale;
  header.postscale = postscale;
  if (wire != type) header.path = wire == DataType::kFloat16 ? kWireFloat16 : kWireBFloat16;
  if (op == ReduceOp::kAdasum) {
    // Its own algorithm whatever the topology: the pairwise tree is the op.
    ScaleCopy(recv, send, count, type, prescale);
    if (comm.size() == 1) return AdasumAllreduce(comm, recv, count, type, postscale, header);
    const Clock::time_point start = Clock::now();
    COHORT_RETURN_IF_ERROR(AdasumAllreduce(comm, recv, count, type, postscale, header));
    comm.Phase("ADASUM", start);
    return Status::OK();
  }
  const size_t bytes = count * DataTypeSize(type);
  if (algorithm == AllreduceAlgorithm::kAuto) {
    algorithm = ChooseAllreduceAlgorithm(comm.mesh(), bytes, comm.options());
  }
  if (algorithm == AllreduceAlgorithm::kHierarchical) {
    Status layout = CheckHierarchicalLayout(comm.mesh());
    if (!layout.ok()) return comm.Fail(layout.WithContext("allreduce"));
  }
  if (algorithm == AllreduceAlgorithm::kSharedMemory) {
    if (!comm.mesh().all_local_shm()) {
      return comm.Fail(Status::InvalidArgument(
          "allreduce: the shared-memory algorithm needs every rank on one host with shared "
          "memory enabled"));
    }
    const Clock::time_point start = Clock::now();
    if (UseSingleCopy(comm, bytes)) {
      header.path = kSingleCopy;
      COHORT_RETURN_IF_ERROR(CmaAllreduce(comm, {AllreducePiece{send, recv, count}}, type, op,
                                          prescale, postscale, header));
      comm.Phase("CMA_ALLREDUCE", start);
      return Status::OK();
    }
    COHORT_RETURN_IF_ERROR(
        ShmAllreduce(comm, send, recv, count, type, op, prescale, postscale, header));
    comm.Phase("SHM_ALLREDUCE", start);
    return Status::OK();
  }
  ScaleCopy(recv, send, count, type, prescale);
  if (comm.size() == 1) {
    FinishReduction(recv, count, type, op, 1, postscale);
    return Status::OK();
  }
  if (algorithm == AllreduceAlgorithm::kRecursiveDoubling) {
    const Clock::time_point start = Clock::now();
    COHORT_RETURN_IF_ERROR(
        RecursiveDoublingAllreduce(comm, recv, count, type, op, postscale, header));
    comm.Phase("RECURSIVE_DOUBLING", start);
    return Status::OK();
  }
  if (algorithm == AllreduceAlgorithm::kHierarchical) {
    return HierarchicalAllreduce(comm, recv, count, type, op, postscale, header, wire);
  }
  return RingAllreduce(comm, recv, count, type, op, postscale, header);
}

}  // namespace

Status RunAllreduce(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op, double prescale, double postscale, AllreduceAlgorithm algorithm,
                    Compression compression) {
  if (compression != Compression::kNone && type == DataType::kFloat32) {
    const DataType wire =
        compression == Compression::kFloat16 ? DataType::kFloat16 : DataType::kBFloat16;
    if (count > 0 && (send == nullptr || recv == nullptr)) {
      return RunAllreduce(comm, send, recv, count, type, op, prescale, postscale, algorithm);
    }
    const AllreduceAlgorithm chosen =
        algorithm == AllreduceAlgorithm::kAuto
            ? ChooseAllreduceAlgorithm(comm.mesh(), count * DataTypeSize(wire), comm.options())
            : algorithm;
    if (chosen == AllreduceAlgorithm::kHierarchical && op != ReduceOp::kAdasum) {
      // Compressed once per host: reduced in float32 within each host, only
      // what crosses hosts travels as 16 bits (hierarchical_allreduce.h).
      return AllreduceOverWire(comm, send, recv, count, type, op, prescale, postscale, chosen,
                               wire);
    }
    Clock::time_point start = Clock::now();
    std::vector<uint16_t> packed(std::max<size_t>(count, 1));
    ConvertFloat32To16(packed.data(), wire, static_cast<const float*>(send), count);
    comm.Phase("COMPRESS", start);
    COHORT_RETURN_IF_ERROR(RunAllreduce(comm, packed.data(), packed.data(), count, wire, op,
                                        prescale, postscale, algorithm));
    start = Clock::now();
    Convert16ToFloat32(static_cast<float*>(recv), packed.data(), wire, count);
    comm.Phase("DECOMPRESS", start);
    return Status::OK();
  }
  return AllreduceOverWire(comm, send, recv, count, type, op, prescale, postscale, algorithm, type);
}

bool CanAllreducePieces(Communicator& comm) { return comm.mesh().all_local_shm(); }

Status RunAllreducePieces(Communicator& comm, const std::vector<AllreducePiece>& pieces,
                          DataType type, ReduceOp op, double prescale, double postscale) {
  if (!CanAllreducePieces(comm)) {
    return comm.Fail(Status::InvalidArgument(
        "allreduce of several buffers: needs every rank on one host with shared memory"));
  }
  size_t count = 0;
  for (const AllreducePiece& p : pieces) {
    COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allreduce", "send buffer", p.send, p.count));
    COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allreduce", "receive buffer", p.recv, p.count));
    count += p.count;
  }
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "allreduce", static_cast<int>(type)));
  COHORT_RETURN_IF_ERROR(CheckOp(comm, "allreduce", static_cast<int>(op)));
  CallHeader header = MakeHeader(comm, CollectiveKind::kAllreduce, count, type);
  header.op = static_cast<int32_t>(op);
  header.prescale = prescale;
  header.postscale = postscale;
  const Clock::time_point start = Clock::now();
  if (UseSingleCopy(comm, count * DataTypeSize(type), pieces.size())) {
    header.path = kSingleCopy;
    COHORT_RETURN_IF_ERROR(CmaAllreduce(comm, pieces, type, op, prescale, postscale, header));
    comm.Phase("CMA_ALLREDUCE", start);
    return Status::OK();
  }
  COHORT_RETURN_IF_ERROR(ShmAllreduce(comm, pieces, type, op, prescale, postscale, header));
  comm.Phase("SHM_ALLREDUCE", start);
  return Status::OK();
}

Status RunReduceScatter(Communicator& comm, const void* send, void* recv, const size_t* recv_counts,
                        DataType type, ReduceOp op) {
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "reducescatter", static_cast<int>(type)));
  COHORT_RETURN_IF_ERROR(CheckOp(comm, "reducescatter", static_cast<int>(op)));
  if (recv_counts == nullptr) {
    return comm.Fail(Status::InvalidArgument("reducescatter: recv_counts is null"));
  }
  const int n = comm.size(), r = comm.rank();
  const size_t total = Sum(recv_counts, n);
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "reducescatter", "send buffer", send, total));
  COHORT_RETURN_IF_ERROR(
      CheckBuffer(comm, "reducescatter", "receive buffer", recv, recv_counts[r]));
  CallHeader header = MakeHeader(comm, CollectiveKind::kReduceScatter, total, type);
  header.op = static_cast<int32_t>(op);
  header.layout = HashCounts(recv_counts, n);
  const size_t esize = DataTypeSize(type);
  const RingBlocks blocks = BlocksFromCounts(recv_counts, n, type);
  if (n > 1 && comm.mesh().all_local_shm()) {
    // One host: through the shared-memory slots, like allreduce, instead of a
    // ring over the links (several times faster; no copy of the input).
    const size_t begin = blocks.offsets[r];
    const Clock::time_point start = Clock::now();
    if (UseSingleCopy(comm, total * esize)) {
      header.path = kSingleCopy;
      COHORT_RETURN_IF_ERROR(CmaReduceScatter(
          comm, send, total, KeptRange{begin, begin + recv_counts[r], recv}, type, op, header));
      comm.Phase("CMA_REDUCESCATTER", start);
      return Status::OK();
    }
    COHORT_RETURN_IF_ERROR(ShmReduceScatter(
        comm, send, total, KeptRange{begin, begin + recv_counts[r], recv}, type, op, header));
    comm.Phase("SHM_REDUCESCATTER", start);
    return Status::OK();
  }
  // The ring reduces in place, so it works on a copy of the input.
  std::vector<unsigned char> work(total * esize);
  if (total > 0) std::memcpy(work.data(), send, total * esize);
  if (n > 1) {
    const RingMembers ring = AllRanks(comm);
    Transfers transfers(comm, "reducescatter");
    transfers.PostHeaderCheck(ring.right(), ring.left(), header, header);
    COHORT_RETURN_IF_ERROR(RingReduceScatterPhase(comm, transfers, ring, work.data(), blocks, op));
  }
  unsigned char* mine = work.data() + blocks.offsets[r] * esize;
  FinishReduction(mine, recv_counts[r], type, op, n, 1.0);
  if (recv_counts[r] > 0) std::memcpy(recv, mine, recv_counts[r] * esize);
  return Status::OK();
}

Status RunAllgather(Communicator& comm, const void* send, size_t send_count, void* recv,
                    const size_t* recv_counts, DataType type) {
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "allgather", static_cast<int>(type)));
  if (recv_counts == nullptr) {
    return comm.Fail(Status::InvalidArgument("allgather: recv_counts is null"));
  }
  const int n = comm.size(), r = comm.rank();
  if (recv_counts[r] != send_count) {
    return comm.Fail(Status::InvalidArgument("allgather: rank " + std::to_string(r) + " sends " +
                                             std::to_string(send_count) +
                                             " elements but recv_counts[" + std::to_string(r) +
                                             "] is " + std::to_string(recv_counts[r])));
  }
  const size_t total = Sum(recv_counts, n);
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allgather", "send buffer", send, send_count));
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "allgather", "receive buffer", recv, total));
  CallHeader header = MakeHeader(comm, CollectiveKind::kAllgather, total, type);
  header.layout = HashCounts(recv_counts, n);
  const RingBlocks blocks = BlocksFromCounts(recv_counts, n, type);
  const size_t esize = DataTypeSize(type);
  auto* out = static_cast<unsigned char*>(recv);
  if (send_count > 0 && out + blocks.offsets[r] * esize != send) {
    std::memmove(out + blocks.offsets[r] * esize, send, send_count * esize);
  }
  if (n == 1) return Status::OK();
  if (comm.mesh().all_local_shm()) {
    // One host: through the shared-memory slots, like allreduce, instead of
    // a ring over the links (one copy in and one out per block, no ring steps).
    const Clock::time_point start = Clock::now();
    if (UseSingleCopy(comm, total * esize)) {
      header.path = kSingleCopy;
      COHORT_RETURN_IF_ERROR(CmaAllgather(comm, recv, blocks.offsets, type, header));
      comm.Phase("CMA_ALLGATHER", start);
      return Status::OK();
    }
    COHORT_RETURN_IF_ERROR(ShmAllgather(comm, recv, blocks.offsets, type, header));
    comm.Phase("SHM_ALLGATHER", start);
    return Status::OK();
  }
  const RingMembers ring = AllRanks(comm);
  Transfers transfers(comm, "allgather");
  transfers.PostHeaderCheck(ring.right(), ring.left(), header, header);
  return RingAllgatherPhase(comm, transfers, ring, recv, blocks);
}

Status RunBroadcast(Communicator& comm, void* buf, size_t count, DataType type, int root) {
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "broadcast", static_cast<int>(type)));
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "broadcast", "buffer", buf, count));
  if (root < 0 || root >= comm.size()) {
    return comm.Fail(Status::InvalidArgument("broadcast: root " + std::to_string(root) +
                                             " is not a rank of this job (size " +
                                             std::to_string(comm.size()) + ")"));
  }
  CallHeader header = MakeHeader(comm, CollectiveKind::kBroadcast, count, type);
  header.root = root;
  if (comm.size() == 1) return Status::OK();
  const size_t bytes = count * DataTypeSize(type);
  if (UseSingleCopy(comm, bytes)) {
    header.path = kSingleCopy;
    const Clock::time_point start = Clock::now();
    COHORT_RETURN_IF_ERROR(CmaBroadcast(comm, buf, bytes, root, header));
    comm.Phase("CMA_BROADCAST", start);
    return Status::OK();
  }
  if (bytes <= comm.options().small_message_bytes) {
    return BinomialTreeBroadcast(comm, buf, bytes, root, header);
  }
  return ChainBroadcast(comm, buf, bytes, root, header);
}

Status RunAlltoall(Communicator& comm, const void* send, const size_t* send_counts, void* recv,
                   const size_t* recv_counts, DataType type) {
  COHORT_RETURN_IF_ERROR(CheckCommon(comm, "alltoall", static_cast<int>(type)));
  if (send_counts == nullptr || recv_counts == nullptr) {
    return comm.Fail(Status::InvalidArgument("alltoall: send_counts and recv_counts are required"));
  }
  const int n = comm.size();
  COHORT_RETURN_IF_ERROR(CheckBuffer(comm, "alltoall", "send buffer", send, Sum(send_counts, n)));
  COHORT_RETURN_IF_ERROR(
      CheckBuffer(comm, "alltoall", "receive buffer", recv, Sum(recv_counts, n)));
  CallHeader header = MakeHeader(comm, CollectiveKind::kAlltoall, 0, type);
  return PairwiseAlltoall(comm, send, send_counts, recv, recv_counts, type, header);
}

Status RunBarrier(Communicator& comm) {
  if (!comm.failure().ok()) return comm.failure();
  CallHeader header = MakeHeader(comm, CollectiveKind::kBarrier, 0, DataType::kUInt8);
  if (comm.size() == 1) return Status::OK();
  return DisseminationBarrier(comm, header);
}

}  // namespace cohort
