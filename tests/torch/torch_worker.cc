// Worker program for the LibTorch adapter's multi-process tests (run under
// `cohort run -np N`; the driver is torch_adapter_test.cc). Every mode checks
// include/cohort/torch.h against a single-process reference that each rank
// computes itself from every rank's (deterministic) input, and exits 0 only
// when every result and every error is what it must be.
//
//   torch_worker collectives  each function, for every dtype cohort supports:
//                             allreduce (each op, scale factors, compression,
//                             in place on a non-contiguous tensor, async),
//                             grouped allreduce, allgather, broadcast(_),
//                             alltoall (with and without splits),
//                             reducescatter, barrier, join
//   torch_worker errors       unsupported dtypes, non-CPU, undefined and 0-d
//                             tensors, shape/dtype/root mismatches across
//                             ranks, bad splits; the runtime carries on
//   torch_worker optimizer    broadcast_parameters, then DistributedOptimizer
//                             on each rank's shard ends with the weights of
//                             one process training on the global batch; also
//                             backward_passes_per_step, a parameter unused on
//                             some ranks, and too many backward passes
//
// This is the only translation unit of the tests that includes torch (torch
// headers take about a minute to compile).
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cohort/torch.h"

namespace ct = cohort::torch;

namespace {

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", ct::rank(), what.c_str());
    ++g_failures;
  }
}

const std::vector<at::ScalarType> kTypes = {at::kByte,  at::kChar,     at::kShort, at::kInt,
                                            at::kLong,  at::kHalf,     at::kBFloat16,
                                            at::kFloat, at::kDouble};

std::string TypeName(at::ScalarType type) { return c10::toString(type); }

// Rank `rank`'s input: small positive integers (1..modulo), exact in every dtype.
at::Tensor Input(int rank, at::IntArrayRef shape, at::ScalarType type, int modulo = 7) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return ((at::arange(n, at::kLong) + 3 * rank) % modulo + 1).reshape(shape).to(type);
}

// Every rank's input stacked along a new first dimension, in float64.
at::Tensor AllInputs(at::IntArrayRef shape, int modulo = 7) {
  std::vector<at::Tensor> all;
  for (int r = 0; r < ct::size(); ++r) all.push_back(Input(r, shape, at::kDouble, modulo));
  return at::stack(all);
}

// What reducing `all` (from AllInputs) over the ranks gives, in `type`.
at::Tensor Reduce(cohort::ReduceOp op, const at::Tensor& all, at::ScalarType type) {
  switch (op) {
    case cohort::ReduceOp::kSum:
      return all.sum(0).to(type);
    case cohort::ReduceOp::kAverage:
      return c10::isIntegralType(type, false) ? at::div(all.sum(0), ct::size(), "trunc").to(type)
                                              : (all.sum(0) / ct::size()).to(type);
    case cohort::ReduceOp::kMin:
      return std::get<0>(all.min(0)).to(type);
    case cohort::ReduceOp::kMax:
      return std::get<0>(all.max(0)).to(type);
    case cohort::ReduceOp::kProduct:
      return all.prod(0).to(type);
    case cohort::ReduceOp::kAdasum:  // not an element-wise reduction; this worker skips it
      break;
  }
  return {};
}

// Equal dtype and shape; values exact for integers, within rounding for floats.
void CheckClose(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  if (!actual.defined() || actual.scalar_type() != expected.scalar_type() ||
      actual.sizes() != expected.sizes()) {
    Check(false, what + ": got " + (actual.defined() ? actual.toString() : "undefined") + " " +
                     (actual.defined() ? c10::str(actual.sizes()) : "") + ", expected " +
                     expected.toString() + " " + c10::str(expected.sizes()));
    return;
  }
  const at::ScalarType t = expected.scalar_type();
  const double rtol = t == at::kHalf || t == at::kBFloat16 ? 1e-2 : t == at::kFloat ? 1e-6 : 0;
  const bool ok = rtol == 0
                      ? at::equal(actual.to(at::kDouble), expected.to(at::kDouble))
                      : at::allclose(actual.to(at::kDouble), expected.to(at::kDouble), rtol, 1e-12);
  Check(ok, what + ": values differ\nactual:\n" + c10::str(actual) + "\nexpected:\n" +
                c10::str(expected));
}

// Runs `body`, which must throw a cohort::torch::Error with `code` and a
// message containing `text`.
void ExpectError(const std::function<void()>& body, cohort::Status::Code code,
                 const std::string& text, const std::string& what) {
  try {
    body();
    Check(false, what + ": no error");
  } catch (const ct::Error& e) {
    Check(e.code() == code, what + ": code " + cohort::StatusCodeName(e.code()) + ": " + e.what());
    Check(std::string(e.what()).find(text) != std::string::npos,
          what + ": message '" + e.what() + "' lacks '" + text + "'");
  }
}

void CheckAllreduce(at::ScalarType type) {
  const std::string t = TypeName(type);
  const bool floating = c10::isFloatingType(type);
  using cohort::ReduceOp;
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    const int modulo = op == ReduceOp::kProduct ? 2 : 7;  // products fit in int8
    const at::Tensor input = Input(ct::rank(), {4, 5}, type, modulo);
    const at::Tensor before = input.clone();
    at::Tensor out = ct::allreduce(input, {.op = op, .name = "ar." + t + "." + ReduceOpName(op)});
    const std::string what = "allreduce " + t + " " + cohort::ReduceOpName(op);
    CheckClose(out, Reduce(op, AllInputs({4, 5}, modulo), type), what);
    CheckClose(input, before, what + " leaves its input alone");
  }
  // In place on a non-contiguous (transposed) tensor, asynchronously.
  at::Tensor transposed = Input(ct::rank(), {5, 4}, type).t();
  ct::Handle h = ct::allreduce_async_(transposed, {.op = ReduceOp::kSum, .name = "ar_." + t});
  at::Tensor result = h.wait();
  Check(h.poll(), "poll after wait");
  CheckClose(transposed, Reduce(ReduceOp::kSum, AllInputs({5, 4}), type).t(),
             "allreduce_ in place on a transposed " + t + " tensor");
  Check(result.is_same(transposed), "allreduce_ returns the caller's tensor");
  if (!floating) return;
  at::Tensor scaled = ct::allreduce(Input(ct::rank(), {6}, type), {.op = ReduceOp::kSum,
                                                                   .name = "scaled." + t,
                                                                   .prescale_factor = 0.5,
                                                                   .postscale_factor = 4.0});
  CheckClose(scaled, (AllInputs({6}).sum(0) * 2).to(type), "allreduce " + t + " scale factors");
}

// The first row of rank r's block given every rank's rows.
int64_t BlockStart(const std::vector<int64_t>& splits, int r) {
  int64_t start = 0;
  for (int p = 0; p < r; ++p) start += splits[p];
  return start;
}

void CheckGroupedAndCompressed(at::ScalarType type) {
  const std::string t = TypeName(type);
  // Mixed dtypes in one group; names "<name>.<i>".
  std::vector<at::Tensor> group = {Input(ct::rank(), {3}, type),
                                   Input(ct::rank(), {2, 2}, at::kDouble),
                                   Input(ct::rank(), {7}, type)};
  std::vector<at::Tensor> out =
      ct::grouped_allreduce(group, {.op = cohort::ReduceOp::kSum, .name = "group." + t});
  Check(out.size() == 3, "grouped allreduce returns one tensor per input");
  CheckClose(out[0], AllInputs({3}).sum(0).to(type), "grouped allreduce " + t + " [0]");
  CheckClose(out[1], AllInputs({2, 2}).sum(0), "grouped allreduce " + t + " [1] (float64)");
  CheckClose(out[2], AllInputs({7}).sum(0).to(type), "grouped allreduce " + t + " [2]");
  for (cohort::Compression c : {cohort::Compression::kFloat16, cohort::Compression::kBFloat16}) {
    const std::string what = t + " compression " + std::to_string(static_cast<int>(c));
    at::Tensor r =
        ct::allreduce(Input(ct::rank(), {9}, type),
                      {.op = cohort::ReduceOp::kSum, .name = "cmp." + what, .compression = c});
    CheckClose(r, AllInputs({9}).sum(0).to(type), "allreduce " + what);
    const int64_t rows = ct::size() + 1;
    const std::vector<int64_t> split = ct::detail::EvenSplits(rows, ct::size());
    at::Tensor rs =
        ct::reducescatter(Input(ct::rank(), {rows, 2}, type),
                          {.op = cohort::ReduceOp::kSum, .name = "rs." + what, .compression = c});
    CheckClose(rs,
               AllInputs({rows, 2}).sum(0).to(type).narrow(0, BlockStart(split, ct::rank()),
                                                           split[ct::rank()]),
               "reducescatter " + what);
  }
}

void CheckGatherScatter(at::ScalarType type) {
  const std::string t = TypeName(type);
  const int size = ct::size(), me = ct::rank();
  // allgather: rank r contributes r + 1 rows.
  std::vector<at::Tensor> parts;
  for (int r = 0; r < size; ++r) parts.push_back(Input(r, {r + 1, 3}, type));
  CheckClose(ct::allgather(Input(me, {me + 1, 3}, type), "ag." + t), at::cat(parts),
             "allgather " + t);
  // reducescatter with an uneven even split (2 * size + 1 rows).
  const int64_t rows = 2 * size + 1;
  const std::vector<int64_t> split = ct::detail::EvenSplits(rows, size);
  for (cohort::ReduceOp op : {cohort::ReduceOp::kSum, cohort::ReduceOp::kMax}) {
    at::Tensor block = ct::reducescatter(
        Input(me, {rows, 3}, type), {.op = op, .name = "rs." + t + "." + cohort::ReduceOpName(op)});
    CheckClose(block,
               Reduce(op, AllInputs({rows, 3}), type).narrow(0, BlockStart(split, me), split[me]),
               "reducescatter " + t + " " + cohort::ReduceOpName(op));
  }
  if (c10::isFloatingType(type)) {
    at::Tensor scaled = ct::reducescatter(Input(me, {rows, 3}, type), {.op = cohort::ReduceOp::kSum,
                                                                       .name = "rs_scaled." + t,
                                                                       .prescale_factor = 0.5,
                                                                       .postscale_factor = 4.0});
    CheckClose(
        scaled,
        (AllInputs({rows, 3}).sum(0) * 2).to(type).narrow(0, BlockStart(split, me), split[me]),
        "reducescatter " + t + " scale factors");
  }
  // alltoall: rank q sends (q + p) % 2 + 1 rows to rank p.
  auto splits_of = [&](int q) {
    std::vector<int64_t> s;
    for (int p = 0; p < size; ++p) s.push_back((q + p) % 2 + 1);
    return s;
  };
  std::vector<at::Tensor> expected;
  std::vector<int64_t> expected_counts;
  for (int q = 0; q < size; ++q) {
    const std::vector<int64_t> s = splits_of(q);
    const int64_t total = BlockStart(s, size);
    expected.push_back(Input(q, {total, 2}, type).narrow(0, BlockStart(s, me), s[me]));
    expected_counts.push_back(s[me]);
  }
  const std::vector<int64_t> mine = splits_of(me);
  auto [received, counts] =
      ct::alltoall(Input(me, {BlockStart(mine, size), 2}, type), mine, "a2a." + t);
  CheckClose(received, at::cat(expected), "alltoall " + t);
  CheckClose(counts, at::tensor(expected_counts, at::kLong), "alltoall " + t + " received splits");
  // Without splits: an even split, 2 rows for every rank.
  auto [even, even_counts] = ct::alltoall(Input(me, {2 * size, 2}, type), {}, "a2a_even." + t);
  std::vector<at::Tensor> even_expected;
  for (int q = 0; q < size; ++q)
    even_expected.push_back(Input(q, {2 * size, 2}, type).narrow(0, 2 * me, 2));
  CheckClose(even, at::cat(even_expected), "alltoall " + t + " even split");
  CheckClose(even_counts, at::full({size}, 2, at::kLong), "alltoall " + t + " even received");
}

void CheckBroadcast(at::ScalarType type) {
  const std::string t = TypeName(type);
  const int root = ct::size() - 1;
  const at::Tensor mine = Input(ct::rank(), {3, 4}, type);
  CheckClose(ct::broadcast(mine, root, "bc." + t), Input(root, {3, 4}, type), "broadcast " + t);
  CheckClose(mine, Input(ct::rank(), {3, 4}, type), "broadcast leaves its input alone");
  // In place into a non-contiguous column; the other columns stay.
  at::Tensor matrix = Input(ct::rank(), {3, 4}, type);
  at::Tensor column = matrix.select(1, 2);
  ct::broadcast_(column, root, "bc_." + t);
  at::Tensor expected = Input(ct::rank(), {3, 4}, type);
  expected.select(1, 2).copy_(Input(root, {3, 4}, type).select(1, 2));
  CheckClose(matrix, expected, "broadcast_ into a column of a " + t + " matrix");
}

// Rank r runs r + 1 steps, then joins: step i sums ones over the ranks still active.
void CheckJoin() {
  for (int i = 0; i <= ct::rank(); ++i) {
    at::Tensor ones = at::ones({5}, at::kFloat);
    ct::allreduce_(ones, {.op = cohort::ReduceOp::kSum, .name = "join.step." + std::to_string(i)});
    CheckClose(ones, at::full({5}, static_cast<float>(ct::size() - i)),
               "allreduce with " + std::to_string(i) + " ranks joined");
  }
  const int last = ct::join();
  Check(last == ct::size() - 1, "join returned " + std::to_string(last));
}

// Unnamed calls get matching automatic names because every rank makes them
// in the same order.
void CheckUnnamedAndGroupedInPlace() {
  const int me = ct::rank();
  const at::Tensor input = Input(me, {4}, at::kFloat);
  CheckClose(ct::allreduce(input, {.op = cohort::ReduceOp::kSum}),
             AllInputs({4}).sum(0).to(at::kFloat), "unnamed allreduce");
  CheckClose(ct::allreduce(input), (AllInputs({4}).sum(0) / ct::size()).to(at::kFloat),
             "unnamed allreduce averages by default");
  CheckClose(ct::broadcast(input, 0), Input(0, {4}, at::kFloat), "unnamed broadcast");
  ct::Handle gathered = ct::allgather_async(input);
  std::vector<at::Tensor> parts;
  for (int r = 0; r < ct::size(); ++r) parts.push_back(Input(r, {4}, at::kFloat));
  CheckClose(ct::synchronize(gathered), at::cat(parts), "unnamed allgather_async");
  // In place, one tensor transposed (its result is copied back), mixed dtypes.
  std::vector<at::Tensor> group = {Input(me, {2, 3}, at::kInt).t(), Input(me, {5}, at::kFloat)};
  for (ct::Handle& h : ct::grouped_allreduce_async_(group, {.op = cohort::ReduceOp::kSum})) {
    h.wait();
  }
  CheckClose(group[0], AllInputs({2, 3}).sum(0).to(at::kInt).t(),
             "grouped allreduce_ on a transposed tensor");
  CheckClose(group[1], AllInputs({5}).sum(0).to(at::kFloat), "grouped allreduce_ float32");
}

int RunCollectives() {
  for (at::ScalarType type : kTypes) {
    CheckAllreduce(type);
    CheckGroupedAndCompressed(type);
    CheckGatherScatter(type);
    CheckBroadcast(type);
  }
  CheckUnnamedAndGroupedInPlace();
  ct::barrier();
  CheckJoin();
  if (g_failures == 0) std::printf("collectives ok\n");
  return g_failures;
}

int RunErrors() {
  using Code = cohort::Status::Code;
  for (at::ScalarType bad : {at::kComplexFloat, at::kComplexDouble}) {
    const std::string want = "dtype " + TypeName(bad) + " is not supported";
    at::Tensor t = at::zeros({4}, bad);
    ExpectError([&] { ct::allreduce(t, {.name = "bad"}); }, Code::kInvalidArgument,
                "allreduce of tensor 'bad': " + want, "allreduce " + TypeName(bad));
    ExpectError([&] { ct::broadcast_(t, 0, "bad"); }, Code::kInvalidArgument, want, "broadcast_");
    ExpectError([&] { ct::allgather(t, "bad"); }, Code::kInvalidArgument, want, "allgather");
    ExpectError([&] { ct::alltoall(t, {}, "bad"); }, Code::kInvalidArgument, want, "alltoall");
    ExpectError([&] { ct::reducescatter(t, {.name = "bad"}); }, Code::kInvalidArgument, want,
                "reducescatter");
  }
  at::Tensor meta = at::empty({4}, at::TensorOptions().device(at::kMeta).dtype(at::kFloat));
  ExpectError([&] { ct::allreduce_(meta, {.name = "m"}); }, Code::kInvalidArgument,
              "allreduce of tensor 'm': must be a CPU tensor, got one on device meta",
              "non-CPU tensor");
  ExpectError([&] { ct::allreduce(at::Tensor(), {.name = "u"}); }, Code::kInvalidArgument,
              "the tensor is undefined", "undefined tensor");
  ExpectError([&] { ct::allgather(at::ones(at::IntArrayRef{}), "scalar"); }, Code::kInvalidArgument,
              "needs at least one dimension", "0-d allgather");
  ExpectError(
      [&] { ct::reducescatter(at::ones({4}, at::kInt), {.name = "s", .prescale_factor = 2}); },
      Code::kInvalidArgument, "prescale/postscale factors need a floating-point tensor",
      "scaled integer reducescatter");
  ExpectError(
      [&] {
        ct::alltoall(at::ones({4}), {1, 1, 1, 1, 1}, "splits");
      },
      Code::kInvalidArgument, "splits for " + std::to_string(ct::size()) + " ranks",
      "alltoall with too many splits");
  // Disagreements between ranks fail on every rank, naming each rank's value.
  const int me = ct::rank();
  ExpectError([&] { ct::allreduce(at::ones({me + 1}), {.name = "shape"}); }, Code::kMismatch,
              "ranks disagree on the shape", "shape mismatch");
  ExpectError(
      [&] { ct::allreduce(at::ones({2}, me == 0 ? at::kFloat : at::kDouble), {.name = "dt"}); },
      Code::kMismatch, "ranks disagree on the data type", "dtype mismatch");
  ExpectError([&] { ct::broadcast(at::ones({2}), me, "root"); }, Code::kMismatch,
              "ranks disagree on the root", "root mismatch");
  ExpectError(
      [&] {
        ct::allgather(at::ones({2, me + 1}), "tail");
      },
      Code::kMismatch, "ranks disagree on the shape beyond the first dimension",
      "allgather tail mismatch");
  // The runtime carries on after all of that.
  CheckClose(ct::allreduce(at::ones({3}), {.op = cohort::ReduceOp::kSum, .name = "after"}),
             at::full({3}, static_cast<float>(ct::size())), "allreduce after the errors");
  if (g_failures == 0) std::printf("errors ok\n");
  return g_failures;
}

// ---- DistributedOptimizer ----

struct NetImpl : ::torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", ::torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", ::torch::nn::Linear(16, 3))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2(::torch::relu(fc1(x))); }
  ::torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

constexpr int kGlobalBatch = 12;  // divisible by 1, 2 and 3 ranks
constexpr int kSteps = 8;

// The global batch of step `step`: the same on every rank.
std::pair<at::Tensor, at::Tensor> GlobalBatch(int step) {
  ::torch::manual_seed(1000 + step);
  return {::torch::randn({kGlobalBatch, 8}), ::torch::randint(0, 3, {kGlobalBatch}, at::kLong)};
}

Net SeededNet(int seed) {
  ::torch::manual_seed(seed);
  return Net();
}

double MaxDifference(Net& a, Net& b) {
  double worst = 0;
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  }
  return worst;
}

// One process on the global batch, the reference.
Net TrainReference() {
  Net net = SeededNet(200);  // rank 0's initial weights in TrainDistributed
  ::torch::optim::SGD sgd(net->parameters(), ::torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = GlobalBatch(step);
    sgd.zero_grad();
    ::torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    sgd.step();
  }
  return net;
}

// Each rank on its shard of the global batch, in `passes` micro-batches.
Net TrainDistributed(int passes) {
  Net net = SeededNet(200 + ct::rank());  // different everywhere until the broadcast
  ct::broadcast_parameters(*net, 0);
  Net root = SeededNet(200);
  Check(MaxDifference(net, root) == 0, "broadcast_parameters copies rank 0's weights");
  ::torch::optim::SGD sgd(net->parameters(), ::torch::optim::SGDOptions(0.1).momentum(0.9));
  ct::DistributedOptimizer opt(
      sgd, net->named_parameters(),
      {.backward_passes_per_step = passes, .name_prefix = "dp" + std::to_string(passes)});
  const int64_t shard = kGlobalBatch / ct::size(), micro = shard / passes;
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = GlobalBatch(step);
    opt.zero_grad();
    for (int p = 0; p < passes; ++p) {
      const int64_t start = ct::rank() * shard + p * micro;
      at::Tensor loss = ::torch::nn::functional::cross_entropy(
          net->forward(x.narrow(0, start, micro)), y.narrow(0, start, micro));
      (loss / passes).backward();
    }
    // The hooks started every gradient's reduction during backward.
    Check(opt.started_reductions() == net->parameters().size(),
          "reductions started by backward: " + std::to_string(opt.started_reductions()));
    opt.step();
  }
  return net;
}

// No names: the optimizer calls its parameters "group<g>.param<i>".
::torch::OrderedDict<std::string, at::Tensor> Unnamed() {
  return ::torch::OrderedDict<std::string, at::Tensor>();
}

// A parameter that only rank 0 uses: the others reduce zeros for it.
void CheckUnusedParameter() {
  at::Tensor used = ::torch::ones({4}, ::torch::requires_grad());
  at::Tensor partly = ::torch::ones({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({used, partly}, ::torch::optim::SGDOptions(1.0));
  ct::DistributedOptimizer opt(sgd, Unnamed(), {.name_prefix = "unused"});
  at::Tensor loss = (used * (ct::rank() + 1)).sum();
  if (ct::rank() == 0) loss = loss + partly.sum();
  loss.backward();
  opt.synchronize();
  double mean_factor = 0;
  for (int r = 0; r < ct::size(); ++r) mean_factor += r + 1;
  CheckClose(used.grad(), at::full({4}, static_cast<float>(mean_factor / ct::size())),
             "averaged gradient");
  CheckClose(partly.grad(), at::full({3}, 1.0f / ct::size()),
             "gradient of a parameter only rank 0 uses");
}

// A second backward pass before step() is one more than
// backward_passes_per_step allows. (Its gradient lands in a buffer whose
// reduction is in flight, so only the error is checked, not the values.)
void CheckTooManyBackwardPasses() {
  at::Tensor w = ::torch::ones({4}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  ct::DistributedOptimizer opt(sgd, Unnamed(), {.name_prefix = "twice"});
  (w * 2).sum().backward();
  try {
    (w * 3).sum().backward();
    Check(false, "a second backward pass before step() throws");
  } catch (const std::exception& e) {
    Check(std::string(e.what()).find("gradient of 'twice.group0.param0' was computed more than 1 "
                                     "time(s) before step()") != std::string::npos,
          std::string("too many backward passes: ") + e.what());
  }
  opt.synchronize();
}

// Rank 0 has trained a few steps (momentum buffers exist, a learning rate
// was changed); the others have fresh optimizers on the same weights. After
// broadcast_optimizer_state one more identical step gives identical weights
// everywhere, which it would not without the momentum.
void CheckBroadcastOptimizerState() {
  Net net = SeededNet(300);
  ::torch::optim::SGD sgd(net->parameters(), ::torch::optim::SGDOptions(0.1).momentum(0.9));
  if (ct::rank() == 0) {
    for (int step = 0; step < 3; ++step) {
      auto [x, y] = GlobalBatch(step);
      sgd.zero_grad();
      ::torch::nn::functional::cross_entropy(net->forward(x), y).backward();
      sgd.step();
    }
    static_cast<::torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).lr(0.05);
  }
  ct::broadcast_parameters(*net, 0);
  ct::broadcast_optimizer_state(sgd, 0);
  const auto& options =
      static_cast<const ::torch::optim::SGDOptions&>(sgd.param_groups()[0].options());
  Check(options.lr() == 0.05, "learning rate after the broadcast: " + std::to_string(options.lr()));
  Check(sgd.state().size() == net->parameters().size(),
        "optimizer state entries after the broadcast: " + std::to_string(sgd.state().size()));
  auto [x, y] = GlobalBatch(99);
  sgd.zero_grad();
  ::torch::nn::functional::cross_entropy(net->forward(x), y).backward();
  sgd.step();
  for (const auto& item : net->named_parameters()) {
    at::Tensor root = item.value().detach().clone();
    ct::broadcast_(root, 0, "optimizer_state.check." + item.key());
    CheckClose(item.value().detach(), root, item.key() + " after a step from the broadcast state");
  }
}

int RunOptimizer() {
  Net reference = TrainReference();
  for (int passes : {1, 2}) {
    Net distributed = TrainDistributed(passes);
    const double diff = MaxDifference(reference, distributed);
    Check(diff < 1e-5, "weights differ from one process on the global batch by " +
                           std::to_string(diff) + " (" + std::to_string(passes) + " passes)");
    std::printf("passes %d: max weight difference %.3g\n", passes, diff);
  }
  CheckUnusedParameter();
  CheckTooManyBackwardPasses();
  CheckBroadcastOptimizerState();
  if (g_failures == 0) std::printf("optimizer ok\n");
  return g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: torch_worker collectives|errors|optimizer\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    ct::init();
    int failures = mode == "collectives" ? RunCollectives()
                   : mode == "errors"    ? RunErrors()
                   : mode == "optimizer" ? RunOptimizer()
                                         : -1;
    if (failures < 0) std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    ct::shutdown();
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", ct::rank(), e.what());
    return 1;
  }
}
