// What a rank submits to the engine: one named tensor operation, and the
// description of it that is announced to the other ranks during negotiation.
#ifndef COHORT_ENGINE_REQUEST_H_
#define COHORT_ENGINE_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/types.h"
#include "engine/tuning.h"

namespace cohort {

enum class RequestKind : int32_t {
  kAllreduce = 0,
  kAllgather,
  kBroadcast,
  kBarrier,
  kReduceScatter,
  kAlltoall,
  kJoin,  // this rank has no more data: it joins the others' allreduces with identity values
  // Process-set changes, negotiated in the global set so every rank applies
  // them between the same two cycles (Announcement::set_members, set_id).
  kAddProcessSet,
  kRemoveProcessSet,
};

// The name every rank's join request carries.
inline constexpr const char* kJoinName = "cohort.join";
const char* RequestKindName(RequestKind kind);
// kAddProcessSet or kRemoveProcessSet: announcements that carry set fields.
inline bool IsProcessSetChange(RequestKind kind) {
  return kind == RequestKind::kAddProcessSet || kind == RequestKind::kRemoveProcessSet;
}

// The part of a request every rank must agree on (sent during negotiation).
struct Announcement {
  std::string name;
  RequestKind kind = RequestKind::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1;
  double postscale = 1;
  int32_t compression = 0;  // cohort::Compression, allreduce only
  // The tensor is in GPU memory (Request::device >= 0). Ranks must agree: a
  // collective runs on device pointers everywhere or on host pointers everywhere.
  bool on_device = false;
  std::vector<int64_t> shape;
  // Rows per rank: alltoall, rows sent to each rank; reduce-scatter, rows
  // each rank receives (empty: an even split).
  std::vector<int64_t> splits;
  uint64_t group_id = 0;             // 0: not part of a group
  uint32_t group_size = 0;           // number of tensors in the group
  std::vector<int32_t> set_members;  // kAddProcessSet: the new set's job ranks, ascending
  int32_t set_id = 0;                // kRemoveProcessSet: the set to remove

  uint64_t elements() const;
  // Elements per first-dimension row (1 for scalars).
  uint64_t row_elements() const;
};

// A request as the submitting rank holds it: the announcement plus buffers.
struct Request {
  Announcement what;
  int64_t handle = 0;
  int process_set = 0;  // the set of ranks taking part (cohort::kGlobalProcessSet: all)
  const void* send = nullptr;
  void* recv = nullptr;  // allreduce output; broadcast buffer (in place); see recv_elements
  // Allgather, reduce-scatter: >= 0 when the output goes to `recv`, which
  // holds that many elements (the caller's reused buffer: no result to take);
  // -1 when the engine holds the output until TakeResult.
  int64_t recv_elements = -1;
  // GPU tensors (what.on_device): the CUDA device of send/recv, the caller's
  // stream (cudaStream_t; null: the legacy default stream) and the event the
  // engine recorded on it at submission (engine/gpu_tensors.h).
  int device = -1;
  void* stream = nullptr;
  void* ready_event = nullptr;
};

// An operation a thread of this rank has waited for since COHORT_DEADLOCK_TIME
// while the rank submitted and completed nothing, and which still lacks the
// `missing` ranks' submissions (engine/engine_deadlock.cc).
struct StuckWait {
  int32_t set = 0;
  std::string name;
  RequestKind kind = RequestKind::kAllreduce;
  std::vector<int32_t> missing;  // job ranks
};

// One rank's per-cycle negotiation message.
struct CycleMessage {
  std::vector<Announcement> announcements;  // submitted since the last cycle
  bool shutdown = false;                    // this rank asked to stop
  std::vector<std::string> stalled;         // rank 0 only: names to fail as stalled
  std::vector<uint8_t> cached;              // bit i: the announcement in response-cache slot i
  std::vector<StuckWait> stuck;             // set 0 only: what this rank is stuck waiting for
  std::optional<TuningOrder> tuning;        // rank 0, set 0 only: values every rank applies now
};

// Serialisation of a CycleMessage; decoding fails on malformed bytes.
std::string EncodeCycleMessage(const CycleMessage& message);
bool DecodeCycleMessage(const std::string& bytes, CycleMessage* message);

}  // namespace cohort

#endif  // COHORT_ENGINE_REQUEST_H_
