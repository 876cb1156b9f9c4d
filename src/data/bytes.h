// Little-endian encoding of the integers and strings inside dataset objects
// (chunks, commits). Readers never trust a length: every read is bounds-checked
// and a short buffer turns into a failed Status, never a crash.
#ifndef COHORT_DATA_BYTES_H_
#define COHORT_DATA_BYTES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::data {

class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Fixed(v, 4); }
  void U64(uint64_t v) { Fixed(v, 8); }
  void Raw(std::string_view bytes) { out_.append(bytes); }
  // u32 length, then the bytes.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s);
  }
  std::string& out() { return out_; }

 private:
  void Fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class ByteReader {
 public:
  // `what` names the object in error messages ("chunk 3fa2...").
  ByteReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}

  Status U8(uint8_t* v) { return Fixed(v, 1); }
  Status U32(uint32_t* v) { return Fixed(v, 4); }
  Status U64(uint64_t* v) { return Fixed(v, 8); }
  Status Raw(size_t n, std::string_view* bytes) {
    if (in_.size() - pos_ < n) return Short(n);
    *bytes = in_.substr(pos_, n);
    pos_ += n;
    return Status::OK();
  }
  Status Str(std::string* s) {
    uint32_t n = 0;
    COHORT_RETURN_IF_ERROR(U32(&n));
    std::string_view bytes;
    COHORT_RETURN_IF_ERROR(Raw(n, &bytes));
    s->assign(bytes);
    return Status::OK();
  }
  size_t pos() const { return pos_; }
  size_t left() const { return in_.size() - pos_; }

 private:
  template <typename T>
  Status Fixed(T* v, size_t n) {
    if (in_.size() - pos_ < n) return Short(n);
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    *v = static_cast<T>(x);
    pos_ += n;
    return Status::OK();
  }
  Status Short(size_t n) const {
    return Status::IoError(what_ + " is truncated: needs " + std::to_string(n) +
                           " bytes at offset " + std::to_string(pos_) + ", has " +
                           std::to_string(in_.size() - pos_));
  }
  std::string_view in_;
  size_t pos_ = 0;
  std::string what_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_BYTES_H_
