// Worker program for the engine's multi-process tests (run under
// `cohort run -np N`). Each mode checks the asynchronous named operations and
// exits 0 only when every result and every error is what it must be.
//
//   engine_worker random [count]  `count` tensors of mixed sizes and dtypes,
//                                 submitted in a different random order on each
//                                 rank from two threads; exact sums
//   engine_worker mismatch        dtype, shape, op, root and duplicate-name
//                                 errors name the ranks; other tensors complete
//   engine_worker allgather       ranks contribute different first dimensions
//   engine_worker grouped         a grouped allreduce
//   engine_worker sync            blocking calls after the engine started
//   engine_worker scatter         reduce-scatter and alltoall with splits
//   engine_worker autotune STEPS  STEPS training-like steps over the same 12
//                                 float tensors (1 K to 1 M elements), exact
//                                 sums every step while COHORT_AUTOTUNE changes
//                                 fusion and algorithm cut-overs
//   engine_worker steps           repeated steps over the same names (response
//                                 cache hits), then changed shapes and names
//   engine_worker join            uneven step counts: rank r runs 3(r+1) steps,
//                                 then joins; sums and mins see only the active
//                                 ranks; Join returns the last rank
//   engine_worker unmatched       a name rank 1 never submits fails at shutdown
//   engine_worker lagging         rank 0 submits each round's second tensor
//                                 only after its first completed, the others
//                                 submit both at once; prints the median time
//                                 rank 0 waited for the second (run it with a
//                                 long COHORT_CYCLE_TIME: the others must not
//                                 idle a cycle before answering)
//   engine_worker stall FIFO      a name rank 1 holds back is reported, then
//                                 failed as stalled (short COHORT_STALL_* times)
//   engine_worker timeline PATH   StartTimeline(PATH), tensors "traced.*", then
//                                 StopTimeline and tensors "untraced.*"
//   engine_worker compression     float16/bfloat16 compression, blocking and
//                                 asynchronous, and a compression mismatch
//   engine_worker die             the last rank dies mid-step; the others'
//                                 pending handles fail naming it
//   engine_worker early_shutdown  the last rank shuts down at once; a tensor the
//                                 others then wait for fails naming it
//   engine_worker restart         the last rank shuts down and starts again at
//                                 once; the others' waiting tensor fails naming
//                                 it, their next Init starts a new runtime, and
//                                 an allreduce of every rank completes
//   engine_worker deadlock        rank 0 waits for a tensor only it submitted,
//                                 the others for one only they submitted: all
//                                 fail naming who waits for what (run with a
//                                 short COHORT_DEADLOCK_TIME), then Init again
//                                 and an allreduce of every rank completes
//   engine_worker process_sets    two disjoint halves and an overlapping pair
//                                 {0, n-1} run every kind of collective at the
//                                 same time as the whole job, with the same
//                                 names; errors for non-members, unknown and
//                                 removed sets, mismatches name job ranks
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cohort/cohort.h"
#include "common/value_convert.h"

namespace cohort {
namespace {

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", Rank(), what.c_str());
    ++g_failures;
  }
}

struct Tensor {
  std::string name;
  DataType type;
  std::vector<unsigned char> data;
  size_t count;
  Handle handle = 0;
};

// Tensor i has (i * 37) % 5000 + 1 elements; element j on rank r is
// (r + i + j) % 7, so the sum over ranks is exact in every type.
std::vector<Tensor> MakeTensors(int count) {
  const DataType types[] = {DataType::kFloat32, DataType::kFloat64,  DataType::kInt32,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kInt64};
  std::vector<Tensor> tensors(count);
  for (int i = 0; i < count; ++i) {
    Tensor& t = tensors[i];
    t.name = "grad." + std::to_string(i);
    t.type = types[i % 6];
    t.count = static_cast<size_t>((i * 37) % 5000 + 1);
    t.data.resize(t.count * DataTypeSize(t.type));
    for (size_t j = 0; j < t.count; ++j) {
      StoreAs(t.type, static_cast<double>((Rank() + i + j) % 7), &t.data[j * DataTypeSize(t.type)]);
    }
  }
  return tensors;
}

int RunRandom(int count) {
  std::vector<Tensor> tensors = MakeTensors(count);
  std::vector<int> order(count);
  for (int i = 0; i < count; ++i) order[i] = i;
  std::mt19937 rng(1234 + Rank());
  std::shuffle(order.begin(), order.end(), rng);
  // Two submitting threads, each taking every other tensor of the shuffled order.
  auto submit = [&](int parity) {
    for (size_t k = parity; k < order.size(); k += 2) {
      Tensor& t = tensors[order[k]];
      Result<Handle> h = AllreduceAsync(t.name, t.data.data(), t.data.data(),
                                        {static_cast<int64_t>(t.count)}, t.type);
      Check(h.ok(), "submit " + t.name + ": " + h.status().ToString());
      if (h.ok()) t.handle = *h;
    }
  };
  std::thread other(submit, 1);
  submit(0);
  other.join();
  const int n = Size();
  for (int i = 0; i < count; ++i) {
    Tensor& t = tensors[i];
    Status s = Wait(t.handle);
    Check(s.ok(), "wait " + t.name + ": " + s.ToString());
    Release(t.handle);
    for (size_t j = 0; j < t.count && s.ok(); ++j) {
      double want = 0;
      for (int r = 0; r < n; ++r) want += static_cast<double>((r + i + j) % 7);
      const double got = LoadAs(t.type, &t.data[j * DataTypeSize(t.type)]);
      if (got != want) {
        Check(false, t.name + "[" + std::to_string(j) + "] = " + std::to_string(got) +
                         ", expected " + std::to_string(want));
        break;
      }
    }
  }
  if (g_failures == 0) std::printf("rank %d: %d tensors exact\n", Rank(), count);
  return g_failures == 0 ? 0 : 1;
}

// Expects `h` to fail with a kMismatch whose message contains every part.
void ExpectMismatch(const Result<Handle>& h, const std::vector<std::string>& parts) {
  if (!h.ok()) return Check(false, "submit failed: " + h.status().ToString());
  Status s = Wait(*h);
  std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
  Check(s.code() == Status::Code::kMismatch, "expected a mismatch, got " + s.ToString());
  for (const std::string& p : parts) {
    Check(s.message().find(p) != std::string::npos, "message lacks '" + p + "': " + s.message());
  }
  Release(*h);
}

int RunMismatch() {
  const bool odd = Rank() == 1;
  std::vector<float> a(8, 1), b(odd ? 9 : 8, 1), c(8, 1), d(8, 1), ok(8, 1);
  std::vector<uint16_t> a16(8, 0);
  // dtype: rank 1 sends float16.
  ExpectMismatch(odd ? AllreduceAsync("a", a16.data(), a16.data(), {8}, DataType::kFloat16)
                     : AllreduceAsync("a", a.data(), a.data(), {8}, DataType::kFloat32),
                 {"tensor 'a'", "data type", "rank 1: float16", "float32"});
  ExpectMismatch(
      AllreduceAsync("b", b.data(), b.data(), {static_cast<int64_t>(b.size())}, DataType::kFloat32),
      {"tensor 'b'", "shape", "rank 1: [9]", "[8]"});
  ExpectMismatch(AllreduceAsync("c", c.data(), c.data(), {8}, DataType::kFloat32,
                                AllreduceOptions{odd ? ReduceOp::kMax : ReduceOp::kSum}),
                 {"tensor 'c'", "reduce op", "rank 1: max"});
  ExpectMismatch(BroadcastAsync("d", d.data(), {8}, DataType::kFloat32, odd ? 1 : 0),
                 {"tensor 'd'", "root", "rank 1: 1"});
  // A name already in flight is refused at once on the submitting rank. The
  // others submit "ok" only after rank 0 has tried twice (the barrier), so
  // the first submission cannot have completed yet.
  Result<Handle> first = Status::Internal("not submitted");
  if (Rank() == 0) {
    first = AllreduceAsync("ok", ok.data(), ok.data(), {8}, DataType::kFloat32);
    Result<Handle> again = AllreduceAsync("ok", ok.data(), ok.data(), {8}, DataType::kFloat32);
    Check(!again.ok() && again.status().message().find("already in flight") != std::string::npos,
          "duplicate name: " + again.status().ToString());
    Check(Barrier().ok(), "barrier");
  } else {
    Check(Barrier().ok(), "barrier");
    first = AllreduceAsync("ok", ok.data(), ok.data(), {8}, DataType::kFloat32);
  }
  Check(first.ok() && Wait(*first).ok(), "the valid tensor still completes");
  Check(ok[0] == static_cast<float>(Size()), "the valid tensor is right");
  return g_failures == 0 ? 0 : 1;
}

int RunAllgather() {
  const int r = Rank(), n = Size();
  const int64_t rows = r + 1, cols = 3;
  std::vector<int32_t> mine(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) mine[i] = static_cast<int32_t>(100 * r + i);
  Result<Handle> h = AllgatherAsync("gather", mine.data(), {rows, cols}, DataType::kInt32);
  Check(h.ok() && Wait(*h).ok(), "allgather completes");
  TensorResult result;
  Check(TakeResult(*h, &result).ok(), "take result");
  Release(*h);
  const std::vector<unsigned char>& data = result.data;
  const Shape& shape = result.shape;
  const int64_t total_rows = static_cast<int64_t>(n) * (n + 1) / 2;
  Check(shape == Shape({total_rows, cols}), "result shape");
  std::vector<int32_t> got(data.size() / 4);
  std::memcpy(got.data(), data.data(), data.size());
  size_t at = 0;
  for (int p = 0; p < n; ++p) {
    for (int64_t i = 0; i < (p + 1) * cols; ++i) {
      Check(got[at++] == 100 * p + i, "allgather element");
    }
  }
  // All but the first dimension must agree.
  std::vector<int32_t> bad(r == 0 ? 4 : 3, 0);
  Result<Handle> wrong =
      AllgatherAsync("gather.bad", bad.data(), {1, r == 0 ? 4 : 3}, DataType::kInt32);
  Check(wrong.ok() && Wait(*wrong).code() == Status::Code::kMismatch, "allgather shape mismatch");
  if (g_failures == 0) std::printf("rank %d: allgather ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunGrouped() {
  std::vector<std::vector<double>> bufs(5);
  std::vector<std::string> names;
  std::vector<const void*> sends;
  std::vector<void*> recvs;
  std::vector<Shape> shapes;
  for (int i = 0; i < 5; ++i) {
    bufs[i].assign(10 + i, Rank() + i);
    names.push_back("group." + std::to_string(i));
    sends.push_back(bufs[i].data());
    recvs.push_back(bufs[i].data());
    shapes.push_back({static_cast<int64_t>(bufs[i].size())});
  }
  Result<std::vector<Handle>> hs = GroupedAllreduceAsync(
      names, sends, recvs, shapes, DataType::kFloat64, AllreduceOptions{ReduceOp::kAverage});
  Check(hs.ok(), "grouped submit");
  const int n = Size();
  for (int i = 0; i < 5 && hs.ok(); ++i) {
    Check(Wait((*hs)[i]).ok(), "grouped wait");
    Check(bufs[i].back() == (n - 1) / 2.0 + i, "grouped average");
  }
  if (g_failures == 0) std::printf("rank %d: grouped ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunSync() {
  float x = 1;
  Result<Handle> h = AllreduceAsync("start", &x, &x, {1}, DataType::kFloat32);
  Check(h.ok() && Wait(*h).ok(), "engine started");
  std::vector<int64_t> v(1000, Rank());
  Check(Allreduce(v.data(), v.data(), v.size(), DataType::kInt64).ok(), "blocking allreduce");
  Check(v[999] == static_cast<int64_t>(Size()) * (Size() - 1) / 2, "blocking allreduce value");
  int32_t root_value = Rank() == 0 ? 42 : 0;
  Check(Broadcast(&root_value, 1, DataType::kInt32, 0).ok() && root_value == 42, "broadcast");
  Check(Barrier().ok(), "barrier");
  Result<std::vector<size_t>> counts = AllgatherCounts(Rank() * 2);
  Check(counts.ok() && (*counts)[Size() - 1] == static_cast<size_t>(2 * (Size() - 1)), "counts");
  // Reduce-scatter, alltoall and its counts run through the engine too.
  const int n = Size(), me = Rank();
  std::vector<int64_t> parts(n);
  for (int p = 0; p < n; ++p) parts[p] = 10 * me + p;
  std::vector<size_t> ones(n, 1);
  int64_t mine = -1;
  Check(ReduceScatter(parts.data(), &mine, ones.data(), DataType::kInt64, ReduceOp::kSum).ok(),
        "blocking reducescatter");
  Check(mine == 10 * static_cast<int64_t>(n) * (n - 1) / 2 + static_cast<int64_t>(n) * me,
        "reducescatter value");
  std::vector<size_t> send_counts(n), expected(n);
  for (int p = 0; p < n; ++p) send_counts[p] = static_cast<size_t>(p + me + 1);
  Result<std::vector<size_t>> recv_counts = AlltoallCounts(send_counts.data());
  Check(recv_counts.ok(), "alltoall counts");
  size_t send_total = 0, recv_total = 0;
  for (int p = 0; p < n; ++p) {
    send_total += send_counts[p];
    recv_total += (*recv_counts)[p];
    Check((*recv_counts)[p] == static_cast<size_t>(me + p + 1), "alltoall count value");
  }
  std::vector<int32_t> out(send_total, me), in(recv_total, -1);
  Check(Alltoall(out.data(), send_counts.data(), in.data(), recv_counts->data(), DataType::kInt32)
            .ok(),
        "blocking alltoall");
  Check(in.back() == n - 1 && in.front() == 0, "alltoall values come from each rank in order");
  if (g_failures == 0) std::printf("rank %d: sync ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

// Step s submits tensors "w.i" (i < 40, plus "extra.i" from step 4 on), in a
// rank-dependent order; from step 3 on, w.0..w.9 change length. Every sum exact.
int RunSteps() {
  const int n = Size(), me = Rank();
  for (int step = 0; step < 6; ++step) {
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) names.push_back("w." + std::to_string(i));
    if (step >= 4) {
      for (int i = 0; i < 10; ++i) names.push_back("extra." + std::to_string(i));
    }
    std::mt19937 rng(step * 100 + me);
    std::shuffle(names.begin(), names.end(), rng);
    std::vector<std::vector<int32_t>> bufs(names.size());
    std::vector<Handle> hs;
    for (size_t k = 0; k < names.size(); ++k) {
      const bool grown = step >= 3 && names[k].size() == 3 && names[k][0] == 'w';  // w.0 .. w.9
      bufs[k].assign(grown ? 64 : 32, me + step);
      Result<Handle> h = AllreduceAsync(names[k], bufs[k].data(), bufs[k].data(),
                                        {static_cast<int64_t>(bufs[k].size())}, DataType::kInt32);
      Check(h.ok(), "submit " + names[k]);
      if (h.ok()) hs.push_back(*h);
    }
    for (Handle h : hs) Check(Wait(h).ok(), "step completes");
    const int32_t want = n * (n - 1) / 2 + n * step;
    for (size_t k = 0; k < names.size(); ++k) {
      Check(bufs[k].back() == want, "step " + std::to_string(step) + " " + names[k]);
    }
  }
  if (g_failures == 0) std::printf("rank %d: steps ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunAutotune(int steps) {
  const int n = Size(), me = Rank();
  // Sizes on both sides of every tuned cut-over (small-message, single-copy)
  // and enough bytes for fusion thresholds to split differently.
  const int64_t sizes[] = {1024, 4096,  16384, 65536,  262144, 1 << 20,
                           3000, 12000, 50000, 200000, 700000, 100};
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<float>> bufs;
    std::vector<Handle> hs;
    for (int i = 0; i < 12; ++i) {
      // Small integers: float sums are exact in any order.
      bufs.emplace_back(sizes[i], static_cast<float>(me + i + step % 7));
      Result<Handle> h = AllreduceAsync("grad." + std::to_string(i), bufs.back().data(),
                                        bufs.back().data(), {sizes[i]}, DataType::kFloat32);
      Check(h.ok(), "submit grad." + std::to_string(i));
      if (h.ok()) hs.push_back(*h);
    }
    for (Handle h : hs) Check(Wait(h).ok(), "step completes");
    for (int i = 0; i < 12; ++i) {
      const float want = static_cast<float>(n * (n - 1) / 2 + n * (i + step % 7));
      Check(bufs[i].front() == want && bufs[i].back() == want,
            "step " + std::to_string(step) + " grad." + std::to_string(i));
    }
  }
  if (g_failures == 0) std::printf("rank %d: autotune steps exact\n", me);
  return g_failures == 0 ? 0 : 1;
}

int RunLagging() {
  const int n = Size(), me = Rank();
  std::vector<double> waited_ms;
  for (int round = 0; round < 9; ++round) {
    const std::string suffix = "." + std::to_string(round);
    int32_t first = me, second = me;
    Result<Handle> a = AllreduceAsync("first" + suffix, &first, &first, {1}, DataType::kInt32);
    Check(a.ok(), "submit first");
    if (me == 0 && a.ok()) Check(Wait(*a).ok(), "first completes");
    const auto start = std::chrono::steady_clock::now();
    Result<Handle> b = AllreduceAsync("second" + suffix, &second, &second, {1}, DataType::kInt32);
    Check(b.ok() && Wait(*b).ok(), "second completes");
    waited_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (me != 0 && a.ok()) Check(Wait(*a).ok(), "first completes");
    Check(first == n * (n - 1) / 2 && second == n * (n - 1) / 2, "sums");
  }
  std::sort(waited_ms.begin(), waited_ms.end());
  if (me == 0) std::printf("rank 0: median wait %.1f ms\n", waited_ms[waited_ms.size() / 2]);
  if (g_failures == 0) std::printf("rank %d: lagging ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunScatter() {
  const int n = Size(), me = Rank();
  // Reduce-scatter with an even split of 2n+1 rows of 3: rank 0 gets 3 rows.
  const int64_t rows = 2 * n + 1, cols = 3;
  std::vector<float> x(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i + me);
  Result<Handle> h =
      ReduceScatterAsync("rs", x.data(), {rows, cols}, DataType::kFloat32, ReduceOp::kSum);
  TensorResult rs;
  Check(h.ok() && Wait(*h).ok() && TakeResult(*h, &rs).ok(), "reducescatter completes");
  const int64_t my_rows = rows / n + (me < rows % n ? 1 : 0);
  int64_t first_row = 0;
  for (int p = 0; p < me; ++p) first_row += rows / n + (p < rows % n ? 1 : 0);
  Check(rs.shape == Shape({my_rows, cols}), "reducescatter shape");
  std::vector<float> got(rs.data.size() / 4);
  std::memcpy(got.data(), rs.data.data(), rs.data.size());
  for (int64_t i = 0; i < my_rows * cols; ++i) {
    const int64_t e = first_row * cols + i;
    Check(got[i] == static_cast<float>(n * e + n * (n - 1) / 2), "reducescatter value");
  }
  // The same with scale factors: (sum of 0.5 * x) * 4, exact in float32.
  Result<Handle> hs = ReduceScatterAsync("rs.scaled", x.data(), {rows, cols}, DataType::kFloat32,
                                         ReduceOp::kSum, {}, nullptr, kGlobalProcessSet, 0.5, 4.0);
  TensorResult scaled;
  Check(hs.ok() && Wait(*hs).ok() && TakeResult(*hs, &scaled).ok(), "scaled reducescatter");
  std::vector<float> got_scaled(scaled.data.size() / 4);
  if (!got_scaled.empty()) std::memcpy(got_scaled.data(), scaled.data.data(), scaled.data.size());
  for (size_t i = 0; i < got_scaled.size(); ++i) {
    Check(got_scaled[i] == 2 * got[i], "scaled reducescatter value");
  }
  // Alltoall: rank me sends p + 1 rows of 2 to rank p, each row [me, p].
  std::vector<int64_t> splits(n);
  std::vector<int32_t> send;
  for (int p = 0; p < n; ++p) {
    splits[p] = p + 1;
    for (int k = 0; k <= p; ++k) {
      send.push_back(me);
      send.push_back(p);
    }
  }
  const int64_t sent_rows = static_cast<int64_t>(send.size() / 2);
  Result<Handle> a = AlltoallAsync("a2a", send.data(), {sent_rows, 2}, DataType::kInt32, splits);
  TensorResult at;
  Check(a.ok() && Wait(*a).ok() && TakeResult(*a, &at).ok(), "alltoall completes");
  Check(at.received_splits == std::vector<int64_t>(n, me + 1), "received splits");
  Check(at.shape == Shape({static_cast<int64_t>(n) * (me + 1), 2}), "alltoall shape");
  std::vector<int32_t> recv(at.data.size() / 4);
  std::memcpy(recv.data(), at.data.data(), at.data.size());
  for (size_t row = 0; row < recv.size() / 2; ++row) {
    Check(recv[2 * row] == static_cast<int32_t>(row / (me + 1)) && recv[2 * row + 1] == me,
          "alltoall row");
  }
  // Local argument errors come back at once.
  Result<Handle> bad = AlltoallAsync("bad", send.data(), {sent_rows, 2}, DataType::kInt32, {1});
  Check(!bad.ok() && bad.status().message().find("splits for") != std::string::npos,
        "wrong number of splits: " + bad.status().ToString());
  if (g_failures == 0) std::printf("rank %d: scatter ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunJoin() {
  const int n = Size(), me = Rank();
  const int steps = 3 * (me + 1);
  for (int k = 0; k < steps; ++k) {
    std::vector<float> ones(100, 1.0f);
    float mine = static_cast<float>(me + 1);
    Result<Handle> sum = AllreduceAsync("sum." + std::to_string(k), ones.data(), ones.data(), {100},
                                        DataType::kFloat32);
    Result<Handle> min = AllreduceAsync("min." + std::to_string(k), &mine, &mine, {1},
                                        DataType::kFloat32, AllreduceOptions{ReduceOp::kMin});
    Check(sum.ok() && min.ok() && Wait(*sum).ok() && Wait(*min).ok(), "step completes");
    const int active = n - k / 3;  // ranks r with 3(r+1) > k
    Check(ones[99] == static_cast<float>(active),
          "step " + std::to_string(k) + " sum over " + std::to_string(active) + " active ranks");
    Check(mine == static_cast<float>(k / 3 + 1), "step " + std::to_string(k) + " min");
  }
  Result<int> last = Join();
  Check(last.ok() && *last == n - 1,
        "join returns the last rank: " +
            (last.ok() ? std::to_string(*last) : last.status().ToString()));
  // After everyone joined, normal operation resumes.
  float x = 1;
  Result<Handle> after = AllreduceAsync("after", &x, &x, {1}, DataType::kFloat32);
  Check(after.ok() && Wait(*after).ok() && x == static_cast<float>(n), "allreduce after join");
  if (g_failures == 0) std::printf("rank %d: join ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunUnmatched() {
  const int rank = Rank();
  float x = 1, y = 1;
  Status lonely_status = Status::Internal("lonely never completed");
  if (rank != 1) {
    Result<Handle> h = AllreduceAsync("lonely", &x, &x, {1}, DataType::kFloat32, {},
                                      [&](const Status& s) { lonely_status = s; });
    Check(h.ok(), "submit lonely");
  }
  Result<Handle> both = AllreduceAsync("both", &y, &y, {1}, DataType::kFloat32);
  Check(both.ok() && Wait(*both).ok(), "matched tensor completes");
  Shutdown();  // collective: ends the engine on every rank, completing what is left
  if (rank != 1) {
    std::printf("rank %d: %s\n", rank, lonely_status.ToString().c_str());
    Check(lonely_status.message().find("never submitted by rank 1 (host") != std::string::npos,
          "the unmatched tensor names the missing rank");
  }
  return g_failures == 0 ? 0 : 1;
}

int RunStall(const char* fifo) {
  float a = 1, b = 1;
  Result<Handle> both = AllreduceAsync("both", &a, &a, {1}, DataType::kFloat32);
  Check(both.ok() && Wait(*both).ok(), "engine started");
  if (Rank() != 1) {
    Result<Handle> late = AllreduceAsync("late", &b, &b, {1}, DataType::kFloat32);
    Status s = late.ok() ? Wait(*late, 30) : late.status();
    std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
    Check(s.code() == Status::Code::kTimeout, "stalled tensor times out");
    Check(s.message().find("stalled: rank 1 (host") != std::string::npos, "names rank 1");
  }
  // Rank 1 stays until the others have seen the stall (a byte each through
  // the FIFO the test made): a rank that shuts down fails at once what waits
  // for it, which is not what is tested here.
  // Rank 1 also holds a write end, so its reads wait for both bytes, never EOF.
  const int fd = ::open(fifo, Rank() == 1 ? O_RDWR : O_WRONLY);
  Check(fd >= 0, std::string("open ") + fifo);
  char byte = 's';
  for (int i = 0; i < (Rank() == 1 ? Size() - 1 : 1); ++i) {
    const ssize_t n = Rank() == 1 ? ::read(fd, &byte, 1) : ::write(fd, &byte, 1);
    Check(n == 1, "FIFO byte");
  }
  ::close(fd);
  return g_failures == 0 ? 0 : 1;
}

int RunTimeline(const std::string& path) {
  Check(StartTimeline(path).ok(), "start timeline");
  std::vector<std::vector<float>> bufs(20, std::vector<float>(100, 1.0f));
  std::vector<Handle> hs;
  for (int i = 0; i < 20; ++i) {
    const std::string name = (i < 10 ? "traced." : "untraced.") + std::to_string(i);
    if (i == 10) {
      for (Handle h : hs) Check(Wait(h).ok(), "traced tensors complete");
      Check(StopTimeline().ok(), "stop timeline");
    }
    Result<Handle> h =
        AllreduceAsync(name, bufs[i].data(), bufs[i].data(), {100}, DataType::kFloat32);
    Check(h.ok(), "submit");
    hs.push_back(*h);
  }
  for (Handle h : hs) Check(Wait(h).ok(), "tensors complete");
  return g_failures == 0 ? 0 : 1;
}

// 1 + 2^-13 survives float32 but rounds to 1 in float16; 1 + 2^-10 rounds to
// 1 in bfloat16: a compressed sum shows it, an uncompressed one does not.
int RunCompression() {
  const int n = Size();
  const float fine16 = 1.0f + 1.0f / 8192, fine_bf16 = 1.0f + 1.0f / 1024;
  auto run_blocking = [&](float value, Compression c) {
    std::vector<float> v(33, value);
    Check(Allreduce(v.data(), v.data(), v.size(), DataType::kFloat32,
                    AllreduceOptions{ReduceOp::kSum, 1, 1, c})
              .ok(),
          "blocking compressed allreduce");
    return v[32];
  };
  // Before the engine starts: the collectives' own path.
  Check(run_blocking(fine16, Compression::kFloat16) == static_cast<float>(n), "fp16 blocking");
  Check(run_blocking(fine_bf16, Compression::kBFloat16) == static_cast<float>(n), "bf16 blocking");
  Check(run_blocking(fine16, Compression::kNone) == n * fine16, "uncompressed keeps the bits");
  // Through the engine, fused and alone.
  std::vector<std::vector<float>> bufs(4, std::vector<float>(1000, fine16));
  bufs[3].assign(100000, fine16);  // above COHORT_FUSION_MAX_TENSOR: reduced alone
  std::vector<Handle> hs;
  for (int i = 0; i < 4; ++i) {
    Result<Handle> h =
        AllreduceAsync("c" + std::to_string(i), bufs[i].data(), bufs[i].data(),
                       {static_cast<int64_t>(bufs[i].size())}, DataType::kFloat32,
                       AllreduceOptions{ReduceOp::kSum, 1, 1, Compression::kFloat16});
    Check(h.ok(), "submit compressed");
    hs.push_back(*h);
  }
  for (int i = 0; i < 4; ++i) {
    Check(Wait(hs[i]).ok(), "compressed completes");
    Check(bufs[i].back() == static_cast<float>(n), "engine fp16 result");
  }
  float x = 1;
  Result<Handle> mixed =
      AllreduceAsync("mixed", &x, &x, {1}, DataType::kFloat32,
                     AllreduceOptions{ReduceOp::kSum, 1, 1,
                                      Rank() == 1 ? Compression::kNone : Compression::kBFloat16});
  Status s = mixed.ok() ? Wait(*mixed) : mixed.status();
  Check(s.code() == Status::Code::kMismatch && s.message().find("compression") != std::string::npos,
        "compression mismatch: " + s.ToString());
  if (g_failures == 0) std::printf("rank %d: compression ok\n", Rank());
  return g_failures == 0 ? 0 : 1;
}

int RunDie() {
  std::vector<float> big(1 << 18, 1.0f);
  for (int step = 0;; ++step) {
    if (Rank() == Size() - 1 && step == 3) raise(SIGKILL);
    std::vector<Handle> hs;
    for (int t = 0; t < 8; ++t) {
      Result<Handle> h = AllreduceAsync("step" + std::to_string(step) + ".t" + std::to_string(t),
                                        big.data(), big.data(), {1 << 18}, DataType::kFloat32);
      if (!h.ok()) {
        std::printf("rank %d: submit: %s\n", Rank(), h.status().ToString().c_str());
        return h.status().code() == Status::Code::kPeerFailure ? 0 : 1;
      }
      hs.push_back(*h);
    }
    for (Handle h : hs) {
      Status s = Wait(h);
      if (!s.ok()) {
        std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
        return s.code() == Status::Code::kPeerFailure ? 0 : 1;
      }
    }
  }
}

// Whether a tensor submitted while rank `last` shuts down failed naming it:
// the wait fails (a peer failure: it never submitted the tensor), or, when
// the shutdown already ended this rank's engine, the submission is refused.
bool FailsNamingTheRankThatShutDown(const Status& s, int last) {
  const std::string who = std::to_string(last);
  return (s.code() == Status::Code::kPeerFailure &&
          s.message().find("never submitted by rank " + who + " (host") != std::string::npos) ||
         s.message().find("cohort was shut down by rank " + who) != std::string::npos;
}

int RunEarlyShutdown() {
  const int rank = Rank(), last = Size() - 1;
  Result<Handle> started = BarrierAsync("engine.started");  // every rank's engine runs
  Check(started.ok() && Wait(*started).ok(), "barrier");
  if (rank == last) return Shutdown().ok() ? 0 : 1;
  float x = 1;
  Result<Handle> h = AllreduceAsync("left.behind", &x, &x, {1}, DataType::kFloat32);
  Status s = h.ok() ? Wait(*h) : h.status();
  std::printf("rank %d: %s\n", rank, s.ToString().c_str());
  Check(FailsNamingTheRankThatShutDown(s, last),
        "the tensor fails naming the rank that shut down: " + s.ToString());
  Shutdown();
  return g_failures == 0 ? 0 : 1;
}

// After the engine stopped on this rank: a new Init, then every rank's
// allreduce of `tag` completes with the exact sum.
void CheckRestart(const char* tag) {
  Check(!IsRunning() && IsInitialized(), std::string(tag) + ": the engine has stopped");
  Status again = Init();
  Check(again.ok(), std::string(tag) + ": Init after the stop: " + again.ToString());
  float x = static_cast<float>(Rank() + 1), sum = 0;
  Status s = Allreduce(&x, &sum, 1, DataType::kFloat32);
  Check(s.ok() && sum == static_cast<float>(Size() * (Size() + 1) / 2),
        std::string(tag) + ": allreduce after the restart: " + s.ToString());
  if (g_failures == 0) std::printf("rank %d: %s restart ok\n", Rank(), tag);
}

int RunRestart() {
  const int rank = Rank(), last = Size() - 1;
  Result<Handle> started = BarrierAsync("engine.started");
  Check(started.ok() && Wait(*started).ok(), "barrier");
  if (rank == last) {
    // Returns without waiting for the others (they never call Shutdown).
    Check(Shutdown().ok(), "shutdown");
    Check(Init().ok(), "init after shutdown");
    float x = static_cast<float>(rank + 1), sum = 0;
    Status s = Allreduce(&x, &sum, 1, DataType::kFloat32);
    Check(s.ok() && sum == static_cast<float>(Size() * (Size() + 1) / 2),
          "allreduce after the restart: " + s.ToString());
    if (g_failures == 0) std::printf("rank %d: shutdown restart ok\n", rank);
    return g_failures == 0 ? 0 : 1;
  }
  float x = 1;
  Result<Handle> h = AllreduceAsync("left.behind", &x, &x, {1}, DataType::kFloat32);
  Status s = h.ok() ? Wait(*h) : h.status();
  std::printf("rank %d: %s\n", rank, s.ToString().c_str());
  Check(FailsNamingTheRankThatShutDown(s, last),
        "the tensor fails naming the rank that shut down: " + s.ToString());
  Result<Handle> later = AllreduceAsync("later", &x, &x, {1}, DataType::kFloat32);
  Check(!later.ok() && later.status().message().find("cohort was shut down by rank " +
                                                     std::to_string(last)) != std::string::npos,
        "a later submission fails at once, naming the rank: " + later.status().ToString());
  CheckRestart("shutdown");
  return g_failures == 0 ? 0 : 1;
}

int RunDeadlock() {
  const int rank = Rank();
  float x = 1;
  const std::string mine = rank == 0 ? "only.rank0" : "only.others";
  Result<Handle> h = AllreduceAsync(mine, &x, &x, {1}, DataType::kFloat32);
  Status s = h.ok() ? Wait(*h) : h.status();
  std::printf("rank %d: %s\n", rank, s.ToString().c_str());
  Check(s.code() == Status::Code::kMismatch &&
            s.message().find("(deadlock): rank 0 (host") != std::string::npos &&
            s.message().find("waits for allreduce 'only.rank0', which rank") != std::string::npos &&
            s.message().find("waits for allreduce 'only.others', which rank 0 has not submitted") !=
                std::string::npos,
        "the wait fails naming who waits for what: " + s.ToString());
  CheckRestart("deadlock");
  return g_failures == 0 ? 0 : 1;
}

// Sum over the members of value(member) for every element: the expected
// allreduce of tensors whose element j on job rank r is (r + j) % 5.
float SetSum(const std::vector<int>& members, size_t j) {
  float sum = 0;
  for (int r : members) sum += static_cast<float>((r + j) % 5);
  return sum;
}

struct SetOps {
  SetOps(int id, std::vector<int> members) : id(id), members(std::move(members)) {}
  int id;
  std::vector<int> members;
  std::vector<std::vector<float>> reduced;  // 40 allreduces
  std::vector<float> bcast;
  std::vector<int32_t> gather_in;
  std::vector<Handle> handles;
  Handle gather = 0, scatter = 0;
  std::vector<float> scatter_in;
};

// Submits, in set `ops.id`, 40 allreduces named like the other sets' ones, a
// broadcast from the set's last position, an allgather and a reduce-scatter.
void SubmitSetOps(SetOps& ops) {
  const int me = Rank();
  const int pos =
      static_cast<int>(std::find(ops.members.begin(), ops.members.end(), me) - ops.members.begin());
  const int n = static_cast<int>(ops.members.size());
  AllreduceOptions options;
  options.process_set = ops.id;
  ops.reduced.assign(40, {});
  for (int i = 0; i < 40; ++i) {
    std::vector<float>& t = ops.reduced[i];
    t.resize(100 + i * 997);
    for (size_t j = 0; j < t.size(); ++j) t[j] = static_cast<float>((me + j) % 5);
    Result<Handle> h =
        AllreduceAsync("t." + std::to_string(i), t.data(), t.data(),
                       {static_cast<int64_t>(t.size())}, DataType::kFloat32, options);
    Check(h.ok(), "set allreduce submits: " + h.status().ToString());
    if (h.ok()) ops.handles.push_back(*h);
  }
  ops.bcast.assign(33, static_cast<float>(me));
  Result<Handle> b =
      BroadcastAsync("b", ops.bcast.data(), {33}, DataType::kFloat32, n - 1, nullptr, ops.id);
  Check(b.ok(), "set broadcast submits: " + b.status().ToString());
  if (b.ok()) ops.handles.push_back(*b);
  ops.gather_in.assign(pos + 1, me);  // position p contributes p + 1 rows
  Result<Handle> g =
      AllgatherAsync("g", ops.gather_in.data(), {pos + 1}, DataType::kInt32, nullptr, ops.id);
  Check(g.ok(), "set allgather submits: " + g.status().ToString());
  ops.gather = g.ok() ? *g : 0;
  ops.scatter_in.assign(2 * n, static_cast<float>(me));
  Result<Handle> r = ReduceScatterAsync("rs", ops.scatter_in.data(), {2 * n}, DataType::kFloat32,
                                        ReduceOp::kSum, {}, nullptr, ops.id);
  Check(r.ok(), "set reducescatter submits: " + r.status().ToString());
  ops.scatter = r.ok() ? *r : 0;
}

void CheckSetOps(SetOps& ops) {
  const std::string set = "set " + std::to_string(ops.id) + ": ";
  for (Handle h : ops.handles) Check(Wait(h).ok(), set + "completes");
  for (size_t i = 0; i < ops.reduced.size(); ++i) {
    for (size_t j = 0; j < ops.reduced[i].size(); ++j) {
      if (ops.reduced[i][j] != SetSum(ops.members, j)) {
        Check(false, set + "allreduce t." + std::to_string(i) + " element " + std::to_string(j));
        break;
      }
    }
  }
  Check(ops.bcast == std::vector<float>(33, static_cast<float>(ops.members.back())),
        set + "broadcast from the set's last rank");
  TensorResult g;
  Check(Wait(ops.gather).ok() && TakeResult(ops.gather, &g).ok(), set + "allgather completes");
  std::vector<int32_t> expect;
  for (size_t p = 0; p < ops.members.size(); ++p)
    expect.insert(expect.end(), p + 1, ops.members[p]);
  std::vector<int32_t> got(g.data.size() / 4);
  if (!got.empty()) std::memcpy(got.data(), g.data.data(), g.data.size());
  Check(got == expect, set + "allgather rows in set order");
  TensorResult rs;
  Check(Wait(ops.scatter).ok() && TakeResult(ops.scatter, &rs).ok(),
        set + "reducescatter completes");
  float sum = 0;
  for (int r : ops.members) sum += static_cast<float>(r);
  std::vector<float> mine(rs.data.size() / 4);
  if (!mine.empty()) std::memcpy(mine.data(), rs.data.data(), rs.data.size());
  Check(mine == std::vector<float>(2, sum), set + "reducescatter gives 2 rows of the sum");
}

void ExpectError(const Status& s, const std::string& part, const std::string& what) {
  Check(!s.ok() && s.message().find(part) != std::string::npos,
        what + ": expected an error with '" + part + "', got " + s.ToString());
}

int RunProcessSets() {
  const int n = Size(), me = Rank();
  std::vector<int> low, high;
  for (int r = 0; r < n; ++r) (r < n / 2 ? low : high).push_back(r);
  const std::vector<int> ends = {n - 1, 0};  // any order; kept ascending
  // Nothing has run yet (the engine has not started): the job is the only set.
  std::vector<int> everyone(n);
  for (int r = 0; r < n; ++r) everyone[r] = r;
  Check(ProcessSetIds() == std::vector<int>({0}), "ProcessSetIds before any set was added");
  Check(ProcessSetRanks(0).ok() && *ProcessSetRanks(0) == everyone, "the job's ranks");
  Check(ProcessSetRank(0).ok() && *ProcessSetRank(0) == me, "position in the job");
  ExpectError(ProcessSetRanks(7).status(), "process set 7 does not exist", "an unknown set");
  Result<int> a = AddProcessSet(low), b = AddProcessSet(high), c = AddProcessSet(ends);
  Check(a.ok() && b.ok() && c.ok() && *a == 1 && *b == 2 && *c == 3, "set ids 1, 2, 3");
  if (!a.ok() || !b.ok() || !c.ok()) return 1;
  Check(ProcessSetIds() == std::vector<int>({0, 1, 2, 3}), "ProcessSetIds");
  Check(*ProcessSetRanks(*c) == std::vector<int>({0, n - 1}), "ranks of the pair");
  Check(*ProcessSetRank(*b) == (me < n / 2 ? -1 : me - n / 2), "position in the upper half");
  // Every set this rank is in, and the whole job, at the same time, same names.
  std::vector<SetOps> mine;
  mine.emplace_back(0, *ProcessSetRanks(0));
  mine.emplace_back(me < n / 2 ? *a : *b, me < n / 2 ? low : high);
  if (me == 0 || me == n - 1) mine.emplace_back(*c, std::vector<int>{0, n - 1});
  for (SetOps& ops : mine) SubmitSetOps(ops);
  for (SetOps& ops : mine) CheckSetOps(ops);
  // A rank outside a set cannot submit to it; unknown sets are refused.
  std::vector<float> x(4, 1);
  AllreduceOptions other;
  other.process_set = me < n / 2 ? *b : *a;
  ExpectError(AllreduceAsync("x", x.data(), x.data(), {4}, DataType::kFloat32, other).status(),
              "is not a member of process set", "non-member");
  other.process_set = 17;
  ExpectError(AllreduceAsync("x", x.data(), x.data(), {4}, DataType::kFloat32, other).status(),
              "process set 17 does not exist", "unknown set");
  // A mismatch inside the pair names job ranks, not positions in the set.
  if (me == 0 || me == n - 1) {
    std::vector<float> y(me == 0 ? 4 : 5, 1);
    AllreduceOptions pair;
    pair.process_set = *c;
    Result<Handle> h = AllreduceAsync("y", y.data(), y.data(), {static_cast<int64_t>(y.size())},
                                      DataType::kFloat32, pair);
    Check(h.ok(), "mismatched tensor submits");
    if (h.ok()) {
      ExpectError(Wait(*h), "rank " + std::to_string(n - 1) + ": [5]", "mismatch in a set");
      Release(*h);
    }
  }
  // Bad member lists fail where they are made, the same on every rank.
  ExpectError(AddProcessSet({0, 0}).status(), "listed twice", "duplicate member");
  ExpectError(AddProcessSet({0, n}).status(), "is not a rank of this job", "member out of range");
  // Removing: the whole job cannot be removed; a removed set is gone.
  ExpectError(RemoveProcessSet(0), "cannot be removed", "remove set 0");
  Check(RemoveProcessSet(*a).ok(), "remove the lower half");
  Check(ProcessSetIds() == std::vector<int>({0, 2, 3}), "ids after removal");
  other.process_set = *a;
  if (me < n / 2) {
    ExpectError(AllreduceAsync("x", x.data(), x.data(), {4}, DataType::kFloat32, other).status(),
                "does not exist", "removed set");
  }
  ExpectError(RemoveProcessSet(*a), "does not exist", "remove twice");
  // A new set gets a new id, and works.
  Result<int> d = AddProcessSet(low);
  Check(d.ok() && *d == 4, "ids are not reused");
  if (g_failures == 0) std::printf("rank %d: process sets ok\n", me);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string mode = argc > 1 ? argv[1] : "random";
  Status init = Init();
  if (!init.ok()) {
    std::fprintf(stderr, "init failed: %s\n", init.ToString().c_str());
    return 1;
  }
  int rc = 2;
  if (mode == "random") rc = RunRandom(argc > 2 ? std::atoi(argv[2]) : 2000);
  if (mode == "mismatch") rc = RunMismatch();
  if (mode == "allgather") rc = RunAllgather();
  if (mode == "grouped") rc = RunGrouped();
  if (mode == "sync") rc = RunSync();
  if (mode == "unmatched") rc = RunUnmatched();
  if (mode == "scatter") rc = RunScatter();
  if (mode == "lagging") rc = RunLagging();
  if (mode == "steps") rc = RunSteps();
  if (mode == "autotune") rc = RunAutotune(argc > 2 ? std::atoi(argv[2]) : 40);
  if (mode == "join") rc = RunJoin();
  if (mode == "stall") rc = RunStall(argc > 2 ? argv[2] : "stall.fifo");
  if (mode == "die") rc = RunDie();
  if (mode == "process_sets") rc = RunProcessSets();
  if (mode == "early_shutdown") rc = RunEarlyShutdown();
  if (mode == "restart") rc = RunRestart();
  if (mode == "deadlock") rc = RunDeadlock();
  if (mode == "compression") rc = RunCompression();
  if (mode == "timeline") rc = RunTimeline(argc > 2 ? argv[2] : "timeline.json");
  Shutdown();
  return rc;
}
