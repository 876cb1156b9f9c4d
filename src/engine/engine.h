// Engine: the background runtime that turns named, asynchronous tensor
// operations from any thread into collectives every rank runs in the same
// order. One thread per process loops: collect new requests, negotiate them
// with every rank (engine/negotiation.h), execute the agreed responses (fusing
// small allreduces), and complete their handles.
//
// Invariant: only the engine thread uses the communicator once the engine runs.
#ifndef COHORT_ENGINE_ENGINE_H_
#define COHORT_ENGINE_ENGINE_H_

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "engine/fusion_buffer.h"
#include "engine/handle_table.h"
#include "engine/negotiation.h"
#include "engine/request.h"

namespace cohort {

struct EngineOptions {
  uint64_t fusion_threshold_bytes = 64 << 20;  // COHORT_FUSION_THRESHOLD; 0 disables fusion
  double cycle_time_ms = 1.0;  // COHORT_CYCLE_TIME: longest idle wait between negotiations
};

class Engine {
 public:
  Engine(Communicator& comm, EngineOptions options);
  ~Engine();  // Shutdown()

  // Queues `request` and returns its handle. Fails at once (no handle) when
  // the name is empty or already in flight on this rank, or the engine has
  // failed or shut down.
  Result<int64_t> Enqueue(Request request, CompletionCallback callback = nullptr);
  HandleTable& handles() { return handles_; }

  // Asks every rank's engine to stop and waits for this one to. Collective:
  // the loop ends in the cycle in which all ranks have asked. Requests still
  // unmatched then fail with an error naming the ranks that never sent them.
  Status Shutdown();

 private:
  void Loop();
  Status Cycle();
  // Exchanges this cycle's announcements; fills `per_rank`.
  Status Exchange(const std::vector<Announcement>& mine, bool shutdown,
                  std::vector<std::vector<Announcement>>* per_rank, bool* all_shutdown);
  Status Execute(const Response& response);
  Status ExecuteAllreduce(const Response& response);
  Status ExecuteAllgather(const Request& request, const Response& response);
  void Fail(const Status& status);
  Request TakePending(const std::string& name);

  Communicator& comm_;
  const EngineOptions options_;
  HandleTable handles_;
  NegotiationTable table_;
  FusionBuffer fusion_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Request> queue_;               // guarded by mu_: submitted, not yet announced
  std::map<std::string, Request> in_flight_;  // guarded by mu_: every name not yet completed
  bool shutdown_requested_ = false;          // guarded by mu_
  bool stopped_ = false;                     // guarded by mu_
  Status failure_;                           // guarded by mu_

  std::thread thread_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_ENGINE_H_
