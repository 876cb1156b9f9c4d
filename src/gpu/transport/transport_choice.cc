// The choice of GPU transport (transport_choice.h).
#include "gpu/transport/transport_choice.h"

namespace cohort::gpu {

const char* GpuTransportName(GpuTransport transport) {
  switch (transport) {
    case GpuTransport::kIpc:
      return "ipc";
    case GpuTransport::kNccl:
      return "nccl";
    case GpuTransport::kStaged:
      return "staged";
  }
  return "?";
}

namespace {

// Without NCCL: IPC on one host where it works, else staged.
GpuTransport WithoutNccl(const TransportFacts& f) {
  if (f.ranks == 1) return GpuTransport::kIpc;
  if (f.hosts == 1 && f.ipc_missing.empty()) return GpuTransport::kIpc;
  return GpuTransport::kStaged;
}

bool NcclUsable(const TransportFacts& f) {
  return f.nccl_missing.empty() && f.shared_device.empty();
}

}  // namespace

Result<GpuTransport> ChooseGpuTransport(const TransportFacts& f) {
  switch (f.setting) {
    case GpuTransportSetting::kStaged:
      return GpuTransport::kStaged;
    case GpuTransportSetting::kIpc:
      if (f.hosts > 1) {
        return Status::InvalidArgument(
            "COHORT_GPU_TRANSPORT=ipc needs every rank on one host, but the job spans " +
            std::to_string(f.hosts) + " hosts (use staged, or nccl)");
      }
      if (!f.ipc_missing.empty()) {
        return Status::InvalidArgument(
            "COHORT_GPU_TRANSPORT=ipc, but CUDA IPC does not work here: " + f.ipc_missing);
      }
      return GpuTransport::kIpc;
    case GpuTransportSetting::kNccl:
      if (!f.nccl_missing.empty()) {
        return Status::InvalidArgument("COHORT_GPU_TRANSPORT=nccl, but " + f.nccl_missing);
      }
      if (!f.shared_device.empty()) {
        return Status::InvalidArgument(
            "COHORT_GPU_TRANSPORT=nccl, but NCCL needs a GPU per rank and " + f.shared_device +
            " (use ipc or staged)");
      }
      return GpuTransport::kNccl;
    case GpuTransportSetting::kAuto:
      break;
  }
  if (f.ranks > 1 && NcclUsable(f)) return GpuTransport::kNccl;
  return WithoutNccl(f);
}

GpuTransport TransportForCall(GpuTransport job, const TransportFacts& f, bool nccl_takes_call,
                              bool adasum) {
  if (adasum) return GpuTransport::kStaged;
  if (job == GpuTransport::kNccl && !nccl_takes_call) return WithoutNccl(f);
  return job;
}

}  // namespace cohort::gpu
