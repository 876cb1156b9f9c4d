// .npy header parsing and writing.
#include "data/npy.h"

#include <cctype>
#include <iterator>

namespace cohort::data {

namespace {

struct DescrName {
  const char* descr;
  DataType dtype;
};
constexpr DescrName kDescrs[] = {
    {"|u1", DataType::kUInt8},   {"<u1", DataType::kUInt8},   {"|i1", DataType::kInt8},
    {"<i1", DataType::kInt8},    {"<i4", DataType::kInt32},   {"<i8", DataType::kInt64},
    {"<f2", DataType::kFloat16}, {"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64},
};

// The quoted string after 'key': in the dict text.
Result<std::string> StringField(const std::string& dict, const std::string& key) {
  size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos) return Status::InvalidArgument(".npy header has no '" + key + "'");
  size_t open = dict.find('\'', dict.find(':', at) + 1);
  size_t close = open == std::string::npos ? open : dict.find('\'', open + 1);
  if (close == std::string::npos)
    return Status::InvalidArgument(".npy header '" + key + "' is malformed");
  return dict.substr(open + 1, close - open - 1);
}

Result<std::vector<uint64_t>> ShapeField(const std::string& dict) {
  size_t at = dict.find("'shape'");
  size_t open = at == std::string::npos ? at : dict.find('(', at);
  size_t close = open == std::string::npos ? open : dict.find(')', open);
  if (close == std::string::npos) return Status::InvalidArgument(".npy header has no shape tuple");
  std::vector<uint64_t> shape;
  std::string digits;
  for (size_t i = open + 1; i <= close; ++i) {
    char c = dict[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
    } else if (c == ',' || c == ')') {
      if (!digits.empty()) shape.push_back(std::stoull(digits));
      digits.clear();
    } else if (c != ' ' && c != 'L') {
      return Status::InvalidArgument(".npy shape has an unexpected character '" +
                                     std::string(1, c) + "'");
    }
  }
  return shape;
}

}  // namespace

Result<NpyHeader> ParseNpyHeader(const std::string& prefix) {
  if (prefix.size() < 10 || prefix.compare(0, 6, "\x93NUMPY") != 0) {
    return Status::InvalidArgument("not a .npy file (bad magic)");
  }
  const uint8_t major = static_cast<uint8_t>(prefix[6]);
  uint64_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(prefix[8]) | (static_cast<uint8_t>(prefix[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (prefix.size() < 12) return Status::InvalidArgument(".npy header is truncated");
    for (int i = 0; i < 4; ++i)
      header_len |= uint64_t{static_cast<uint8_t>(prefix[8 + i])} << (8 * i);
    start = 12;
  } else {
    return Status::InvalidArgument(".npy format version " + std::to_string(major) +
                                   " is not supported");
  }
  if (prefix.size() < start + header_len)
    return Status::InvalidArgument(".npy header is truncated");
  const std::string dict = prefix.substr(start, header_len);
  NpyHeader header;
  header.data_offset = start + header_len;
  Result<std::string> descr = StringField(dict, "descr");
  if (!descr.ok()) return descr.status();
  bool known = false;
  for (const DescrName& d : kDescrs) {
    if (*descr == d.descr) {
      header.dtype = d.dtype;
      known = true;
    }
  }
  if (!known) {
    return Status::InvalidArgument(".npy dtype '" + *descr +
                                   "' is not supported (little-endian u1, i1, i4, i8, f2, f4, f8)");
  }
  size_t fortran = dict.find("'fortran_order'");
  if (fortran == std::string::npos || dict.find("True", fortran) < dict.find(',', fortran)) {
    return Status::InvalidArgument(
        ".npy array is in Fortran order or the header lacks fortran_order");
  }
  Result<std::vector<uint64_t>> shape = ShapeField(dict);
  if (!shape.ok()) return shape.status();
  header.shape = std::move(*shape);
  return header;
}

std::string MakeNpyHeader(DataType dtype, const std::vector<uint64_t>& shape) {
  std::string descr = "|u1";  // the first spelling of each dtype in kDescrs is numpy's own
  for (auto it = std::rbegin(kDescrs); it != std::rend(kDescrs); ++it) {
    if (it->dtype == dtype) descr = it->descr;
  }
  std::string dims;  // numpy's spelling: "()", "(3,)", "(3, 4)"
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY\x01";
  out.push_back('\0');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

}  // namespace cohort::data
