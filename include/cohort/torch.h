// The LibTorch adapter: cohort's collectives on at::Tensor, broadcasts of a
// module's parameters and of an optimizer's state, and a DistributedOptimizer, mirroring the
// Horovod-style Python API (allreduce / allreduce_ / allreduce_async, allgather, broadcast_,
// alltoall, reducescatter, barrier, join).
//
// Header-only on purpose: it is compiled by the *user's* build against the
// user's libtorch, and links against libcohort through cohort.h, so nothing in
// libcohort depends on torch.
//
// Tensors must live on the CPU and hold one of the dtypes cohort reduces:
// uint8, int8, int32, int64, float16, bfloat16, float32, float64. Anything else
// throws cohort::torch::Error naming the operation, the tensor and what was
// wrong. Non-contiguous tensors are accepted: the adapter works on a
// contiguous copy and, for the in-place forms, copies the result back.
//
// Unnamed operations get "<op>.noname.<n>" from a per-process counter, so, as
// in Horovod, unnamed calls must be made in the same order on every rank.
// Errors of the runtime (ranks that disagree on shape/dtype/root, a dead peer,
// a timeout) are thrown as cohort::torch::Error carrying the Status code.
#ifndef COHORT_TORCH_H_
#define COHORT_TORCH_H_

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::torch {

// A failed cohort operation; code() says which kind of failure (see status.h).
class Error : public std::runtime_error {
 public:
  Error(Status::Code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Status::Code code() const { return code_; }

 private:
  Status::Code code_;
};

// Options of allreduce and reducescatter. The default op averages, as
// Horovod's does.
struct ReduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  std::string name{};  // empty: "<op>.noname.<n>" ({}: g++ -Wextra accepts {.op = ...} alone)
  double prescale_factor = 1.0;                  // applied to each rank's input before reducing
  double postscale_factor = 1.0;                 // applied to the result
  Compression compression = Compression::kNone;  // float32 only; see cohort.h
  int process_set = kGlobalProcessSet;
};

namespace detail {

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(status.code(), status.ToString());
}

template <typename T>
T ValueOrThrow(Result<T> result) {
  ThrowIfError(result.status());
  return std::move(*result);
}

inline std::optional<DataType> ToDataType(at::ScalarType type) {
  switch (type) {
    case at::kByte:
      return DataType::kUInt8;
    case at::kChar:
      return DataType::kInt8;
    case at::kInt:
      return DataType::kInt32;
    case at::kLong:
      return DataType::kInt64;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kBFloat16:
      return DataType::kBFloat16;
    case at::kFloat:
      return DataType::kFloat32;
    case at::kDouble:
      return DataType::kFloat64;
    case at::kShort:
      return DataType::kInt16;
    case at::kBool:
      return DataType::kBool;
    default:
      return std::nullopt;
  }
}

// Says which operation on which tensor failed: "allreduce of tensor 'w'".
inline std::string What(const char* op, const std::string& name) {
  return std::string(op) + " of tensor '" + name + "'";
}

// The cohort dtype of `tensor`, after checking it can take part in `op`.
inline DataType CheckTensor(const at::Tensor& tensor, const char* op, const std::string& name) {
  if (!tensor.defined()) {
    throw Error(Status::Code::kInvalidArgument, What(op, name) + ": the tensor is undefined");
  }
  if (tensor.device().type() != at::kCPU) {
    throw Error(Status::Code::kInvalidArgument,
                What(op, name) + ": must be a CPU tensor, got one on device " +
                    tensor.device().str() + " (copy it with .cpu() first)");
  }
  std::optional<DataType> type = ToDataType(tensor.scalar_type());
  if (!type) {
    throw Error(Status::Code::kInvalidArgument,
                What(op, name) + ": dtype " + std::string(c10::toString(tensor.scalar_type())) +
                    " is not supported (supported: uint8, int8, int16, int32, int64, "
                    "float16, bfloat16, float32, float64, bool)");
  }
  return *type;
}

inline Shape ShapeOf(const at::Tensor& tensor) {
  return Shape(tensor.sizes().begin(), tensor.sizes().end());
}

// Names unnamed operations. Global on purpose: it mirrors Horovod's automatic
// names, which only line up across ranks because every rank counts its
// unnamed calls the same way.
inline std::string NameOrDefault(const std::string& name, const char* op) {
  static std::atomic<uint64_t> unnamed{0};
  return name.empty() ? std::string(op) + ".noname." + std::to_string(unnamed++) : name;
}

// The rows each of `size` ranks gets under an even split of `rows`: the first
// rows % size ranks get one row more (the engine's rule for reducescatter).
inline std::vector<int64_t> EvenSplits(int64_t rows, int size) {
  std::vector<int64_t> splits(size, rows / size);
  for (int64_t r = 0; r < rows % size; ++r) ++splits[r];
  return splits;
}

enum class Kind { kInPlace, kAllgather, kReduceScatter, kAlltoall };

// One operation in flight: the tensors the engine reads or writes stay alive
// here until it completes, and the result is built once.
struct Pending {
  ::cohort::Handle id = 0;
  bool submitted = false;  // id is the engine's
  Kind kind = Kind::kInPlace;
  std::string what;
  at::Tensor input;   // read by the engine (allgather, reducescatter, alltoall)
  at::Tensor output;  // written by the engine (allreduce, broadcast)
  at::Tensor target;  // where an in-place call on a non-contiguous tensor copies the output
  at::ScalarType result_type = at::kFloat;  // reducescatter: dtype before compression
  bool finished = false;
  Status status;
  at::Tensor result;
  std::vector<int64_t> received_splits;

  Pending() = default;
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  // The engine may still be writing into `output`: never free it early.
  ~Pending() {
    if (!submitted) return;
    if (!finished) (void)::cohort::Wait(id);
    ::cohort::Release(id);
  }

  // The engine's result as a tensor of the input's dtype.
  Status ToTensor(TensorResult taken) {
    result = at::empty(taken.shape, input.options());
    if (taken.data.size() != result.nbytes()) {
      return Status::Internal("the engine returned " + std::to_string(taken.data.size()) +
                              " bytes for a result of " + std::to_string(result.nbytes()));
    }
    if (!taken.data.empty()) std::memcpy(result.data_ptr(), taken.data.data(), taken.data.size());
    received_splits = std::move(taken.received_splits);
    return Status::OK();
  }

  void Finish() {
    finished = true;
    status = ::cohort::Wait(id);
    if (!status.ok()) return;
    at::NoGradGuard no_grad;
    if (kind == Kind::kInPlace) {
      result = target.defined() ? target.copy_(output) : output;
      return;
    }
    TensorResult taken;
    status = ::cohort::TakeResult(id, &taken);
    if (status.ok()) status = ToTensor(std::move(taken));
    if (!status.ok()) return;
    if (kind == Kind::kReduceScatter && result.scalar_type() != result_type) {
      result = result.to(result_type);
    }
  }
};

}  // namespace detail

// An operation in flight. wait() (or synchronize()) returns its result; a
// Handle dropped without waiting waits in its destructor, because the engine
// may still be using the tensors it holds.
class Handle {
 public:
  explicit Handle(std::shared_ptr<detail::Pending> pending) : pending_(std::move(pending)) {}

  // True once the operation has completed (successfully or not).
  bool poll() const {
    return pending_->finished || detail::ValueOrThrow(::cohort::Poll(pending_->id));
  }
  // Waits for completion and returns the result: the reduced / broadcast
  // tensor (the caller's own tensor for the in-place forms), the gathered
  // tensor, this rank's block of a reducescatter, the rows an alltoall
  // received. Throws the operation's error, every time it is asked.
  at::Tensor wait() {
    if (!pending_->finished) pending_->Finish();
    if (!pending_->status.ok()) {
      throw Error(pending_->status.code(), pending_->what + ": " + pending_->status.ToString());
    }
    return pending_->result;
  }
  // alltoall: how many rows came from each rank (after wait()).
  const std::vector<int64_t>& received_splits() const { return pending_->received_splits; }

 private:
  std::shared_ptr<detail::Pending> pending_;
};

inline at::Tensor synchronize(Handle& handle) { return handle.wait(); }
inline bool poll(const Handle& handle) { return handle.poll(); }

// ---- The runtime ----

inline void init() { detail::ThrowIfError(::cohort::Init()); }
inline void shutdown() { detail::ThrowIfError(::cohort::Shutdown()); }
inline bool is_initialized() { return ::cohort::IsInitialized(); }
inline int rank() { return ::cohort::Rank(); }
inline int size() { return ::cohort::Size(); }
inline int local_rank() { return ::cohort::LocalRank(); }
inline int local_size() { return ::cohort::LocalSize(); }

// ---- Allreduce ----

namespace detail {

inline ::cohort::AllreduceOptions EngineOptions(const ReduceOptions& o) {
  ::cohort::AllreduceOptions e;
  e.op = o.op;
  e.prescale_factor = o.prescale_factor;
  e.postscale_factor = o.postscale_factor;
  e.compression = o.compression;
  e.process_set = o.process_set;
  return e;
}

// Runs an engine call that writes into `tensor` in place (allreduce_,
// broadcast_); a non-contiguous tensor goes through a contiguous copy.
template <typename Submit>
Handle InPlace(at::Tensor& tensor, const char* op, const std::string& name, Submit submit) {
  const DataType type = CheckTensor(tensor, op, name);
  auto p = std::make_shared<Pending>();
  p->what = What(op, name);
  if (tensor.is_contiguous()) {
    p->output = tensor;
  } else {
    p->output = tensor.contiguous();
    p->target = tensor;
  }
  p->id = ValueOrThrow(submit(p->output.data_ptr(), ShapeOf(p->output), type));
  p->submitted = true;
  return Handle(std::move(p));
}

}  // namespace detail

// Reduces `tensor` over the ranks in place (a non-contiguous tensor gets the
// result copied back) and returns a handle.
inline Handle allreduce_async_(at::Tensor& tensor, const ReduceOptions& options = {}) {
  const std::string name = detail::NameOrDefault(options.name, "allreduce");
  return detail::InPlace(tensor, "allreduce", name, [&](void* buf, const Shape& shape, DataType t) {
    return ::cohort::AllreduceAsync(name, buf, buf, shape, t, detail::EngineOptions(options));
  });
}

// Out of place: `tensor` is left alone, the result is a new tensor.
inline Handle allreduce_async(const at::Tensor& tensor, const ReduceOptions& options = {}) {
  at::Tensor copy = tensor.defined() ? tensor.detach().clone(at::MemoryFormat::Contiguous) : tensor;
  return allreduce_async_(copy, options);
}

inline at::Tensor& allreduce_(at::Tensor& tensor, const ReduceOptions& options = {}) {
  allreduce_async_(tensor, options).wait();
  return tensor;
}

inline at::Tensor allreduce(const at::Tensor& tensor, const ReduceOptions& options = {}) {
  return allreduce_async(tensor, options).wait();
}

// Reduces several tensors as one group (negotiated together, fused where
// possible), each in place. options.name, when given, prefixes the tensors'
// names as "<name>.<i>". The tensors may have different dtypes.
inline std::vector<Handle> grouped_allreduce_async_(std::vector<at::Tensor>& tensors,
                                                    const ReduceOptions& options = {}) {
  const std::string prefix = detail::NameOrDefault(options.name, "grouped_allreduce");
  std::vector<std::string> names(tensors.size());
  std::vector<DataType> types(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    names[i] = prefix + "." + std::to_string(i);
    types[i] = detail::CheckTensor(tensors[i], "grouped allreduce", names[i]);
  }
  // The engine groups tensors of one dtype per call: one call per dtype here.
  std::vector<std::shared_ptr<detail::Pending>> all(tensors.size());
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType type = static_cast<DataType>(t);
    std::vector<std::string> group_names;
    std::vector<const void*> sends;
    std::vector<void*> recvs;
    std::vector<Shape> shapes;
    std::vector<std::shared_ptr<detail::Pending>> pending;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (types[i] != type) continue;
      auto p = std::make_shared<detail::Pending>();
      p->what = detail::What("grouped allreduce", names[i]);
      p->output = tensors[i].contiguous();
      if (!tensors[i].is_contiguous()) p->target = tensors[i];
      group_names.push_back(names[i]);
      sends.push_back(p->output.data_ptr());
      recvs.push_back(p->output.data_ptr());
      shapes.push_back(detail::ShapeOf(p->output));
      pending.push_back(p);
      all[i] = std::move(p);
    }
    if (group_names.empty()) continue;
    std::vector<::cohort::Handle> ids = detail::ValueOrThrow(::cohort::GroupedAllreduceAsync(
        group_names, sends, recvs, shapes, type, detail::EngineOptions(options)));
    for (size_t i = 0; i < ids.size(); ++i) {
      pending[i]->id = ids[i];
      pending[i]->submitted = true;
    }
  }
  std::vector<Handle> handles;
  for (auto& p : all) handles.emplace_back(std::move(p));
  return handles;
}

inline std::vector<at::Tensor> grouped_allreduce(const std::vector<at::Tensor>& tensors,
                                                 const ReduceOptions& options = {}) {
  std::vector<at::Tensor> copies;
  for (const at::Tensor& t : tensors) {
    copies.push_back(t.defined() ? t.detach().clone(at::MemoryFormat::Contiguous) : t);
  }
  for (Handle& h : grouped_allreduce_async_(copies, options)) h.wait();
  return copies;
}

// ---- Broadcast ----

// Copies root's `tensor` into every other rank's `tensor`, in place.
inline Handle broadcast_async_(at::Tensor& tensor, int root, const std::string& name = "",
                               int process_set = kGlobalProcessSet) {
  const std::string n = detail::NameOrDefault(name, "broadcast");
  return detail::InPlace(tensor, "broadcast", n, [&](void* buf, const Shape& shape, DataType t) {
    return ::cohort::BroadcastAsync(n, buf, shape, t, root, nullptr, process_set);
  });
}

inline Handle broadcast_async(const at::Tensor& tensor, int root, const std::string& name = "",
                              int process_set = kGlobalProcessSet) {
  at::Tensor copy = tensor.defined() ? tensor.detach().clone(at::MemoryFormat::Contiguous) : tensor;
  return broadcast_async_(copy, root, name, process_set);
}

inline at::Tensor& broadcast_(at::Tensor& tensor, int root, const std::string& name = "",
                              int process_set = kGlobalProcessSet) {
  broadcast_async_(tensor, root, name, process_set).wait();
  return tensor;
}

inline at::Tensor broadcast(const at::Tensor& tensor, int root, const std::string& name = "",
                            int process_set = kGlobalProcessSet) {
  return broadcast_async(tensor, root, name, process_set).wait();
}

// ---- Allgather, reducescatter, alltoall ----

namespace detail {

// Prepares an operation whose result the engine holds (fetched on completion).
inline std::shared_ptr<Pending> HeldResult(const at::Tensor& tensor, Kind kind, const char* op,
                                           const std::string& name) {
  CheckTensor(tensor, op, name);
  if (tensor.dim() == 0) {
    throw Error(Status::Code::kInvalidArgument,
                What(op, name) + ": needs at least one dimension, got a scalar (0-d) tensor");
  }
  auto p = std::make_shared<Pending>();
  p->kind = kind;
  p->what = What(op, name);
  p->input = tensor.detach().contiguous();
  p->result_type = tensor.scalar_type();
  return p;
}

}  // namespace detail

// Concatenates every rank's tensor along the first dimension, in rank order.
// Ranks may pass different first dimensions; the others must agree.
inline Handle allgather_async(const at::Tensor& tensor, const std::string& name = "",
                              int process_set = kGlobalProcessSet) {
  const std::string n = detail::NameOrDefault(name, "allgather");
  auto p = detail::HeldResult(tensor, detail::Kind::kAllgather, "allgather", n);
  const DataType type = *detail::ToDataType(tensor.scalar_type());
  p->id = detail::ValueOrThrow(::cohort::AllgatherAsync(
      n, p->input.data_ptr(), detail::ShapeOf(p->input), type, nullptr, process_set));
  p->submitted = true;
  return Handle(std::move(p));
}

inline at::Tensor allgather(const at::Tensor& tensor, const std::string& name = "",
                            int process_set = kGlobalProcessSet) {
  return allgather_async(tensor, name, process_set).wait();
}

// Reduces `tensor` over the ranks and returns this rank's block of rows: an
// even split of the first dimension (the first rows % size ranks get one row
// more). Prescale and postscale need a floating-point tensor; compression
// sends float32 as 16-bit floats and returns float32.
inline Handle reducescatter_async(const at::Tensor& tensor, const ReduceOptions& options = {}) {
  const std::string n = detail::NameOrDefault(options.name, "reducescatter");
  auto p = detail::HeldResult(tensor, detail::Kind::kReduceScatter, "reducescatter", n);
  const bool scaled = options.prescale_factor != 1.0 || options.postscale_factor != 1.0;
  if (scaled && !c10::isFloatingType(tensor.scalar_type())) {
    throw Error(Status::Code::kInvalidArgument,
                p->what + ": prescale/postscale factors need a floating-point tensor, got " +
                    std::string(c10::toString(tensor.scalar_type())));
  }
  if (tensor.scalar_type() == at::kFloat && options.compression != Compression::kNone) {
    p->input =
        p->input.to(options.compression == Compression::kFloat16 ? at::kHalf : at::kBFloat16);
  }
  const DataType type = *detail::ToDataType(p->input.scalar_type());
  // The engine scales (as for every binding); with compression the factors
  // apply to the 16-bit values, computed in float32.
  p->id = detail::ValueOrThrow(::cohort::ReduceScatterAsync(
      n, p->input.data_ptr(), detail::ShapeOf(p->input), type, options.op, {}, nullptr,
      options.process_set, options.prescale_factor, options.postscale_factor));
  p->submitted = true;
  return Handle(std::move(p));
}

inline at::Tensor reducescatter(const at::Tensor& tensor, const ReduceOptions& options = {}) {
  return reducescatter_async(tensor, options).wait();
}

// Sends splits[p] consecutive rows of `tensor` to rank p (empty: an even split
// as for reducescatter). The handle's result is the rows received in rank
// order; received_splits() says how many came from each rank.
inline Handle alltoall_async(const at::Tensor& tensor, const std::vector<int64_t>& splits = {},
                             const std::string& name = "", int process_set = kGlobalProcessSet) {
  const std::string n = detail::NameOrDefault(name, "alltoall");
  auto p = detail::HeldResult(tensor, detail::Kind::kAlltoall, "alltoall", n);
  const DataType type = *detail::ToDataType(tensor.scalar_type());
  const std::vector<int64_t> s =
      splits.empty() ? detail::EvenSplits(tensor.size(0), ::cohort::Size()) : splits;
  p->id = detail::ValueOrThrow(::cohort::AlltoallAsync(
      n, p->input.data_ptr(), detail::ShapeOf(p->input), type, s, nullptr, process_set));
  p->submitted = true;
  return Handle(std::move(p));
}

// Returns (rows received, rows received from each rank as an int64 tensor).
inline std::pair<at::Tensor, at::Tensor> alltoall(const at::Tensor& tensor,
                                                  const std::vector<int64_t>& splits = {},
                                                  const std::string& name = "",
                                                  int process_set = kGlobalProcessSet) {
  Handle h = alltoall_async(tensor, splits, name, process_set);
  at::Tensor received = h.wait();
  std::vector<int64_t> counts = h.received_splits();
  return {received, at::tensor(counts, at::kLong)};
}

// ---- Barrier and join ----

inline void barrier() { detail::ThrowIfError(::cohort::Barrier()); }

// For a rank that has run out of data: takes part in the other ranks'
// allreduces with zeros until every rank has joined; returns the last rank to
// join.
inline int join() { return detail::ValueOrThrow(::cohort::Join()); }

// ---- Models ----

// Copies root's parameters and buffers into every rank's `module` (all
// broadcasts in flight at once, named "broadcast_parameters.<name>").
inline void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& named,
                                 int root) {
  std::vector<Handle> handles;
  for (const auto& item : named) {
    at::Tensor tensor = item.value();
    handles.push_back(broadcast_async_(tensor, root, "broadcast_parameters." + item.key()));
  }
  for (Handle& h : handles) h.wait();
}

inline void broadcast_parameters(const ::torch::nn::Module& module, int root) {
  ::torch::OrderedDict<std::string, at::Tensor> named = module.named_parameters(true);
  for (const auto& item : module.named_buffers(true)) named.insert(item.key(), item.value());
  broadcast_parameters(named, root);
}

// Copies root's optimizer state (every param group's options and each
// parameter's state, e.g. SGD's momentum buffers or Adam's moments and step
// counts) into every rank's `optimizer`, so that a job resumed from rank 0's
// checkpoint goes on identically everywhere. It goes through the optimizer's
// own serialization (torch::optim::Optimizer::save / load), so any optimizer
// works; every rank's optimizer must hold the same parameters, in the same
// order and of the same shapes. The groups' options travel beside it, since
// load() restores only the per-parameter state (LibTorch 1.13).
inline void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root) {
  auto options_key = [](size_t group) {
    return "cohort.param_group_options." + std::to_string(group);
  };
  std::string bytes;
  if (rank() == root) {
    ::torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
      ::torch::serialize::OutputArchive options;
      optimizer.param_groups()[g].options().serialize(options);
      archive.write(options_key(g), options);
    }
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
  }
  at::Tensor length = at::full({1}, static_cast<int64_t>(bytes.size()), at::kLong);
  broadcast_(length, root, "broadcast_optimizer_state.length");
  at::Tensor blob = at::empty({length.item<int64_t>()}, at::kByte);
  if (rank() == root) std::memcpy(blob.data_ptr(), bytes.data(), bytes.size());
  broadcast_(blob, root, "broadcast_optimizer_state.bytes");
  if (rank() == root) return;
  std::istringstream in(std::string(static_cast<const char*>(blob.data_ptr()), blob.numel()));
  ::torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    ::torch::serialize::InputArchive options;
    archive.read(options_key(g), options);
    optimizer.param_groups()[g].options().serialize(options);
  }
}

// ---- DistributedOptimizer ----

struct DistributedOptimizerOptions {
  ReduceOp op = ReduceOp::kAverage;
  Compression compression = Compression::kNone;
  // Gradients are accumulated locally over this many backward passes and
  // reduced after the last one, before step().
  int backward_passes_per_step = 1;
  // Prefixes the gradients' names; two optimizers in one job need different ones.
  std::string name_prefix = "DistributedOptimizer.grad";
};

// Wraps any torch::optim::Optimizer: step() applies the update to gradients
// averaged (options.op) over the ranks.
//
// Each gradient's allreduce starts as soon as backward has accumulated it:
// a post-hook on every parameter's gradient accumulator (the node that writes
// .grad, as Horovod's Python optimizer does) submits it to the engine, so
// communication overlaps the rest of backward. step() submits the parameters
// whose hook did not fire (their gradient is zero on this rank), waits for all,
// then calls the wrapped optimizer's step().
//
// It holds the wrapped optimizer by reference and is not an Optimizer itself:
// torch::optim::Optimizer copies param groups (and clones their options) on
// construction, so a subclass would carry a second learning rate that drifts
// from the wrapped one. Change hyper-parameters through optimizer().
class DistributedOptimizer {
 public:
  // `named_parameters` (e.g. model->named_parameters()) names the gradients;
  // parameters not in it are named "group<g>.param<i>". Every rank must build
  // the optimizer over the same parameters.
  explicit DistributedOptimizer(
      ::torch::optim::Optimizer& optimizer,
      const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters =
          ::torch::OrderedDict<std::string, at::Tensor>(),
      DistributedOptimizerOptions options = {})
      : optimizer_(optimizer), options_(std::move(options)) {
    if (options_.backward_passes_per_step < 1) {
      throw Error(Status::Code::kInvalidArgument,
                  "DistributedOptimizer: backward_passes_per_step must be at least 1, got " +
                      std::to_string(options_.backward_passes_per_step));
    }
    const auto& groups = optimizer_.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < groups[g].params().size(); ++i) {
        AddParam(groups[g].params()[i], NameOf(groups[g].params()[i], named_parameters, g, i));
      }
    }
  }

  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Removes the hooks; reductions still in flight are waited for (by their handles).
  ~DistributedOptimizer() {
    for (Param& p : params_) {
      if (p.accumulator) p.accumulator->del_post_hook(p.hook_key);
    }
  }

  // Reduces every gradient that is not reduced yet and waits for all of them.
  // Throws the first error after every reduction has finished.
  void synchronize() {
    std::unique_lock<std::mutex> lock(mu_);
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].handle) Submit(i);
    }
    std::optional<Error> first;
    for (Param& p : params_) {
      try {
        if (p.handle) p.handle->wait();
      } catch (const Error& e) {
        if (!first) first = e;
      }
      p.handle.reset();
      p.passes = 0;
    }
    if (first) throw *first;
  }

  // With a closure, runs it (forward and backward) first, then reduces the
  // gradients and steps; closures that the wrapped optimizer must call several
  // times (LBFGS) are not supported.
  at::Tensor step(::torch::optim::Optimizer::LossClosure closure = nullptr) {
    at::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    synchronize();
    optimizer_.step(nullptr);
    return loss;
  }

  // How many gradients' reductions have started since the last synchronize():
  // after backward, every parameter that received a gradient.
  size_t started_reductions() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Param& p : params_) n += p.handle ? 1 : 0;
    return n;
  }

  void zero_grad() { optimizer_.zero_grad(); }
  ::torch::optim::Optimizer& optimizer() { return optimizer_; }

 private:
  struct Param {
    at::Tensor tensor;
    std::string name;
    std::shared_ptr<::torch::autograd::Node> accumulator;  // kept alive: it holds the hook
    uintptr_t hook_key = 0;
    int passes = 0;
    std::optional<Handle> handle;
  };

  // Runs after the accumulator has written a parameter's .grad.
  class GradReadyHook : public ::torch::autograd::FunctionPostHook {
   public:
    GradReadyHook(DistributedOptimizer* owner, size_t index) : owner_(owner), index_(index) {}
    ::torch::autograd::variable_list operator()(
        const ::torch::autograd::variable_list& outputs,
        const ::torch::autograd::variable_list& /*inputs*/) override {
      owner_->OnGradReady(index_);
      return outputs;
    }

   private:
    DistributedOptimizer* owner_;
    size_t index_;
  };

  static std::string NameOf(const at::Tensor& param,
                            const ::torch::OrderedDict<std::string, at::Tensor>& named, size_t g,
                            size_t i) {
    for (const auto& item : named) {
      if (item.value().unsafeGetTensorImpl() == param.unsafeGetTensorImpl()) return item.key();
    }
    return "group" + std::to_string(g) + ".param" + std::to_string(i);
  }

  void AddParam(const at::Tensor& tensor, std::string name) {
    Param p;
    p.tensor = tensor;
    p.name = options_.name_prefix + "." + name;
    if (tensor.requires_grad()) {
      p.accumulator = ::torch::autograd::impl::grad_accumulator(tensor);
      p.hook_key =
          p.accumulator->add_post_hook(std::make_unique<GradReadyHook>(this, params_.size()));
    }
    params_.push_back(std::move(p));
  }

  void OnGradReady(size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    Param& p = params_[index];
    if (p.handle) {
      throw Error(Status::Code::kInvalidArgument,
                  "DistributedOptimizer: gradient of '" + p.name + "' was computed more than " +
                      std::to_string(options_.backward_passes_per_step) +
                      " time(s) before step(); raise backward_passes_per_step or call step()");
    }
    if (++p.passes == options_.backward_passes_per_step) Submit(index);
  }

  // Starts the reduction of one gradient (zeros when this rank has none, so
  // every rank submits every name). Called with mu_ held.
  void Submit(size_t index) {
    Param& p = params_[index];
    if (!p.tensor.requires_grad()) return;
    if (!p.tensor.grad().defined()) p.tensor.mutable_grad() = at::zeros_like(p.tensor);
    at::Tensor grad = p.tensor.grad();
    p.handle = allreduce_async_(
        grad, {.op = options_.op, .name = p.name, .compression = options_.compression});
  }

  ::torch::optim::Optimizer& optimizer_;
  DistributedOptimizerOptions options_;
  std::mutex mu_;  // the hooks run on autograd's threads
  std::vector<Param> params_;
};

}  // namespace cohort::torch

#endif  // COHORT_TORCH_H_
