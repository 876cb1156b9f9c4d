// Wire format shared by the store server and client. After the auth
// handshake, each request and each reply is one length-prefixed message:
//   request: op (1 byte: 'S' set, 'G' get, 'A' add) | key length (u32 LE) | key | argument
//            argument: set -> value bytes; get -> wait in ms (i64 LE); add -> delta (i64 LE)
//   reply:   'K' payload (value, or new counter as i64 LE) | 'T' (get timed out) | 'E' message
#ifndef COHORT_RENDEZVOUS_STORE_PROTOCOL_H_
#define COHORT_RENDEZVOUS_STORE_PROTOCOL_H_

#include <cstdint>
#include <cstring>
#include <string>

namespace cohort::store_protocol {

inline constexpr size_t kMaxMessage = 16u << 20;

inline std::string EncodeI64(int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  return out;
}

inline int64_t DecodeI64(const std::string& bytes, size_t offset) {
  uint64_t v = 0;
  for (int i = 0; i < 8 && offset + i < bytes.size(); ++i) {
    v |= uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  return static_cast<int64_t>(v);
}

inline std::string EncodeRequest(char op, const std::string& key, const std::string& argument) {
  std::string out(1, op);
  uint32_t len = static_cast<uint32_t>(key.size());
  for (int i = 0; i < 4; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + key + argument;
}

struct Request {
  char op = 0;
  std::string key;
  std::string argument;
};

// Returns false when `bytes` is not a well-formed request.
inline bool DecodeRequest(const std::string& bytes, Request* request) {
  if (bytes.size() < 5) return false;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(bytes[1 + i])} << (8 * i);
  if (5 + size_t{len} > bytes.size()) return false;
  request->op = bytes[0];
  request->key = bytes.substr(5, len);
  request->argument = bytes.substr(5 + len);
  return true;
}

}  // namespace cohort::store_protocol

#endif  // COHORT_RENDEZVOUS_STORE_PROTOCOL_H_
