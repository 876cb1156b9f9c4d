// The allreduce executor: one tensor, or several fused (reduced in place
// where ranks share memory, else through the fusion buffer); joined ranks
// take part with the op's identity.
#include "engine/engine.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "collectives/collectives.h"
#include "common/value_convert.h"

namespace cohort {

namespace {

// A tensor of `a`'s shape filled with the identity of its reduce op.
std::vector<unsigned char> IdentityBuffer(const Announcement& a) {
  const size_t esize = DataTypeSize(a.dtype);
  std::vector<unsigned char> buf(std::max<uint64_t>(a.elements(), 1) * esize, 0);
  if (a.op == ReduceOp::kSum || a.op == ReduceOp::kAverage || a.op == ReduceOp::kAdasum) {
    return buf;  // zeros (Adasum(x, 0) = x)
  }
  const double value = a.op == ReduceOp::kProduct ? 1.0
                       : a.op == ReduceOp::kMin   ? std::numeric_limits<double>::infinity()
                                                  : -std::numeric_limits<double>::infinity();
  unsigned char one[8];
  StoreAs(a.dtype, value, one);  // saturates to the type's extreme for integers
  for (size_t i = 0; i < a.elements(); ++i) std::memcpy(&buf[i * esize], one, esize);
  return buf;
}

}  // namespace

Status Engine::ExecuteAllreduce(ProcessSet& set, const Response& response) {
  std::vector<Request> reqs;
  std::vector<std::vector<unsigned char>>
      identity;  // buffers this rank takes part with after joining
  for (size_t i = 0; i < response.names.size(); ++i) {
    Request r = TakePending(set.id, response.names[i]);
    if (r.handle == 0) {  // joined: contribute the op's identity, discard the result
      r.what = response.what[i];
      identity.push_back(IdentityBuffer(r.what));
      r.send = r.recv = identity.back().data();
    }
    reqs.push_back(std::move(r));
  }
  const Announcement& a = reqs[0].what;
  Status s;
  if (reqs.size() == 1 || a.op == ReduceOp::kAdasum) {
    // Adasum's dot products are per tensor, so fused Adasum tensors run one by one.
    for (const Request& r : reqs) {
      CountAllreduce(1, r.what.elements() * DataTypeSize(a.dtype), /*fused=*/false);
      const Clock::time_point start = Clock::now();
      if (s.ok()) {
        s = RunAllreduce(*set.comm, r.send, r.recv, r.what.elements(), a.dtype, a.op, a.prescale,
                         a.postscale, AllreduceAlgorithm::kAuto,
                         static_cast<Compression>(a.compression));
      }
      if (tl_) tl_->Span(r.what.name, "ALLREDUCE", start, Clock::now());
    }
  } else if (a.compression == 0 && CanAllreducePieces(*set.comm)) {
    std::vector<AllreducePiece> pieces;
    size_t total = 0;
    for (const Request& r : reqs) {
      pieces.push_back({r.send, r.recv, r.what.elements()});
      total += r.what.elements();
    }
    CountAllreduce(reqs.size(), total * DataTypeSize(a.dtype), /*fused=*/true);
    const Clock::time_point start = Clock::now();
    s = RunAllreducePieces(*set.comm, pieces, a.dtype, a.op, a.prescale, a.postscale);
    if (tl_) {
      TimelineArgs args;
      args.Int("fused_tensors", static_cast<int64_t>(reqs.size()))
          .Int("fused_bytes", static_cast<int64_t>(total * DataTypeSize(a.dtype)))
          .Bool("in_place", true);
      const Clock::time_point end = Clock::now();
      for (const Request& r : reqs) tl_->Span(r.what.name, "ALLREDUCE", start, end, args);
    }
  } else {
    const Clock::time_point t0 = Clock::now();
    const size_t esize = DataTypeSize(a.dtype);
    size_t total = 0;
    for (const Request& r : reqs) total += r.what.elements();
    CountAllreduce(reqs.size(), total * esize, /*fused=*/true);
    unsigned char* buf = fusion_.Reserve(total * esize);
    size_t at = 0;
    for (const Request& r : reqs) {
      const size_t bytes = r.what.elements() * esize;
      if (bytes > 0) std::memcpy(buf + at, r.send, bytes);
      at += bytes;
    }
    const Clock::time_point t1 = Clock::now();
    s = RunAllreduce(*set.comm, buf, buf, total, a.dtype, a.op, a.prescale, a.postscale,
                     AllreduceAlgorithm::kAuto, static_cast<Compression>(a.compression));
    const Clock::time_point t2 = Clock::now();
    at = 0;
    for (const Request& r : reqs) {
      const size_t bytes = r.what.elements() * esize;
      if (s.ok() && bytes > 0) std::memcpy(r.recv, buf + at, bytes);
      at += bytes;
    }
    if (tl_) RecordFusedSpans(reqs, total * esize, t0, t1, t2, Clock::now());
  }
  for (const Request& r : reqs) {
    if (r.handle != 0) handles_.Complete(r.handle, s);
  }
  return s;
}

void Engine::CountAllreduce(size_t tensors, size_t bytes, bool fused) {
  allreduces_.fetch_add(1, std::memory_order_relaxed);
  allreduced_tensors_.fetch_add(tensors, std::memory_order_relaxed);
  if (!fused) return;
  fused_allreduces_.fetch_add(1, std::memory_order_relaxed);
  fused_tensors_.fetch_add(tensors, std::memory_order_relaxed);
  fused_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

EngineStats Engine::Stats() const {
  EngineStats out;
  out.cycles = cycles_.load(std::memory_order_relaxed);
  out.allreduces = allreduces_.load(std::memory_order_relaxed);
  out.allreduced_tensors = allreduced_tensors_.load(std::memory_order_relaxed);
  out.fused_allreduces = fused_allreduces_.load(std::memory_order_relaxed);
  out.fused_tensors = fused_tensors_.load(std::memory_order_relaxed);
  out.fused_bytes = fused_bytes_.load(std::memory_order_relaxed);
  return out;
}

void Engine::RecordFusedSpans(const std::vector<Request>& reqs, size_t bytes, Clock::time_point t0,
                              Clock::time_point t1, Clock::time_point t2, Clock::time_point t3) {
  TimelineArgs args;
  args.Int("fused_tensors", static_cast<int64_t>(reqs.size()))
      .Int("fused_bytes", static_cast<int64_t>(bytes));
  for (const Request& r : reqs) {
    tl_->Span(r.what.name, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
    tl_->Span(r.what.name, "ALLREDUCE", t1, t2, args);
    tl_->Span(r.what.name, "MEMCPY_OUT_FUSION_BUFFER", t2, t3);
  }
}

}  // namespace cohort
