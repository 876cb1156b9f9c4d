// ShuffleRng: the one random number generator behind every shuffle and
// random transform of the loader. Its output is defined here (SplitMix64 and
// Lemire's bounded draw), not by the standard library, so an epoch's order and
// a sample's crop are the same on every platform, compiler and thread count.
#ifndef COHORT_DATA_SHUFFLE_RNG_H_
#define COHORT_DATA_SHUFFLE_RNG_H_

#include <cstdint>
#include <initializer_list>

namespace cohort::data {

class ShuffleRng {
 public:
  explicit ShuffleRng(uint64_t seed) : state_(seed) {}

  // A seed that depends on every key (seed, epoch, window or position ...).
  static uint64_t Key(std::initializer_list<uint64_t> parts) {
    uint64_t h = 0x243f6a8885a308d3ull;
    for (uint64_t p : parts) h = Mix(h ^ Mix(p + 0x9e3779b97f4a7c15ull));
    return h;
  }

  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, n) without modulo bias; n > 0.
  uint64_t Below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_SHUFFLE_RNG_H_
