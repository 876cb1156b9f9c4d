// Quasi-random search: Sobol points (Joe & Kuo direction numbers), one
// dimension per parameter, randomized by a digital shift drawn from the seed
// so different seeds give different but equally even designs.
#include <array>

#include "sweep/algorithm.h"

namespace cohort::sweep {

namespace {

// Joe & Kuo (2008), new-joe-kuo-6.21201, dimensions 2..21: degree s,
// polynomial a, initial direction numbers m_1..m_s.
struct Primitive {
  int s;
  uint32_t a;
  std::array<uint32_t, 8> m;
};
constexpr Primitive kPrimitives[] = {
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
    {6, 19, {1, 1, 1, 15, 7, 5}},
    {6, 22, {1, 3, 1, 15, 13, 25}},
    {6, 25, {1, 1, 5, 5, 19, 61}},
    {7, 1, {1, 3, 7, 11, 23, 15, 103}},
    {7, 4, {1, 3, 7, 13, 13, 15, 69}},
};
constexpr size_t kMaxDims = 1 + sizeof(kPrimitives) / sizeof(kPrimitives[0]);
constexpr int kBits = 32;

using Directions = std::array<uint32_t, kBits>;

Directions DirectionsFor(size_t dim) {
  Directions v{};
  if (dim == 0) {
    for (int j = 0; j < kBits; ++j) v[j] = 1u << (kBits - 1 - j);
    return v;
  }
  const Primitive& p = kPrimitives[dim - 1];
  for (int j = 0; j < p.s; ++j) v[j] = p.m[j] << (kBits - 1 - j);
  for (int j = p.s; j < kBits; ++j) {
    uint32_t x = v[j - p.s] ^ (v[j - p.s] >> p.s);
    for (int k = 1; k < p.s; ++k) {
      if ((p.a >> (p.s - 1 - k)) & 1) x ^= v[j - k];
    }
    v[j] = x;
  }
  return v;
}

class SobolSampler : public Sampler {
 public:
  SobolSampler(const Space& space, uint64_t seed) : space_(space) {
    std::mt19937_64 rng(seed);
    for (size_t d = 0; d < space.size(); ++d) {
      directions_.push_back(DirectionsFor(d));
      shifts_.push_back(seed == 0 ? 0u : static_cast<uint32_t>(rng()));
    }
  }

  std::optional<Params> Sample(const std::vector<Observation>&) override {
    const uint64_t gray = index_ ^ (index_ >> 1);
    ++index_;
    Params params;
    for (size_t d = 0; d < space_.size(); ++d) {
      uint32_t x = shifts_[d];
      for (int j = 0; j < kBits; ++j) {
        if ((gray >> j) & 1) x ^= directions_[d][j];
      }
      // The middle of the point's cell, so no value sits exactly on a bound.
      double u = (static_cast<double>(x) + 0.5) / 4294967296.0;
      if (space_.Active(d, params)) params[space_.params()[d].name] = space_.FromUnit(d, u);
    }
    return params;
  }

 private:
  Space space_;
  std::vector<Directions> directions_;
  std::vector<uint32_t> shifts_;
  uint64_t index_ = 0;
};

}  // namespace

size_t SobolMaxDimensions() { return kMaxDims; }

std::unique_ptr<Sampler> MakeSobolSampler(const Space& space, uint64_t seed) {
  return std::make_unique<SobolSampler>(space, seed);
}

}  // namespace cohort::sweep
