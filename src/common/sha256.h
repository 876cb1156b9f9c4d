// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written here so the
// runtime's job authentication (net/auth.cc) and the GPU kernel cache keys
// need no crypto library: the minimal build (-DCOHORT_MINIMAL=ON) runs where
// no OpenSSL headers exist. tests/common/sha256_test.cc checks both against
// OpenSSL's libcrypto on many inputs.
#ifndef COHORT_COMMON_SHA256_H_
#define COHORT_COMMON_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cohort {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental hashing: Update any number of times, then Finish once.
class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t len);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  Sha256Digest Finish();

 private:
  void Block(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Sha256Digest Sha256Of(std::string_view bytes);
Sha256Digest HmacSha256(std::string_view key, std::string_view message);

// Lower-case hexadecimal of a digest (64 characters).
std::string DigestHex(const Sha256Digest& digest);

// Compares two byte strings in time that depends only on their lengths, so a
// MAC check leaks nothing about how many leading bytes matched.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace cohort

#endif  // COHORT_COMMON_SHA256_H_
