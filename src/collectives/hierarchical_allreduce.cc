// Hierarchical allreduce over L ranks on each of H hosts, all local ranks
// busy in every phase:
//   1. intra-host ring reduce-scatter: the buffer is cut into L slices and
//      local rank l ends with slice l summed over its host (shared-memory
//      links when the host has them);
//   2. inter-host ring allreduce of slice l among the H ranks with local rank
//      l, one per host (TCP): L independent rings, each on 1/L of the data;
//   3. intra-host ring allgather of the L slices.
// Every rank sends 2(N-1)/N of the message in total, as in a flat ring, but
// only 2(H-1)/(H L) of it crosses hosts, spread over all L ranks (and their
// connections) of a host instead of funnelled through the one rank where a
// flat ring leaves the host; and it takes 2(L-1) + 2(H-1) steps instead of
// 2(LH-1). Each element is reduced on exactly one rank and copied to the
// others, so every rank gets bit-identical results. With float16/bfloat16
// compression only phase 2 runs on 16 bits: compressed once per host.
#include "collectives/hierarchical_allreduce.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "collectives/ring.h"
#include "collectives/transfers.h"

namespace cohort {

Status CheckHierarchicalLayout(const Mesh& mesh) {
  for (size_t h = 1; h < mesh.hosts.size(); ++h) {
    if (mesh.hosts[h].size() != mesh.hosts[0].size()) {
      return Status::InvalidArgument(
          "hierarchical allreduce needs the same number of ranks on every host, but host " +
          mesh.peers[mesh.hosts[0][0]].hostname + " has " + std::to_string(mesh.hosts[0].size()) +
          " and host " + mesh.peers[mesh.hosts[h][0]].hostname + " has " +
          std::to_string(mesh.hosts[h].size()));
    }
  }
  return Status::OK();
}

namespace {

// The ranks with this rank's local rank on every host, in host order.
RingMembers CrossHostRing(const Mesh& mesh) {
  RingMembers ring;
  for (const std::vector<int>& host : mesh.hosts) ring.ranks.push_back(host[mesh.local_rank]);
  ring.me = mesh.cross_rank;
  return ring;
}

// `count` elements starting at element `first`, cut into n near-equal blocks.
RingBlocks BlocksWithin(size_t first, size_t count, int n, DataType type) {
  RingBlocks blocks = EvenBlocks(count, n, type);
  for (size_t& offset : blocks.offsets) offset += first;
  return blocks;
}

void PostHeaderChecks(Transfers& transfers, const RingMembers& ring, const CallHeader& header) {
  if (ring.size() > 1) transfers.PostHeaderCheck(ring.right(), ring.left(), header, header);
}

// Phase 2: elements [first, first + count) of `buf` allreduced among the
// cross-host ring (reduce-scatter, finish, allgather).
Status CrossHostAllreduce(Communicator& comm, Transfers& transfers, const RingMembers& cross,
                          void* buf, size_t first, size_t count, DataType type, ReduceOp op,
                          double postscale) {
  const RingBlocks parts = BlocksWithin(first, count, cross.size(), type);
  COHORT_RETURN_IF_ERROR(RingReduceScatterPhase(comm, transfers, cross, buf, parts, op));
  const size_t mine = parts.offsets[cross.me];
  FinishReduction(static_cast<unsigned char*>(buf) + mine * DataTypeSize(type),
                  parts.offsets[cross.me + 1] - mine, type, op, comm.size(), postscale);
  return RingAllgatherPhase(comm, transfers, cross, buf, parts);
}

}  // namespace

Status HierarchicalAllreduce(Communicator& comm, void* buf, size_t count, DataType type,
                             ReduceOp op, double postscale, const CallHeader& header,
                             DataType wire) {
  const Mesh& mesh = comm.mesh();
  const RingMembers local{mesh.local_ranks, mesh.local_rank};
  const RingMembers cross = CrossHostRing(mesh);
  Transfers transfers(comm, "allreduce");
  PostHeaderChecks(transfers, local, header);
  PostHeaderChecks(transfers, cross, header);

  const RingBlocks slices = EvenBlocks(count, local.size(), type);
  COHORT_RETURN_IF_ERROR(RingReduceScatterPhase(comm, transfers, local, buf, slices, op));

  const size_t first = slices.offsets[local.me];
  const size_t slice = slices.offsets[local.me + 1] - first;
  if (wire == type) {
    COHORT_RETURN_IF_ERROR(
        CrossHostAllreduce(comm, transfers, cross, buf, first, slice, type, op, postscale));
  } else {
    // Compressed once per host: this rank's slice holds its host's float32
    // sum; it crosses hosts as 16 bits and comes back into place.
    float* own = static_cast<float*>(buf) + first;
    Clock::time_point start = Clock::now();
    std::vector<uint16_t> packed(std::max<size_t>(slice, 1));
    ConvertFloat32To16(packed.data(), wire, own, slice);
    comm.Phase("COMPRESS", start);
    COHORT_RETURN_IF_ERROR(
        CrossHostAllreduce(comm, transfers, cross, packed.data(), 0, slice, wire, op, postscale));
    start = Clock::now();
    Convert16ToFloat32(own, packed.data(), wire, slice);
    comm.Phase("DECOMPRESS", start);
  }

  return RingAllgatherPhase(comm, transfers, local, buf, slices);
}

}  // namespace cohort
