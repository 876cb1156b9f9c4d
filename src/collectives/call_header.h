// CallHeader: what one rank says about the collective it is running. Ranks
// exchange headers before (or with) the first data so that arguments that
// disagree across ranks become a kMismatch error instead of corrupt memory.
#ifndef COHORT_COLLECTIVES_CALL_HEADER_H_
#define COHORT_COLLECTIVES_CALL_HEADER_H_

#include <cstdint>
#include <string>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort {

enum class CollectiveKind : int32_t {
  kAllreduce = 0,
  kReduceScatter,
  kAllgather,
  kBroadcast,
  kAlltoall,
  kBarrier,
  kCounts,  // the small exchanges behind AllgatherCounts / AlltoallCounts
};

const char* CollectiveName(CollectiveKind kind);

struct CallHeader {
  uint64_t call = 0;    // sequence number of the collective on this communicator
  uint64_t count = 0;   // elements (meaning depends on the kind; see each algorithm)
  uint64_t layout = 0;  // hash of per-rank counts where the kind has them, else 0
  int32_t kind = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  double prescale = 1;
  double postscale = 1;
  // Which way the data moves where a collective has several on one host:
  // kTwoCopy through the shared-memory slots, kSingleCopy straight between
  // the ranks' memories (cma_collectives.h). Ranks that chose differently
  // (e.g. COHORT_SHM_SINGLE_COPY_BYTES set apart) fail as a mismatch.
  // Hierarchical allreduce compressed once per host: kWireFloat16 or
  // kWireBFloat16, the type its float32 data crosses hosts as.
  int32_t path = 0;
};
enum : int32_t { kTwoCopy = 0, kSingleCopy = 1, kWireFloat16 = 2, kWireBFloat16 = 3 };
static_assert(sizeof(CallHeader) <= 64, "a CallHeader must fit a shared-memory slot header");

// Human-readable description, e.g. "allreduce of 100 float32 elements (op sum)".
std::string DescribeCall(const CallHeader& h);

// OK when `theirs` (from rank `their_rank`) matches `mine`; otherwise a
// kMismatch naming both ranks and what each passed.
Status CompareCalls(const CallHeader& mine, int my_rank, const CallHeader& theirs, int their_rank);

// FNV-1a over an array of counts, for CallHeader::layout.
uint64_t HashCounts(const size_t* counts, int n);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_CALL_HEADER_H_
