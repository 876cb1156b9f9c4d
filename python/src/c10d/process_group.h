// ProcessGroupCohort: torch.distributed's backend over cohort's engine: a
// c10d::ProcessGroup for torch 1.13, a c10d::Backend for torch 2.x (2.0 split
// the backend out of ProcessGroup; the virtual collectives kept their
// signatures). CPU tensors everywhere; CUDA tensors (torch 2.1 and newer:
// c10::Stream::native_handle) in allreduce, allreduce_coalesced and
// broadcast, what DDP uses, ordered on torch's current stream (docs/gpu.md). Each group is one
// cohort process set (set 0 for the default group); collectives go through c_api.h of libcohort.so,
// the same runtime object the cohort._cohort module drives; send/recv go through cohort's
// point-to-point messages (their own mesh). monitored_barrier goes through the c10d Store the group
// was created with (it must name who is missing).
#ifndef COHORT_PYTHON_C10D_PROCESS_GROUP_H_
#define COHORT_PYTHON_C10D_PROCESS_GROUP_H_

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "c10d/work.h"

namespace cohort_c10d {

// What torch.distributed's backend creator returns.
#if TORCH_VERSION_MAJOR >= 2
using C10dBackend = c10d::Backend;
#else
using C10dBackend = c10d::ProcessGroup;
#endif

class ProcessGroupCohort : public C10dBackend {
 public:
  // `name_prefix` makes the engine names of this group's operations unique in
  // the job and equal on every member, `channel` its messages' channel (the
  // Python side derives both from the process set id and the number of
  // groups over it so far). Opens cohort's point-to-point messages (the
  // default group is created on every rank first).
  ProcessGroupCohort(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                     std::chrono::milliseconds timeout, int process_set, std::string name_prefix,
                     int64_t channel);
  ~ProcessGroupCohort() override;

  const std::string getBackendName() const override { return "cohort"; }
  int process_set() const { return process_set_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Through the c10d store (monitored_barrier.cc).
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  // The host address of a group rank, for error messages.
  std::string PeerHostOf(int group_rank) const;
  // Point-to-point messages (messages.cc).
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  // The engine name of this group's next operation.
  std::string NextName(const char* kind);
  // Submits an allreduce of `input` into `output` (contiguous, same shape);
  // ops cohort lacks (bitwise) go through an allgather and a local reduction.
  // Returns the handles and, in *finish, what completes the result.
  std::vector<int64_t> SubmitReduction(const at::Tensor& input, const at::Tensor& output,
                                       const c10d::ReduceOp& op, const char* what,
                                       std::function<void()>* finish);
  // Allgathers `input` flattened; *finish gets the gathered rows (every
  // rank's elements in rank order) as one 1-D tensor.
  int64_t SubmitAllgather(const at::Tensor& input, const char* what);
  // Allgathers the rows of a contiguous `rows` (the count may differ per
  // rank; the other dimensions may not).
  int64_t SubmitRows(const at::Tensor& rows, const char* what);
  // all_reduce of a sparse COO tensor (SUM), as gloo does it.
  c10::intrusive_ptr<c10d::Work> SparseAllreduce(std::vector<at::Tensor>& tensors,
                                                 const c10d::AllreduceOptions& opts);
  int64_t SubmitAlltoall(const at::Tensor& input, const std::vector<int64_t>& splits,
                         const char* what);
  // `wait_slack`: seconds a wait for the handles adds to the group's timeout
  // (messages fail at that timeout themselves, with a better error).
  c10::intrusive_ptr<c10d::Work> Enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         std::vector<int64_t> handles, std::function<void()> finish,
                                         const char* what, double wait_slack = 0);
  double TimeoutSeconds() const { return timeout_.count() / 1000.0; }

  // Messages (messages.cc). A receive from src -1 takes any source.
  static constexpr double kMessageWaitSlack = 5;
  void CheckPeer(int peer, const char* what) const;
  c10::intrusive_ptr<c10d::Work> Receive(std::vector<at::Tensor>& tensors, int src, int tag);

  c10::intrusive_ptr<c10d::Store> store_;
  const std::chrono::milliseconds timeout_;
  const int process_set_;
  const std::string name_prefix_;
  const int64_t channel_;
  std::vector<int> global_ranks_;  // job rank of each group rank
  std::mutex mu_;  // guards the counters below (ops may be issued from several threads)
  uint64_t next_op_ = 0;
  uint64_t next_monitored_barrier_ = 0;
  // Works hold weak references: a work outliving its group completes on the
  // thread that waits for it.
  std::shared_ptr<CompletionQueue> completions_;
};

}  // namespace cohort_c10d

#endif  // COHORT_PYTHON_C10D_PROCESS_GROUP_H_
