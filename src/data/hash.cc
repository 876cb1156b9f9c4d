// SHA-256 (OpenSSL libcrypto) and XXH3-64 (libxxhash).
#include "data/hash.h"

#include <openssl/evp.h>
#include <xxhash.h>
#if defined(__x86_64__)
// Debian's libxxhash is built for baseline x86-64 (SSE2); its *_dispatch
// entry points pick AVX2 or AVX-512 at run time, same hashes, about twice
// as fast. Every chunk read is checksummed, so this is on the loader's path.
#include <xxh_x86dispatch.h>
#endif

#include <memory>

namespace cohort::data {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

uint64_t Checksum64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t Checksum64(std::string_view a, std::string_view b) {
  // A heap state: its layout is private to the library version installed.
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(),
                                                                        XXH3_freeState);
  XXH3_64bits_reset(state.get());
  XXH3_64bits_update(state.get(), a.data(), a.size());
  XXH3_64bits_update(state.get(), b.data(), b.size());
  return XXH3_64bits_digest(state.get());
}

std::pair<uint64_t, uint64_t> Digest128(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

bool IsObjectId(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace cohort::data
