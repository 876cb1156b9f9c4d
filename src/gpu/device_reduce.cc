// Launching the reduction kernels (device_reduce.h).
#include "gpu/device_reduce.h"

#include <algorithm>
#include <string>

#include "common/half.h"

namespace cohort::gpu {
namespace {

constexpr unsigned kThreadsPerBlock = 256;

// Enough blocks to fill the device a few times over; the kernel's
// grid-stride loop covers any count with any grid.
LaunchShape ShapeFor(size_t count, int multiprocessors) {
  const size_t wanted = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const size_t most = static_cast<size_t>(std::max(multiprocessors, 1)) * 8;
  return LaunchShape{static_cast<unsigned>(std::max<size_t>(1, std::min(wanted, most))),
                     kThreadsPerBlock};
}

}  // namespace

double DeviceScaleFactor(DataType type, double factor) {
  if (type != DataType::kFloat16 || factor == 1.0) return factor;
  return Float16ToFloat(FloatToFloat16(static_cast<float>(factor)));
}

Status DeviceReducer::Launch(const ReduceSpec& spec, ReduceKernelArgs args, StreamHandle stream) {
  Result<FunctionHandle> fn = kernels_.Reduce(spec.type, spec.op, device_);
  if (!fn.ok()) return fn.status();
  void* params[] = {&args};
  return api_.Launch(*fn, ShapeFor(args.count, device_.multiprocessors), stream, params);
}

Status DeviceReducer::Reduce(DevicePtr dst, const std::vector<DevicePtr>& srcs, size_t count,
                             const ReduceSpec& spec, StreamHandle stream) {
  if (srcs.empty()) return Status::InvalidArgument("a GPU reduction needs at least one input");
  if (count == 0) return Status::OK();
  // Later rounds read dst as the running result, so dst may only be one of
  // the first round's inputs (those are read before it is written).
  for (size_t k = kMaxReduceSources; k < srcs.size(); ++k) {
    if (srcs[k] == dst) {
      return Status::Internal("GPU reduction: the output is input " + std::to_string(k) +
                              ", past the first " + std::to_string(kMaxReduceSources));
    }
  }
  size_t next = 0;  // the first input not reduced yet
  bool first_round = true;
  while (next < srcs.size()) {
    ReduceKernelArgs args;
    args.dst = dst;
    args.count = count;
    args.prescale = DeviceScaleFactor(spec.type, spec.prescale);
    args.postscale = DeviceScaleFactor(spec.type, spec.postscale);
    args.divisor = spec.op == ReduceOp::kAverage ? spec.ranks : 1;
    int n = 0;
    if (first_round) {
      args.first_prescaled = spec.first_prescaled ? 1 : 0;
    } else {
      args.src[n++] = dst;  // the previous rounds' result, already scaled
      args.first_prescaled = 1;
    }
    while (n < kMaxReduceSources && next < srcs.size()) args.src[n++] = srcs[next++];
    args.nsrc = n;
    args.finish = spec.finish && next == srcs.size() ? 1 : 0;
    COHORT_RETURN_IF_ERROR(Launch(spec, args, stream));
    first_round = false;
  }
  return Status::OK();
}

}  // namespace cohort::gpu
