// The cohort C++ runtime API: start the runtime, ask where this process sits
// in the job, and run collectives over every rank of the job.
//
// Every collective is blocking and must be called by all ranks in the same
// order with matching arguments. Arguments that disagree across ranks (element
// counts, types, ops, roots) produce a kMismatch error, never memory
// corruption. Every wait has a deadline (COHORT_TIMEOUT seconds, default 300);
// a peer that dies or disconnects turns into a kPeerFailure error naming the
// rank and host. After a peer failure the runtime stays broken: every later
// call returns the same error until Shutdown() or a new Init().
//
// Thread safety: collectives must be called from one thread at a time.
#ifndef COHORT_COHORT_H_
#define COHORT_COHORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort {

// Starts the runtime from the environment set by `cohort run`, SLURM's srun,
// Open MPI's mpirun or torchrun, and builds the peer mesh (shared memory with
// ranks on this host, TCP with ranks on other hosts). Calling Init twice
// without Shutdown is an error, unless the first runtime's engine has stopped
// for good (see IsRunning): Init then replaces it, as after Shutdown.
Status Init();
// Tears down the mesh. Safe to call when not initialized.
Status Shutdown();
// Leaves the job at once after a local failure (an uncaught exception, an
// interrupt), from any thread: the other ranks' operations fail promptly with
// "rank R (host, pid) aborted: <reason>" instead of waiting for
// COHORT_TIMEOUT, and this rank tears down without waiting for them. Safe to
// call when not initialized.
Status Abort(const std::string& reason);
bool IsInitialized();
// Initialized, and its engine has not stopped for good. The engine stops on
// every rank when any rank calls Shutdown (as Horovod's does), when the job
// fails, and when ranks deadlock (COHORT_DEADLOCK_TIME); operations then fail
// at once, and the next Init starts a new runtime.
bool IsRunning();
// Elastic jobs (`cohort run --min-np/--max-np`): `joined` is the round of the
// job this process joined at Init, `newest` the newest round the launcher has
// published. newest > joined means workers joined or left: the next
// Shutdown + Init joins the newer round (Horovod's HostsUpdatedInterrupt).
// kInvalidArgument in a job that is not elastic.
Status ElasticRounds(int64_t* joined, int64_t* newest);

// Where this process sits in the job; -1 when not initialized.
int Rank();
int Size();
int LocalRank();  // index among the ranks on this host
int LocalSize();  // number of ranks on this host
int CrossRank();  // index of this host among the job's hosts
int CrossSize();  // number of hosts
// 1 when large collectives among the ranks of this host copy each byte once,
// straight between their memories (COHORT_SHM_SINGLE_COPY; the kernel allowed
// it at start-up), 0 when they copy through shared memory twice (or the
// ranks of this host talk over TCP), -1 when not initialized.
int SharedMemorySingleCopy();

// Memory for collective buffers that the other ranks of this host can map
// (a sealed memfd; docs/performance.md "Zero-copy"). When every rank's
// buffers of a large one-host collective come from here, the single-copy
// path reads and writes the peers' buffers with plain loads and stores (an
// allreduce reads each input where it lies): no system call and no copy
// beyond the reduction's own. Buffers from elsewhere, or a kernel that will
// not let peers open /proc/<pid>/fd, fall back to process_vm_readv/writev
// with the same results. Zero-filled, page aligned, at least `bytes`.
// Requires Init (the runtime registers the buffer); the buffer belongs to
// the caller and stays valid after Shutdown until FreeSharedMemory. A
// buffer allocated before a later Init is still freed here, but that
// runtime does not map it (it falls back to copying).
Status AllocateSharedMemory(size_t bytes, void** out);
// Frees a buffer from AllocateSharedMemory (with or without a running
// runtime); kInvalidArgument for any other pointer or a second free.
Status FreeSharedMemory(void* buffer);

// PowerSGD's passes over one float32 gradient matrix (Vogels et al., 2019;
// PowerSgdMatrix in cohort/types.h), for front ends that compress gradients
// (cohort.torch's Compression.powersgd): each streams the matrix once, where
// torch's operators take six to eight passes and a temporary the matrix's
// size. q_t is Q transposed (rank x cols) and p is rows x rank, both
// row-major. Sums are float32 in another order than a BLAS call's: results
// match torch's to float rounding. No runtime needed; kInvalidArgument names
// a null pointer or a zero size.
// m += error (when given), then p = m q.
Status PowerSgdProject(const PowerSgdMatrix& matrix, const float* q_t, float* p);
// q_t = (m^T p)^T; m is only read.
Status PowerSgdProjectBack(const PowerSgdMatrix& matrix, const float* p, float* q_t);
// a = p q^T; error = m - a (when given); m = a.
Status PowerSgdApproximate(const PowerSgdMatrix& matrix, const float* p, const float* q_t);

// Compression (float32 sent as 16 bits), Shape and TensorResult live in
// cohort/types.h, which the runtime's internals share.

// Where an asynchronous operation's buffers are: host memory (index -1), or
// the memory of CUDA device `index`, with `stream` the caller's stream (a
// cudaStream_t of that device; null: the legacy default stream). For a GPU
// tensor the engine's own stream first waits for what the caller queued on
// `stream` before the call (no host wait); the handle completes on the host
// once the collective is queued on the device, Wait also waits for the
// device, and SynchronizeOnStream makes `stream` wait for the result
// instead. A rank's GPU tensors are all on one device. See docs/gpu.md.
struct Device {
  int index = -1;
  void* stream = nullptr;
};

struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;
  double prescale_factor = 1.0;   // applied to each rank's input before reducing
  double postscale_factor = 1.0;  // applied to the result
  Compression compression = Compression::kNone;
  int process_set = 0;  // asynchronous calls only: the set of ranks taking part (see below)
};

// recv[i] = op over ranks of (prescale * send[i]), then * postscale.
// `send` may equal `recv` (in place); otherwise they must not overlap.
Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                 const AllreduceOptions& options = {});

// `send` holds sum(recv_counts) elements, the same layout on every rank; rank r
// receives the reduction of block r (recv_counts[r] elements starting at
// sum(recv_counts[0..r))). `recv_counts` has Size() entries, equal on all ranks.
Status ReduceScatter(const void* send, void* recv, const size_t* recv_counts, DataType type,
                     ReduceOp op);

// Learns every rank's element count for a following Allgather.
Result<std::vector<size_t>> AllgatherCounts(size_t my_count);
// recv receives each rank's `send` block in rank order; recv_counts[r] is rank
// r's count (see AllgatherCounts) and send_count must equal recv_counts[Rank()].
Status Allgather(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                 DataType type);

// Copies root's `buf` into every other rank's `buf`.
Status Broadcast(void* buf, size_t count, DataType type, int root);

// Learns how many elements each rank will send to this one (an alltoall of counts).
Result<std::vector<size_t>> AlltoallCounts(const size_t* send_counts);
// Rank r sends send_counts[p] elements to rank p, taken consecutively from
// `send` in rank order; receives recv_counts[p] from rank p into `recv` in rank
// order.
Status Alltoall(const void* send, const size_t* send_counts, void* recv, const size_t* recv_counts,
                DataType type);

// Returns once every rank has entered the barrier.
Status Barrier();

// ---- Process sets ----
//
// A process set is a subset of the job's ranks that runs asynchronous
// collectives among themselves, with its own negotiation: only its members
// submit, and ranks, roots, splits and recv_rows in those calls are
// positions within the set (0 .. set size - 1). Set 0 is every rank. Sets are
// created and removed by every rank of the job together; collectives in
// disjoint sets run at the same time, and a rank that belongs to several sets
// runs their collectives one after another.

// kGlobalProcessSet (0, every rank) is in cohort/types.h.
// Collective over every rank of the job, each passing the same ranks (any
// order, no repeats). Returns the new set's id, the same on every rank.
// Starts the engine.
Result<int> AddProcessSet(const std::vector<int>& ranks);
// Collective over every rank of the job. The set must have nothing in flight.
Status RemoveProcessSet(int process_set);
// The set's members in ascending order.
Result<std::vector<int>> ProcessSetRanks(int process_set);
// This rank's position in the set, or -1 when it is not a member.
Result<int> ProcessSetRank(int process_set);
// Ids of every set that exists, 0 first.
std::vector<int> ProcessSetIds();

// ---- Asynchronous named operations (the engine) ----
//
// Each operation carries a name; ranks may submit names in different orders
// and from any thread. The trailing `process_set` (AllreduceOptions::
// process_set for allreduce) picks the ranks taking part; see above. A background engine matches
// them by name across ranks, checks that every rank passed the same dtype, shape (all but the first
// dimension for allgather), op, root and scale factors, fuses small
// allreduces, and runs them in the same order everywhere. A mismatch fails
// that handle on every rank with an error naming the ranks and their values;
// other operations carry on. A name may not be resubmitted while in flight.
//
// The engine starts with the first asynchronous call; from then on the
// blocking collectives above run through it too. Buffers must stay valid
// until the handle completes.

using Handle = int64_t;
// Runs on the engine thread when an operation completes; keep it short.
using DoneCallback = std::function<void(const Status&)>;

Result<Handle> AllreduceAsync(const std::string& name, const void* send, void* recv,
                              const Shape& shape, DataType type,
                              const AllreduceOptions& options = {}, DoneCallback done = nullptr,
                              const Device& device = {});
// The tensors are negotiated together and released to execution as one group.
Result<std::vector<Handle>> GroupedAllreduceAsync(const std::vector<std::string>& names,
                                                  const std::vector<const void*>& sends,
                                                  const std::vector<void*>& recvs,
                                                  const std::vector<Shape>& shapes, DataType type,
                                                  const AllreduceOptions& options = {},
                                                  const Device& device = {});
Result<Handle> BroadcastAsync(const std::string& name, void* buf, const Shape& shape, DataType type,
                              int root, DoneCallback done = nullptr,
                              int process_set = kGlobalProcessSet, const Device& device = {});
// The result (ranks' tensors concatenated along the first dimension) is held
// by the engine; fetch it with TakeResult after completion.
Result<Handle> AllgatherAsync(const std::string& name, const void* send, const Shape& shape,
                              DataType type, DoneCallback done = nullptr,
                              int process_set = kGlobalProcessSet);
// Reduces `send` over the ranks and gives rank r the rows of block r of the
// first dimension: `recv_rows[r]` rows when given (equal on every rank),
// else an even split (the first rows % size ranks get one row more). The
// block is fetched with TakeResult. Scale factors work as for allreduce.
Result<Handle> ReduceScatterAsync(const std::string& name, const void* send, const Shape& shape,
                                  DataType type, ReduceOp op,
                                  const std::vector<int64_t>& recv_rows = {},
                                  DoneCallback done = nullptr, int process_set = kGlobalProcessSet,
                                  double prescale_factor = 1.0, double postscale_factor = 1.0);
// As AllgatherAsync and ReduceScatterAsync, writing the output into the
// caller's `recv` (`recv_elements` elements, alive until completion) instead
// of a result to take: the buffer can be reused from step to step, and may
// be in place (an allgather's `send` at this rank's rows of `recv`, a
// reduce-scatter's `recv` inside `send` at this rank's block). A `recv` of
// the wrong size is left alone and the handle fails with InvalidArgument
// naming both sizes, after the collective ran (the other ranks go on).
// GPU tensors (`device`) take only these forms: results stay in device memory.
Result<Handle> AllgatherIntoAsync(const std::string& name, const void* send, void* recv,
                                  size_t recv_elements, const Shape& shape, DataType type,
                                  DoneCallback done = nullptr, int process_set = kGlobalProcessSet,
                                  const Device& device = {});
Result<Handle> ReduceScatterIntoAsync(const std::string& name, const void* send, void* recv,
                                      size_t recv_elements, const Shape& shape, DataType type,
                                      ReduceOp op, const std::vector<int64_t>& recv_rows = {},
                                      DoneCallback done = nullptr,
                                      int process_set = kGlobalProcessSet,
                                      double prescale_factor = 1.0, double postscale_factor = 1.0,
                                      const Device& device = {});
// Sends splits[p] consecutive rows of `send` to rank p (splits has Size()
// entries summing to shape[0]); the rows received, in rank order, and how
// many came from each rank are fetched with TakeResult.
Result<Handle> AlltoallAsync(const std::string& name, const void* send, const Shape& shape,
                             DataType type, const std::vector<int64_t>& splits,
                             DoneCallback done = nullptr, int process_set = kGlobalProcessSet);
Result<Handle> BarrierAsync(const std::string& name, DoneCallback done = nullptr,
                            int process_set = kGlobalProcessSet);

// For a rank that has run out of data (uneven inputs): until every rank has
// joined, this rank takes part in the other ranks' allreduces with the op's
// identity (0 for sum and average, 1 for product, the type's extreme for min
// and max; average still divides by Size()). Other operations fail while
// ranks are joined. Completes when all ranks have joined; Join() returns the
// last rank to join.
Result<Handle> JoinAsync(DoneCallback done = nullptr);
Result<int> Join();

// True once `handle` has completed (successfully or not); for a GPU
// tensor, once the device has run it too.
Result<bool> Poll(Handle handle);
// Waits for `handle` (a GPU tensor's: until the device has run it);
// `timeout_seconds` < 0 means COHORT_TIMEOUT. Returns the
// operation's status (a kTimeout if the wait itself ran out).
Status Wait(Handle handle, double timeout_seconds = -1);
// Like Wait, calling `interrupted` about every 100 ms while it waits; once it
// returns true the wait ends with kInterrupted (the operation goes on).
Status WaitInterruptible(Handle handle, double timeout_seconds,
                         const std::function<bool()>& interrupted);
// The output of a completed allgather, reduce-scatter or alltoall (TensorResult: types.h).
Status TakeResult(Handle handle, TensorResult* result);
// Forgets a completed handle.
void Release(Handle handle);

// For a GPU tensor's handle: waits (bounded, like Wait) until the engine has
// queued its collective, then makes `stream` (a cudaStream_t of the
// tensor's device; null: the legacy default stream) wait for the result,
// without waiting for the device. Returns the operation's status. For a
// host tensor's handle it is Wait.
Status SynchronizeOnStream(Handle handle, void* stream, double timeout_seconds = -1);
// Horovod's queries: GPU support is in every build (the stack is found at
// run time); NcclBuilt is NCCL's version code (22703 for 2.27.3) when NCCL
// can be loaded in this process, else 0, as Horovod's nccl_built().
bool CudaBuilt();
int NcclBuilt();
// One line per GPU library: where it was found, or why not (docs/gpu.md).
std::string GpuReport();

// Writes a Chrome-trace / Perfetto timeline of every tensor's phases
// (negotiation with the moment each rank was ready, queueing, fusion-buffer
// copies, the collective) to `path`; "{rank}" in the path is replaced by the
// rank, otherwise only rank 0 writes. Also started by COHORT_TIMELINE.
Status StartTimeline(const std::string& path, bool mark_cycles = false);
Status StopTimeline();

// This rank's fusion counters (EngineStats, types.h); all zero before the
// engine starts.
EngineStats GetEngineStats();

// ---- Point-to-point messages ----
//
// Tagged messages between two ranks of the job (torch.distributed's
// send/recv), on a mesh of their own: shared memory on one host, TCP between
// hosts. A message carries a channel (e.g. one per process group) and a tag;
// a receive takes the oldest message from its source (or from any, with
// kAnySource) with its channel and tag, and between two ranks messages with
// the same channel and tag arrive in send order. Ranks are job ranks. The
// handles are waited for, polled and released like the engine's; buffers
// must stay valid until the handle completes.

inline constexpr int kAnySource = -1;
// Collective over every rank of the job: builds the messages' mesh (later
// calls do nothing). Starts the engine.
Status OpenPointToPoint();
// Fails after `timeout_seconds` (< 0: COHORT_TIMEOUT) when `dst` has not
// taken the message; then the stream to `dst` is cut (later messages fail).
Result<Handle> SendAsync(int dst, int64_t channel, int64_t tag, const void* data, size_t bytes,
                         double timeout_seconds = -1);
// Receives exactly `bytes` bytes (a message of another size fails, naming
// both); *source (may be null) is the sender once the handle completed.
Result<Handle> RecvAsync(int src, int64_t channel, int64_t tag, void* data, size_t bytes,
                         int* source, double timeout_seconds = -1);
// The host address at which rank `rank` is reached by its peers (where its
// mesh listens), e.g. for a service of the job's own on rank 0.
Result<std::string> PeerHost(int rank);

}  // namespace cohort

#endif  // COHORT_COHORT_H_
