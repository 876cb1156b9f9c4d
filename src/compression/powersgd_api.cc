// cohort.h's PowerSGD passes: the arguments checked, then the kernels.
#include <cstdint>
#include <string>

#include "cohort/cohort.h"
#include "compression/powersgd_kernels.h"

namespace cohort {
namespace {

// Null pointers and zero sizes, named with the pass (`who`) and the argument.
Status CheckMatrix(const char* who, const PowerSgdMatrix& x, const float* a, const char* a_name,
                   const float* b, const char* b_name) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(std::string(who) + ": " + what);
  };
  if (x.m == nullptr) return bad("the matrix m is null");
  if (x.rows == 0 || x.cols == 0 || x.rank == 0) {
    return bad("rows, cols and rank must be at least 1, got " + std::to_string(x.rows) + " x " +
               std::to_string(x.cols) + " at rank " + std::to_string(x.rank));
  }
  if (a == nullptr) return bad(std::string(a_name) + " is null");
  if (b == nullptr) return bad(std::string(b_name) + " is null");
  if (x.error != nullptr) {
    // The passes read m and write error in one sweep: overlapping, they
    // would read what they wrote.
    const uintptr_t m = reinterpret_cast<uintptr_t>(x.m);
    const uintptr_t e = reinterpret_cast<uintptr_t>(x.error);
    const uintptr_t bytes = x.rows * x.cols * sizeof(float);
    if (e < m + bytes && m < e + bytes) return bad("error overlaps the matrix m");
  }
  return Status::OK();
}

}  // namespace

Status PowerSgdProject(const PowerSgdMatrix& matrix, const float* q_t, float* p) {
  Status s = CheckMatrix("PowerSgdProject", matrix, q_t, "q_t", p, "p");
  if (s.ok()) powersgd::FoldAndProject(matrix, q_t, p);
  return s;
}

Status PowerSgdProjectBack(const PowerSgdMatrix& matrix, const float* p, float* q_t) {
  Status s = CheckMatrix("PowerSgdProjectBack", matrix, p, "p", q_t, "q_t");
  if (s.ok()) powersgd::ProjectBack(matrix, p, q_t);
  return s;
}

Status PowerSgdApproximate(const PowerSgdMatrix& matrix, const float* p, const float* q_t) {
  Status s = CheckMatrix("PowerSgdApproximate", matrix, p, "p", q_t, "q_t");
  if (s.ok()) powersgd::Approximate(matrix, p, q_t);
  return s;
}

}  // namespace cohort
