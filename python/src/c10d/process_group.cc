// ProcessGroupCohort's collectives: each maps onto one or a few of the
// engine's named operations (see process_group.h).
#include "c10d/process_group.h"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <cstring>

#include "cohort/c_api.h"

namespace cohort_c10d {
namespace {

int CohortDType(const at::Tensor& t, const char* what) {
  switch (t.scalar_type()) {
    case at::kByte:
      return COHORT_UINT8;
    case at::kChar:
      return COHORT_INT8;
    case at::kInt:
      return COHORT_INT32;
    case at::kLong:
      return COHORT_INT64;
    case at::kHalf:
      return COHORT_FLOAT16;
    case at::kBFloat16:
      return COHORT_BFLOAT16;
    case at::kFloat:
      return COHORT_FLOAT32;
    case at::kDouble:
      return COHORT_FLOAT64;
    default:
      TORCH_CHECK(false, "cohort ", what, ": unsupported dtype ", t.scalar_type(),
                  " (supported: uint8, int8, int32, int64, float16, bfloat16, float32, float64)");
  }
}

void CheckCpu(const at::Tensor& t, const char* what) {
  TORCH_CHECK(!t.is_cuda(), "cohort ", what,
              ": CUDA tensors go through allreduce and broadcast only; move this one to the CPU");
  TORCH_CHECK(t.device().is_cpu(), "cohort ", what, ": tensors must be on the CPU, got ",
              t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "cohort ", what, ": tensors must be dense (strided)");
}

// CPU or CUDA (allreduce, broadcast).
void CheckCpuOrCuda(const at::Tensor& t, const char* what) {
  if (t.is_cuda()) {
    TORCH_CHECK(t.layout() == at::kStrided, "cohort ", what, ": tensors must be dense (strided)");
    return;
  }
  CheckCpu(t, what);
}

// A tensor's device for the engine: -1 for host memory; for a CUDA tensor
// its index and torch's current stream there (through c10's device-generic
// guard: no CUDA headers needed to build this).
cohort_device DeviceOf(const at::Tensor& t, const char* what) {
  (void)what;  // named in the error only where torch is older than 2.1
  if (!t.is_cuda()) return cohort_device{-1, nullptr};
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(t.device().type())->getStream(t.device());
  return cohort_device{static_cast<int32_t>(t.device().index()), stream.native_handle()};
#else
  TORCH_CHECK(false, "cohort ", what, ": CUDA tensors need torch 2.1 or newer in the c10d backend");
#endif
}

void CheckCount(size_t got, size_t want, const char* what, const char* which) {
  TORCH_CHECK(got == want, "cohort ", what, ": expected ", want, " ", which, ", got ", got);
}

// The engine's shape of a tensor: its sizes, or {1} for a 0-dim tensor.
std::vector<int64_t> EngineShape(const at::Tensor& t) {
  if (t.dim() == 0) return {1};
  return t.sizes().vec();
}

int CohortReduceOp(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return COHORT_SUM;
    case c10d::ReduceOp::AVG:
      return COHORT_AVERAGE;
    case c10d::ReduceOp::PRODUCT:
      return COHORT_PRODUCT;
    case c10d::ReduceOp::MIN:
      return COHORT_MIN;
    case c10d::ReduceOp::MAX:
      return COHORT_MAX;
    case c10d::ReduceOp::PREMUL_SUM:
      return COHORT_SUM;
    default:
      return -1;
  }
}

bool IsBitwise(c10d::ReduceOp::RedOpType op) {
  return op == c10d::ReduceOp::BAND || op == c10d::ReduceOp::BOR || op == c10d::ReduceOp::BXOR;
}

// The tensor factor of a PREMUL_SUM supplement, undefined when it has a
// double instead. torch 1.13 keeps a vector `tensor_factors`, torch 2.x one
// `tensor_factor`: overloads pick whichever member exists (the int overload
// wins when both would do), so one source builds against both.
template <typename Supplement>
auto TensorFactor(const Supplement& s, int) -> decltype(s.tensor_factors, at::Tensor()) {
  return s.tensor_factors.empty() ? at::Tensor() : s.tensor_factors[0];
}
template <typename Supplement>
auto TensorFactor(const Supplement& s, long) -> decltype(s.tensor_factor, at::Tensor()) {
  return s.tensor_factor;
}

// PREMUL_SUM's factor: a double or a one-element tensor.
double PremulFactor(const c10d::ReduceOp& op) {
  auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "cohort: PREMUL_SUM without a factor");
  const at::Tensor factor = TensorFactor(*supplement, 0);
  if (!factor.defined()) return supplement->double_factor;
  return factor.item<double>();
}

// A contiguous tensor to compute into, and the copy back into `t` when `t`
// itself is not contiguous.
struct Output {
  at::Tensor target, buffer;
  explicit Output(const at::Tensor& t)
      : target(t), buffer(t.is_contiguous() ? t : t.contiguous()) {}
  void CopyBack() const {
    if (!buffer.is_same(target)) target.copy_(buffer);
  }
};

void CheckCode(int code, const cohort_error& err, const char* what) {
  if (code != COHORT_OK) ThrowCohortError(what, err.message);
}

at::Tensor Flat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Copies consecutive pieces of `flat` into `outputs`, each its own numel.
void Unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& outputs, const char* what) {
  int64_t total = 0;
  for (const at::Tensor& t : outputs) total += t.numel();
  TORCH_CHECK(total == flat.numel(), "cohort ", what, ": received ", flat.numel(),
              " elements but the output tensors hold ", total);
  int64_t offset = 0;
  for (const at::Tensor& t : outputs) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

// The result of a completed allgather, reduce-scatter or alltoall as a 1-D
// tensor of `like`'s dtype.
at::Tensor TakeResult(int64_t handle, const at::Tensor& like, const char* what) {
  cohort_error err;
  cohort_result* result = nullptr;
  CheckCode(cohort_take_result(handle, &result, &err), err, what);
  const uint64_t bytes = cohort_result_bytes(result);
  at::Tensor out = at::empty({static_cast<int64_t>(bytes / like.element_size())}, like.options());
  if (bytes > 0) std::memcpy(out.data_ptr(), cohort_result_data(result), bytes);
  cohort_result_free(result);
  return out;
}

}  // namespace

ProcessGroupCohort::ProcessGroupCohort(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                       std::chrono::milliseconds timeout, int process_set,
                                       std::string name_prefix, int64_t channel)
    : C10dBackend(rank, size),
      store_(std::move(store)),
      timeout_(timeout),
      process_set_(process_set),
      name_prefix_(std::move(name_prefix)),
      channel_(channel),
      global_ranks_(size),
      completions_(std::make_shared<CompletionQueue>()) {
  cohort_error err;
  int members = 0;
  CheckCode(cohort_process_set_ranks(process_set_, global_ranks_.data(), size, &members, &err), err,
            "process group");
  TORCH_CHECK(members == size, "cohort: process set ", process_set_, " has ", members,
              " ranks but the group ", size);
  CheckCode(cohort_p2p_open(&err), err, "process group");
  init();
}

ProcessGroupCohort::~ProcessGroupCohort() = default;

std::string ProcessGroupCohort::NextName(const char* kind) {
  std::lock_guard<std::mutex> lock(mu_);
  return name_prefix_ + kind + "." + std::to_string(next_op_++);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::Enqueue(c10d::OpType type,
                                                           std::vector<at::Tensor> outputs,
                                                           std::vector<int64_t> handles,
                                                           std::function<void()> finish,
                                                           const char* what, double wait_slack) {
  // Completed by whoever first waits for it, polls it or asks for its
  // future (which hands it to the completion thread).
  return c10::make_intrusive<CohortWork>(rank_, type, std::move(outputs), std::move(handles),
                                         std::move(finish), what, TimeoutSeconds() + wait_slack,
                                         completions_);
}

int64_t ProcessGroupCohort::SubmitAllgather(const at::Tensor& input, const char* what) {
  const int64_t shape[1] = {input.numel()};
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_allgather_async(NextName(what).c_str(), input.data_ptr(), shape, 1,
                                   CohortDType(input, what), process_set_, &handle, &err),
            err, what);
  return handle;
}

int64_t ProcessGroupCohort::SubmitAlltoall(const at::Tensor& input,
                                           const std::vector<int64_t>& splits, const char* what) {
  const std::vector<int64_t> shape = EngineShape(input);
  int64_t handle = 0;
  cohort_error err;
  CheckCode(
      cohort_alltoall_async(NextName(what).c_str(), input.data_ptr(), shape.data(),
                            static_cast<int>(shape.size()), CohortDType(input, what), splits.data(),
                            static_cast<int>(splits.size()), process_set_, &handle, &err),
      err, what);
  return handle;
}

std::vector<int64_t> ProcessGroupCohort::SubmitReduction(const at::Tensor& input,
                                                         const at::Tensor& output,
                                                         const c10d::ReduceOp& op, const char* what,
                                                         std::function<void()>* finish) {
  const c10d::ReduceOp::RedOpType type = op.op_;
  if (IsBitwise(type)) {
    TORCH_CHECK(!input.is_cuda(), "cohort ", what,
                ": bitwise reductions of CUDA tensors are not supported; move them to the CPU");
    TORCH_CHECK(!at::isFloatingType(input.scalar_type()), "cohort ", what,
                ": bitwise reductions need an integer dtype, got ", input.scalar_type());
    const int64_t handle = SubmitAllgather(input, what);
    const int members = size_;
    *finish = [handle, input, output, type, members, what] {
      at::Tensor rows = TakeResult(handle, input, what).view({members, -1});
      at::Tensor acc = rows[0].clone();
      for (int r = 1; r < members; ++r) {
        if (type == c10d::ReduceOp::BAND) acc.bitwise_and_(rows[r]);
        if (type == c10d::ReduceOp::BOR) acc.bitwise_or_(rows[r]);
        if (type == c10d::ReduceOp::BXOR) acc.bitwise_xor_(rows[r]);
      }
      output.view({-1}).copy_(acc);
    };
    return {handle};
  }
  const int cohort_op = CohortReduceOp(type);
  TORCH_CHECK(cohort_op >= 0, "cohort ", what, ": unsupported ReduceOp ", static_cast<int>(type));
  cohort_allreduce_options options{cohort_op, 1.0, 1.0, COHORT_COMPRESSION_NONE, process_set_};
  if (type == c10d::ReduceOp::PREMUL_SUM) options.prescale_factor = PremulFactor(op);
  const std::vector<int64_t> shape = EngineShape(input);
  const cohort_device device = DeviceOf(input, what);
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_allreduce_async_on_device(
                NextName(what).c_str(), input.data_ptr(), output.data_ptr(), shape.data(),
                static_cast<int>(shape.size()), CohortDType(input, what), &options,
                device.device >= 0 ? &device : nullptr, &handle, &err),
            err, what);
  *finish = [input, output] {};  // keeps both buffers alive until the engine is done
  return {handle};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  CheckCount(tensors.size(), 1, "allreduce", "tensor per process");
  if (tensors[0].is_sparse()) return SparseAllreduce(tensors, opts);
  CheckCpuOrCuda(tensors[0], "allreduce");
  Output out(tensors[0]);
  std::function<void()> reduced;
  std::vector<int64_t> handles =
      SubmitReduction(out.buffer, out.buffer, opts.reduceOp, "allreduce", &reduced);
  return Enqueue(
      c10d::OpType::ALLREDUCE, tensors, std::move(handles),
      [reduced, out] {
        reduced();
        out.CopyBack();
      },
      "allreduce");
}

// As gloo does: every rank's indices and values are allgathered (the
// engine concatenates ranks' rows, whatever their count) and the sum is their
// coalesced sparse tensor, written into the input.
c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::SparseAllreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = tensors[0];
  TORCH_CHECK(t.device().is_cpu(), "cohort allreduce: tensors must be on the CPU, got ",
              t.device());
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM,
              "cohort allreduce: sparse tensors support ReduceOp.SUM only (as gloo)");
  const at::Tensor input = t.coalesce();
  // (nnz, sparse dims) and (nnz, dense sizes...): rows the engine gathers.
  const at::Tensor indices = input.indices().t().contiguous();
  const at::Tensor values = input.values().contiguous();
  const int64_t index_handle = SubmitRows(indices, "allreduce_sparse_indices");
  const int64_t value_handle = SubmitRows(values, "allreduce_sparse_values");
  const at::Tensor target = t;
  return Enqueue(
      c10d::OpType::ALLREDUCE, tensors, {index_handle, value_handle},
      [target, indices, values, index_handle, value_handle] {
        at::Tensor all_indices =
            TakeResult(index_handle, indices, "allreduce").view({-1, indices.size(1)}).t();
        std::vector<int64_t> value_shape = values.sizes().vec();
        value_shape[0] = -1;
        at::Tensor all_values = TakeResult(value_handle, values, "allreduce").view(value_shape);
        at::Tensor sum =
            at::sparse_coo_tensor(all_indices, all_values, target.sizes(), target.options())
                .coalesce();
        target.copy_(sum);
      },
      "allreduce");
}

int64_t ProcessGroupCohort::SubmitRows(const at::Tensor& rows, const char* what) {
  const std::vector<int64_t> shape = rows.sizes().vec();
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_allgather_async(NextName(what).c_str(), rows.data_ptr(), shape.data(),
                                   static_cast<int>(shape.size()), CohortDType(rows, what),
                                   process_set_, &handle, &err),
            err, what);
  return handle;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  std::vector<int64_t> handles;
  std::vector<std::function<void()>> finishes;
  for (const at::Tensor& t : tensors) {
    CheckCpuOrCuda(t, "allreduce_coalesced");
    Output out(t);
    std::function<void()> reduced;
    for (int64_t h :
         SubmitReduction(out.buffer, out.buffer, opts.reduceOp, "allreduce_coalesced", &reduced)) {
      handles.push_back(h);
    }
    finishes.push_back([reduced, out] {
      reduced();
      out.CopyBack();
    });
  }
  return Enqueue(
      c10d::OpType::ALLREDUCE_COALESCED, tensors, std::move(handles),
      [finishes] {
        for (const auto& f : finishes) f();
      },
      "allreduce_coalesced");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  CheckCount(tensors.size(), 1, "reduce", "tensor per process");
  CheckCpu(tensors[0], "reduce");
  at::Tensor input = tensors[0].contiguous();
  at::Tensor reduced = at::empty_like(input);
  std::function<void()> finish_reduction;
  std::vector<int64_t> handles =
      SubmitReduction(input, reduced, opts.reduceOp, "reduce", &finish_reduction);
  const bool is_root = rank_ == opts.rootRank;
  at::Tensor target = tensors[0];
  return Enqueue(
      c10d::OpType::REDUCE, tensors, std::move(handles),
      [finish_reduction, is_root, target, reduced] {
        finish_reduction();
        if (is_root) target.copy_(reduced);
      },
      "reduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  CheckCount(tensors.size(), 1, "broadcast", "tensor per process");
  CheckCpuOrCuda(tensors[0], "broadcast");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "cohort broadcast: root rank ",
              opts.rootRank, " is outside the group of ", size_);
  Output out(tensors[0]);
  const std::vector<int64_t> shape = EngineShape(out.buffer);
  const cohort_device device = DeviceOf(out.buffer, "broadcast");
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_broadcast_async_on_device(NextName("broadcast").c_str(), out.buffer.data_ptr(),
                                             shape.data(), static_cast<int>(shape.size()),
                                             CohortDType(out.buffer, "broadcast"),
                                             static_cast<int>(opts.rootRank), process_set_,
                                             device.device >= 0 ? &device : nullptr, &handle, &err),
            err, "broadcast");
  return Enqueue(
      c10d::OpType::BROADCAST, tensors, {handle}, [out] { out.CopyBack(); }, "broadcast");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  CheckCount(inputs.size(), 1, "allgather", "input tensor per process");
  CheckCount(outputs.size(), 1, "allgather", "output list per process");
  CheckCount(outputs[0].size(), size_, "allgather", "output tensors (one per rank)");
  CheckCpu(inputs[0], "allgather");
  for (const at::Tensor& t : outputs[0]) {
    TORCH_CHECK(t.numel() == inputs[0].numel() && t.scalar_type() == inputs[0].scalar_type(),
                "cohort allgather: every output tensor must match the input's size and dtype");
  }
  at::Tensor input = inputs[0].contiguous();
  const int64_t handle = SubmitAllgather(input, "allgather");
  std::vector<at::Tensor> targets = outputs[0];
  return Enqueue(
      c10d::OpType::ALLGATHER, targets, {handle},
      [handle, input, targets] {
        Unflatten(TakeResult(handle, input, "allgather"), targets, "allgather");
      },
      "allgather");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  CheckCpu(input, "_allgather_base");
  TORCH_CHECK(
      output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
      "cohort _allgather_base: the output must hold group size (", size_, ") times the input's ",
      input.numel(), " elements of its dtype, got ", output.numel());
  at::Tensor in = input.contiguous();
  const int64_t handle = SubmitAllgather(in, "allgather_base");
  at::Tensor target = output;
  return Enqueue(
      c10d::OpType::_ALLGATHER_BASE, {output}, {handle},
      [handle, in, target] {
        Unflatten(TakeResult(handle, in, "_allgather_base"), {target}, "_allgather_base");
      },
      "_allgather_base");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  CheckCount(outputs.size(), size_, "allgather_coalesced", "output lists (one per rank)");
  std::vector<int64_t> handles;
  std::vector<at::Tensor> ins;
  for (const at::Tensor& t : inputs) {
    CheckCpu(t, "allgather_coalesced");
    ins.push_back(t.contiguous());
    handles.push_back(SubmitAllgather(ins.back(), "allgather_coalesced"));
  }
  std::vector<at::Tensor> flat_outputs;
  for (const auto& list : outputs) {
    CheckCount(list.size(), inputs.size(), "allgather_coalesced", "tensors per output list");
    for (const at::Tensor& t : list) flat_outputs.push_back(t);
  }
  const int members = size_;
  return Enqueue(
      c10d::OpType::ALLGATHER_COALESCED, flat_outputs, handles,
      [handles, ins, outputs, members] {
        for (size_t i = 0; i < handles.size(); ++i) {
          std::vector<at::Tensor> targets;
          for (int r = 0; r < members; ++r) targets.push_back(outputs[r][i]);
          Unflatten(TakeResult(handles[i], ins[i], "allgather_coalesced"), targets,
                    "allgather_coalesced");
        }
      },
      "allgather_coalesced");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  CheckCount(inputs.size(), 1, "gather", "input tensor per process");
  CheckCpu(inputs[0], "gather");
  const bool is_root = rank_ == opts.rootRank;
  std::vector<at::Tensor> targets;
  if (is_root) {
    CheckCount(outputs.size(), 1, "gather", "output list on the root");
    CheckCount(outputs[0].size(), size_, "gather", "output tensors on the root (one per rank)");
    targets = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "cohort gather: only the root (rank ",
                opts.rootRank, ") takes output tensors");
  }
  at::Tensor input = inputs[0].contiguous();
  const int64_t handle = SubmitAllgather(input, "gather");
  return Enqueue(
      c10d::OpType::GATHER, targets, {handle},
      [handle, input, targets, is_root] {
        at::Tensor gathered = TakeResult(handle, input, "gather");
        if (is_root) Unflatten(gathered, targets, "gather");
      },
      "gather");
}

// Scatter is an alltoall in which only the root sends.
c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  CheckCount(outputs.size(), 1, "scatter", "output tensor per process");
  CheckCpu(outputs[0], "scatter");
  const bool is_root = rank_ == opts.rootRank;
  std::vector<int64_t> splits(size_, 0);
  at::Tensor send;
  if (is_root) {
    CheckCount(inputs.size(), 1, "scatter", "input list on the root");
    CheckCount(inputs[0].size(), size_, "scatter", "input tensors on the root (one per rank)");
    for (int r = 0; r < size_; ++r) splits[r] = inputs[0][r].numel();
    send = Flat(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), "cohort scatter: only the root (rank ",
                opts.rootRank, ") takes input tensors");
    send = at::empty({0}, outputs[0].options());
  }
  const int64_t handle = SubmitAlltoall(send, splits, "scatter");
  at::Tensor target = outputs[0];
  return Enqueue(
      c10d::OpType::SCATTER, outputs, {handle},
      [handle, send, target] {
        Unflatten(TakeResult(handle, target, "scatter"), {target}, "scatter");
      },
      "scatter");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  CheckCount(outputs.size(), 1, "reduce_scatter", "output tensor per process");
  CheckCount(inputs.size(), 1, "reduce_scatter", "input list per process");
  CheckCount(inputs[0].size(), size_, "reduce_scatter", "input tensors (one per rank)");
  for (const at::Tensor& t : inputs[0]) {
    TORCH_CHECK(t.numel() == outputs[0].numel(),
                "cohort reduce_scatter: every input tensor must have the output's ",
                outputs[0].numel(), " elements, got ", t.numel());
  }
  at::Tensor flat = Flat(inputs[0]);
  return _reduce_scatter_base(outputs[0], flat, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  CheckCpu(input, "reduce_scatter");
  TORCH_CHECK(input.numel() == output.numel() * size_, "cohort reduce_scatter: the input must hold",
              " group size (", size_, ") times the output's ", output.numel(), " elements, got ",
              input.numel());
  const c10d::ReduceOp::RedOpType type = opts.reduceOp.op_;
  const int op = CohortReduceOp(type);
  TORCH_CHECK(op >= 0, "cohort reduce_scatter: ReduceOp ", static_cast<int>(type),
              " is not supported (supported: SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM)");
  at::Tensor send = input.reshape({-1}).contiguous();
  // PREMUL_SUM's factor is the engine's prescale (the one scaling path).
  const double prescale = type == c10d::ReduceOp::PREMUL_SUM ? PremulFactor(opts.reduceOp) : 1.0;
  const int64_t shape[1] = {send.numel()};
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_reducescatter_async(NextName("reduce_scatter").c_str(), send.data_ptr(), shape,
                                       1, CohortDType(send, "reduce_scatter"), op, nullptr, 0,
                                       process_set_, prescale, 1.0, &handle, &err),
            err, "reduce_scatter");
  at::Tensor target = output;
  return Enqueue(
      c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {handle},
      [handle, send, target] {
        Unflatten(TakeResult(handle, send, "reduce_scatter"), {target}, "reduce_scatter");
      },
      "reduce_scatter");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& /*opts*/) {
  CheckCpu(input, "alltoall_base");
  TORCH_CHECK(input.dim() >= 1, "cohort alltoall_base: the input needs at least one dimension");
  std::vector<int64_t> splits = input_splits;
  if (splits.empty()) {
    TORCH_CHECK(input.size(0) % size_ == 0, "cohort alltoall_base: dimension 0 of the input (",
                input.size(0), ") does not split evenly over ", size_, " ranks");
    splits.assign(size_, input.size(0) / size_);
  }
  CheckCount(splits.size(), size_, "alltoall_base", "input split sizes");
  if (!output_splits.empty()) {
    CheckCount(output_splits.size(), size_, "alltoall_base", "output split sizes");
  }
  at::Tensor in = input.contiguous();
  const int64_t handle = SubmitAlltoall(in, splits, "alltoall_base");
  at::Tensor target = output;
  return Enqueue(
      c10d::OpType::ALLTOALL_BASE, {output}, {handle},
      [handle, in, target] {
        Unflatten(TakeResult(handle, in, "alltoall_base"), {target}, "alltoall_base");
      },
      "alltoall_base");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& /*opts*/) {
  CheckCount(inputs.size(), size_, "alltoall", "input tensors (one per rank)");
  CheckCount(outputs.size(), size_, "alltoall", "output tensors (one per rank)");
  std::vector<int64_t> splits;
  for (const at::Tensor& t : inputs) {
    CheckCpu(t, "alltoall");
    splits.push_back(t.numel());
  }
  at::Tensor send = Flat(inputs);
  const int64_t handle = SubmitAlltoall(send, splits, "alltoall");
  std::vector<at::Tensor> targets = outputs;
  return Enqueue(
      c10d::OpType::ALLTOALL, outputs, {handle},
      [handle, send, targets] {
        Unflatten(TakeResult(handle, send, "alltoall"), targets, "alltoall");
      },
      "alltoall");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::barrier(const c10d::BarrierOptions& /*opts*/) {
  int64_t handle = 0;
  cohort_error err;
  CheckCode(cohort_barrier_async(NextName("barrier").c_str(), process_set_, &handle, &err), err,
            "barrier");
  return Enqueue(c10d::OpType::BARRIER, {}, {handle}, nullptr, "barrier");
}

}  // namespace cohort_c10d
