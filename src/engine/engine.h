// Engine: the background runtime that turns named, asynchronous tensor
// operations from any thread into collectives every rank runs in the same
// order. One thread per process loops: collect new requests, negotiate them
// with every rank (engine/negotiation.h), execute the agreed responses (fusing
// small allreduces), and complete their handles. Each process set
// (engine/process_set.h) negotiates on its own within the same loop.
//
// Invariant: only the engine thread uses the communicator once the engine runs.
#ifndef COHORT_ENGINE_ENGINE_H_
#define COHORT_ENGINE_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/types.h"
#include "collectives/communicator.h"
#include "common/handle_table.h"
#include "engine/autotune_log.h"
#include "engine/autotuner.h"
#include "engine/fusion_buffer.h"
#include "engine/gpu_provider.h"
#include "engine/gpu_tensors.h"
#include "engine/negotiation.h"
#include "engine/process_set.h"
#include "engine/request.h"
#include "engine/response_cache.h"
#include "engine/timeline.h"
#include "engine/wait_report.h"

namespace cohort {

struct EngineOptions {
  uint64_t fusion_threshold_bytes = 64 << 20;   // COHORT_FUSION_THRESHOLD; 0 disables fusion
  uint64_t fusion_max_tensor_bytes = 64 << 10;  // COHORT_FUSION_MAX_TENSOR: larger ones run alone
  double cycle_time_ms = 1.0;         // COHORT_CYCLE_TIME: longest idle wait between negotiations
  double stall_check_seconds = 60;    // COHORT_STALL_CHECK_TIME: report tensors waiting this long
  double stall_shutdown_seconds = 0;  // COHORT_STALL_SHUTDOWN_TIME: fail them after this (0: never)
  double deadlock_seconds = 10;       // COHORT_DEADLOCK_TIME: stop a deadlocked job (0: never)
  std::string timeline_path;     // COHORT_TIMELINE: start a timeline at once (see StartTimeline)
  size_t cache_capacity = 1024;  // COHORT_CACHE_CAPACITY: response-cache slots (0: off)
  AutotuneOptions autotune;      // COHORT_AUTOTUNE*: tune the values below while training
  // The communicator's cut-overs the autotuner starts from (the same values
  // as its CommunicatorOptions).
  uint64_t small_message_bytes = 64 << 10;
  uint64_t single_copy_bytes = 1 << 20;
};

class Engine {
 public:
  // `gpu` (may be null: GPU tensors are refused) must outlive the engine.
  Engine(Communicator& comm, EngineOptions options, GpuProvider* gpu = nullptr);
  ~Engine();  // Shutdown()

  // Queues `request` and returns its handle. Fails at once (no handle) when
  // the name is empty or already in flight in its process set on this rank,
  // the set does not exist or this rank is not in it, or the engine has
  // failed or shut down.
  Result<int64_t> Enqueue(Request request, CompletionCallback callback = nullptr);
  HandleTable& handles() { return handles_; }
  // The GPU completions of handles (engine/gpu_tensors.h): a GPU tensor's
  // handle is done on the host when its collective is queued on the device;
  // Done/Wait/Join there say when the device has run it.
  GpuTensors& gpu() { return gpu_; }

  // The members (job ranks, ascending) of a process set.
  Result<std::vector<int>> ProcessSetRanks(int id);
  // Ids of the sets that exist, ascending (0 first).
  std::vector<int> ProcessSetIds();

  // Starts writing a Chrome-trace timeline of every tensor's phases to
  // `path` ("{rank}" in it is replaced by the rank; without it only rank 0
  // writes). Replaces a running timeline.
  // With `mark_cycles`, every engine cycle also records a CYCLE_START instant
  // (Horovod's mark_cycles).
  Status StartTimeline(const std::string& path, bool mark_cycles = false);
  // Stops and closes the timeline, if one runs.
  Status StopTimeline();

  // The fusion counters so far (any thread).
  EngineStats Stats() const;

  // The error for a wait on `handle` that timed out after `timeout_seconds`:
  // names the tensor and the ranks that have not submitted it (asks the
  // engine thread, waiting at most a second for its answer).
  // `setting`: the variable the timeout came from ("" when the caller gave it).
  Status ExplainTimeout(int64_t handle, double timeout_seconds, const std::string& setting);

  // Leaves at once after a local failure, from any thread: breaks the job's
  // communicator for `reason` (the peers' operations fail with it instead of
  // waiting for COHORT_TIMEOUT), fails every pending handle and stops the
  // engine thread without the collective shutdown.
  void Abort(const Status& reason);

  // Stops the engine of every rank and waits for this one to stop: the loop
  // ends on every rank in the cycle that carries the first rank's request
  // (as Horovod's shutdown does), so a rank that shuts down never waits for
  // peers that will not. Requests still unmatched then fail on every rank,
  // naming the ranks that never sent them or the rank that shut down.
  Status Shutdown();

  // Whether the engine has stopped for good (Shutdown, a failure, a peer's
  // shutdown, a deadlock): a runtime whose engine stopped needs a new Init.
  bool Stopped();

 private:
  void Loop();
  // One round: the job's set first (it carries shutdown and set changes),
  // then every other set this rank belongs to, in id order. Every rank takes
  // its sets in the same order, so the exchanges over shared links line up.
  Status Cycle();
  // One set's round; `stop` (set 0 only) reports that every rank asked to stop.
  Status CycleSet(ProcessSet& set, const std::vector<Request>& queued, bool shutdown, bool* stop);
  // This cycle's announcements: full ones, and cache hits as bits.
  void Announce(const ProcessSet& set, const std::vector<Request>& queued,
                CycleMessage* mine) const;
  // A rank's announcements: its full ones, then its cached ones in slot order.
  Status Expand(ProcessSet& set, int rank, CycleMessage* message) const;
  // Exchanges this cycle's messages; `all` is indexed by rank in the set.
  Status Exchange(ProcessSet& set, const CycleMessage& mine, std::vector<CycleMessage>* all);
  // The set's first rank only: logs tensors some ranks have not submitted for
  // a long time and, past the shutdown time, declares them stalled in `mine`.
  void InspectStalls(ProcessSet& set, CycleMessage* mine);
  // Every rank: fails a name the set's first rank declared stalled and forgets it.
  void FailStalled(ProcessSet& set, const std::string& name);
  // "rank 1 (host a, pid 7), rank 3 (host b, pid 9)"; `ranks` are positions in the set.
  std::string DescribeRanks(const ProcessSet& set, const std::vector<int>& ranks) const;
  // After a rank asked to stop (`who`: the first such, described): fails
  // what can no longer complete.
  void FailUnfinished(const std::string& who);
  // Fails the tensors of `set` that wait for a rank which asked to stop:
  // that rank submits nothing more, so they could never complete.
  void FailAbandoned(ProcessSet& set);
  Status Execute(ProcessSet& set, const Response& response);
  // engine_autotune.cc. Opens the log and, on rank 0, starts the autotuner.
  void StartAutotune();
  // Rank 0: scores an executed response of the job's set; a sample's end
  // queues new values for the next round's message.
  void ObserveForAutotune(const Response& response);
  // Every rank, at the round whose set-0 message from rank 0 carries `order`.
  void ApplyTuning(const TuningOrder& order);
  Status ExecuteAllreduce(ProcessSet& set, const Response& response);
  // Counts one allreduce of `tensors` tensors (`bytes` in all), fused or not.
  void CountAllreduce(size_t tensors, size_t bytes, bool fused);
  Status ExecuteAllgather(ProcessSet& set, const Request& request, const Response& response);
  Status ExecuteReduceScatter(ProcessSet& set, const Request& request);
  Status ExecuteAlltoall(ProcessSet& set, const Request& request, const Response& response);
  Status ExecuteProcessSetChange(const Request& request, const Announcement& what);
  // engine_device.cc: a response on GPU tensors (Announcement::on_device).
  Status ExecuteOnDevice(ProcessSet& set, const Response& response);
  Status DeviceAllreduce(GpuTensors::SetState& gpu, const std::vector<Request>& reqs);
  void RecordFusedSpans(const std::vector<Request>& reqs, size_t bytes, Clock::time_point t0,
                        Clock::time_point t1, Clock::time_point t2, Clock::time_point t3);
  void Fail(const Status& status);
  // Fails every request of set `id` still queued or in flight with `status`.
  void FailSet(int id, const Status& status);
  Request TakePending(int set, const std::string& name);
  // Engine thread: what every set's table is waiting for (see WaitReport).
  WaitSnapshot SnapshotWaiting() const;
  // Engine thread (engine_deadlock.cc): what this rank is stuck waiting for
  // (see StuckWait), empty unless it has made no progress for the deadlock time.
  std::vector<StuckWait> StuckWaits();
  // Every rank, from set 0's messages: a Mismatch naming who waits for what
  // when ranks are deadlocked (engine/deadlock.h), else OK.
  Status FindDeadlock(const std::vector<CycleMessage>& all) const;

  Communicator& comm_;  // the whole job's
  const EngineOptions options_;
  HandleTable handles_;
  WaitReport wait_report_;
  FusionBuffer fusion_;
  // EngineStats' counters: written by the engine thread, read by any.
  std::atomic<uint64_t> cycles_{0}, allreduces_{0}, allreduced_tensors_{0}, fused_allreduces_{0},
      fused_tensors_{0}, fused_bytes_{0};
  int next_set_id_ = 1;  // engine thread only
  // Autotuning (engine_autotune.cc), engine thread only after the start.
  // The values in force: fusion and cycle time here, the cut-overs in every
  // set's communicator. Changed only by ApplyTuning, the same round everywhere.
  TuningValues tuned_;
  std::unique_ptr<Autotuner> autotuner_;       // rank 0 with COHORT_AUTOTUNE
  std::optional<TuningOrder> tuning_to_send_;  // rank 0: for the next round's message
  std::unique_ptr<AutotuneLog> autotune_log_;  // null: no log on this rank
  uint64_t rounds_ = 0;                        // set-0 negotiation rounds so far
  // Engine thread: this rank announced tensors in the last cycle that still
  // wait for other ranks, so the next cycle starts without idling.
  bool rejoin_at_once_ = false;
  std::vector<bool> leaving_;  // engine thread: job ranks that asked to stop
  // Engine thread: when this rank last submitted or completed an operation.
  Clock::time_point last_progress_ = Clock::now();

  // The running timeline. Swapped by user threads; the engine thread takes
  // one reference per cycle (`tl_`), so a timeline stopped mid-cycle stays
  // alive (and ignores events) until the cycle ends.
  std::mutex timeline_mu_;
  std::shared_ptr<Timeline> timeline_;  // guarded by timeline_mu_
  bool mark_cycles_ = false;            // guarded by timeline_mu_
  std::shared_ptr<Timeline> tl_;        // engine thread: this cycle's timeline, may be null

  std::mutex mu_;
  std::condition_variable wake_;
  // Every process set by id. Inserted and erased only by the engine thread,
  // under mu_; the engine thread reads it without the lock.
  std::map<int, std::unique_ptr<ProcessSet>> sets_;
  // Every (set, name) not yet completed; guarded by mu_.
  std::map<std::pair<int, std::string>, Request> in_flight_;
  // GPU state; declared after sets_ so that it goes first (its collectives
  // run on the sets' communicators).
  GpuTensors gpu_;
  bool shutdown_requested_ = false;  // guarded by mu_
  bool stopped_ = false;             // guarded by mu_
  std::string stopped_by_;           // guarded by mu_: the peer whose shutdown stopped it
  Status failure_;                   // guarded by mu_

  std::thread thread_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_ENGINE_H_
