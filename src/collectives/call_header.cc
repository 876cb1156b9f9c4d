// Describing and comparing collective calls across ranks.
#include "collectives/call_header.h"

#include <sstream>

namespace cohort {

const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce: return "allreduce";
    case CollectiveKind::kReduceScatter: return "reducescatter";
    case CollectiveKind::kAllgather: return "allgather";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAlltoall: return "alltoall";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kCounts: return "count exchange";
  }
  return "collective";
}

std::string DescribeCall(const CallHeader& h) {
  const auto kind = static_cast<CollectiveKind>(h.kind);
  std::ostringstream out;
  out << CollectiveName(kind);
  if (kind == CollectiveKind::kBarrier) return out.str();
  out << " of " << h.count << " " << DataTypeName(static_cast<DataType>(h.dtype)) << " elements";
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReduceScatter) {
    out << " (op " << ReduceOpName(static_cast<ReduceOp>(h.op));
    if (h.prescale != 1 || h.postscale != 1) {
      out << ", prescale " << h.prescale << ", postscale " << h.postscale;
    }
    out << ")";
  }
  if (kind == CollectiveKind::kBroadcast) out << " from root " << h.root;
  if (h.path == kSingleCopy) out << " (single copy)";
  if (h.path == kWireFloat16) out << " (float16 between hosts)";
  if (h.path == kWireBFloat16) out << " (bfloat16 between hosts)";
  if (h.layout != 0) out << " (per-rank counts hash " << std::hex << h.layout << ")";
  return out.str();
}

Status CompareCalls(const CallHeader& mine, int my_rank, const CallHeader& theirs, int their_rank) {
  const bool same = mine.call == theirs.call && mine.count == theirs.count &&
                    mine.layout == theirs.layout && mine.kind == theirs.kind &&
                    mine.dtype == theirs.dtype && mine.op == theirs.op &&
                    mine.root == theirs.root && mine.prescale == theirs.prescale &&
                    mine.postscale == theirs.postscale && mine.path == theirs.path;
  if (same) return Status::OK();
  std::ostringstream out;
  if (mine.call != theirs.call) {
    out << "ranks are out of step: rank " << my_rank << " is in collective call #" << mine.call
        << " but rank " << their_rank << " is in call #" << theirs.call << "; ";
  }
  out << "rank " << my_rank << " called " << DescribeCall(mine) << " but rank " << their_rank
      << " called " << DescribeCall(theirs);
  return Status::Mismatch(out.str());
}

uint64_t HashCounts(const size_t* counts, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) {
    for (int b = 0; b < 8; ++b) {
      h ^= (static_cast<uint64_t>(counts[i]) >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace cohort
