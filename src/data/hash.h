// The two hashes of the dataset format: SHA-256 names objects (content
// addresses, checked by `verify`), XXH3-64 is the per-object checksum checked
// on every read (fast enough to be free next to the read itself).
#ifndef COHORT_DATA_HASH_H_
#define COHORT_DATA_HASH_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace cohort::data {

// 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);
uint64_t Checksum64(std::string_view bytes);
// The checksum of `a` followed by `b`, without joining them.
uint64_t Checksum64(std::string_view a, std::string_view b);
// XXH3-128 as {low, high}: tells records apart (collisions: 2^-128).
std::pair<uint64_t, uint64_t> Digest128(std::string_view bytes);
// True for 64 lowercase hex digits (an object id).
bool IsObjectId(std::string_view s);

}  // namespace cohort::data

#endif  // COHORT_DATA_HASH_H_
