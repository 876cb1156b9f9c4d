// Value constructors and the small helpers of the public data API.
#include <cstring>

#include "cohort/data.h"

namespace cohort::data {

const char* ColumnKindName(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kArray:
      return "array";
    case ColumnKind::kImage:
      return "image";
    case ColumnKind::kText:
      return "text";
    case ColumnKind::kLabel:
      return "label";
    case ColumnKind::kJson:
      return "json";
  }
  return "unknown";
}

Result<ColumnKind> ParseColumnKind(const std::string& name) {
  for (ColumnKind kind : {ColumnKind::kArray, ColumnKind::kImage, ColumnKind::kText,
                          ColumnKind::kLabel, ColumnKind::kJson}) {
    if (name == ColumnKindName(kind)) return kind;
  }
  return Status::InvalidArgument("unknown column kind '" + name +
                                 "' (expected array, image, text, label or json)");
}

std::string ShapeName(const std::optional<std::vector<uint64_t>>& shape) {
  if (!shape) return "ragged";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string((*shape)[i]);
  }
  return s + ']';
}

Value Value::Array(DataType dtype, std::vector<uint64_t> shape, const void* data) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  Value v{dtype, std::move(shape), {}};
  v.bytes.assign(static_cast<const char*>(data), n * DataTypeSize(dtype));
  return v;
}

namespace {
Value BytesValue(std::string bytes) {
  Value v{DataType::kUInt8, {bytes.size()}, std::move(bytes)};
  return v;
}
}  // namespace

Value Value::Image(std::string encoded) { return BytesValue(std::move(encoded)); }
Value Value::Text(std::string text) { return BytesValue(std::move(text)); }
Value Value::Json(std::string json) { return BytesValue(std::move(json)); }

Value Value::Label(int64_t label) {
  Value v{DataType::kInt64, {}, std::string(8, '\0')};
  std::memcpy(v.bytes.data(), &label, 8);  // little-endian hosts only (x86-64, aarch64)
  return v;
}

int64_t Value::label() const {
  int64_t label = 0;
  if (bytes.size() == 8) std::memcpy(&label, bytes.data(), 8);
  return label;
}

bool IsConflict(const Status& status) { return status.IsAborted(); }

}  // namespace cohort::data
