// GpuRun: what every GPU transport works with for one rank: the CUDA API,
// the engine's stream (all of a collective's device work is queued on it),
// the reduction kernels, and an event for the host's bounded waits.
#ifndef COHORT_GPU_TRANSPORT_GPU_RUN_H_
#define COHORT_GPU_TRANSPORT_GPU_RUN_H_

#include "gpu/cuda_api.h"
#include "gpu/device_reduce.h"

namespace cohort::gpu {

struct GpuRun {
  CudaApi& api;
  StreamHandle stream;
  DeviceReducer& reducer;
  EventHandle sync_event;  // recorded and polled by the host's waits only
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_GPU_RUN_H_
