// FakeNccl: an NcclApi for tests over FakeCuda, whose device memory is host
// memory: a collective first runs the stream's queued work, then runs
// cohort's CPU collective on the buffers over the communicator it was given
// (so NCCL's transport logic is exercised across real processes). It keeps
// NCCL's rules that matter: the unique id must be the one rank 0 made, every
// rank passes the same rank count, no dtype or op outside NCCL's set.
// Options model a non-blocking initialisation that never finishes (for the
// timeout path) and count aborts.
#ifndef COHORT_TESTS_GPU_SUPPORT_FAKE_NCCL_H_
#define COHORT_TESTS_GPU_SUPPORT_FAKE_NCCL_H_

#include "cohort/types.h"
#include "collectives/communicator.h"
#include "gpu/nccl_api.h"
#include "support/fake_cuda.h"

namespace cohort::gpu::testing {

class FakeNccl : public NcclApi {
 public:
  FakeNccl(FakeCuda& cuda, Communicator& comm) : cuda_(cuda), comm_(comm) {}

  std::string Describe() const override { return "fake NCCL"; }
  int Version() const override { return 22703; }  // what NCCL 2.27.3 reports
  bool SupportsNonBlocking() const override { return true; }
  Result<NcclUniqueId> GetUniqueId() override;
  Result<NcclComm> InitRank(int nranks, const NcclUniqueId& id, int rank,
                            bool non_blocking) override;
  Result<bool> InProgress(NcclComm comm) override;
  Status Abort(NcclComm comm) override;
  Status Destroy(NcclComm comm) override;
  Status AllReduce(const void* send, void* recv, size_t count, int dtype, int op, NcclComm comm,
                   StreamHandle stream) override;
  Status Broadcast(const void* send, void* recv, size_t count, int dtype, int root, NcclComm comm,
                   StreamHandle stream) override;
  Status AllGather(const void* send, void* recv, size_t send_count, int dtype, NcclComm comm,
                   StreamHandle stream) override;
  Status ReduceScatter(const void* send, void* recv, size_t recv_count, int dtype, int op,
                       NcclComm comm, StreamHandle stream) override;

  // Initialisation stays "in progress" forever.
  void set_hang_init(bool hang) { hang_init_ = hang; }
  int aborts() const { return aborts_; }
  int destroys() const { return destroys_; }
  int collectives() const { return collectives_; }

 private:
  Status Check(NcclComm comm) const;
  // A collective's start: checks, converts the dtype, runs the stream's
  // queued work, counts it.
  Result<DataType> Begin(NcclComm comm, int dtype, StreamHandle stream);

  FakeCuda& cuda_;
  Communicator& comm_;
  NcclUniqueId id_{};
  bool joined_ = false;
  bool hang_init_ = false;
  int aborts_ = 0;
  int destroys_ = 0;
  int collectives_ = 0;
};

}  // namespace cohort::gpu::testing

#endif  // COHORT_TESTS_GPU_SUPPORT_FAKE_NCCL_H_
