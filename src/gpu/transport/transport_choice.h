// Which transport carries a GPU collective: a pure function of facts every
// rank knows alike (they are gathered from all ranks first), so every rank
// picks the same one without talking. Unit-tested over every combination
// (tests/gpu/transport_choice_test.cc).
//
// Automatic choice, in order:
//   one rank                             -> kIpc (nothing to share: local kernels)
//   NCCL loads on every rank, no two
//   ranks of a host share a GPU          -> kNccl
//   one host and CUDA IPC works there    -> kIpc
//   otherwise                            -> kStaged (IPC within each host when
//                                           it works, pinned host memory and
//                                           the CPU collectives between hosts)
// A forced transport (COHORT_GPU_TRANSPORT) that cannot run is an error
// naming why. Per call, an op or dtype the chosen transport lacks falls back
// to what the choice would be without it: Adasum always runs staged (on the
// CPU), and NCCL has no int16 or bool product/min kernels of its own
// (gpu/transport/nccl_mapping.h says which calls it takes).
#ifndef COHORT_GPU_TRANSPORT_TRANSPORT_CHOICE_H_
#define COHORT_GPU_TRANSPORT_TRANSPORT_CHOICE_H_

#include <string>

#include "cohort/status.h"
#include "gpu/gpu_stack.h"

namespace cohort::gpu {

enum class GpuTransport { kIpc, kNccl, kStaged };
const char* GpuTransportName(GpuTransport transport);  // "ipc", "nccl", "staged"

struct TransportFacts {
  int ranks = 1;
  int hosts = 1;
  // Two ranks of one host use the same GPU, e.g. "ranks 0 and 1 share GPU
  // 0000:3b:00"; empty when every rank has its own.
  std::string shared_device;
  // Why NCCL is unusable on some rank ("rank 2: NCCL not found (tried ...)");
  // empty when it loads everywhere.
  std::string nccl_missing;
  // Why CUDA IPC fails among the ranks of some host; empty when it works on
  // every host (trivially so with one rank per host).
  std::string ipc_missing;
  GpuTransportSetting setting = GpuTransportSetting::kAuto;
};

// The job's transport.
Result<GpuTransport> ChooseGpuTransport(const TransportFacts& facts);

// The transport of one call: the job's, unless it cannot run this call
// (`nccl_takes_call` false for NCCL, or `adasum`), then the automatic choice
// among the others.
GpuTransport TransportForCall(GpuTransport job, const TransportFacts& facts, bool nccl_takes_call,
                              bool adasum);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_TRANSPORT_CHOICE_H_
