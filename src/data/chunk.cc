// Chunk and record encoding.
#include "data/chunk.h"

#include "data/bytes.h"
#include "data/compress.h"
#include "data/hash.h"

namespace cohort::data {

namespace {

constexpr char kChunkMagic[4] = {'C', 'H', 'K', '1'};
constexpr uint8_t kMaxDims = 32;

// Elements in `shape`, or an error when the product overflows.
Result<uint64_t> ElementCount(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return Status::InvalidArgument("shape overflows");
    n *= d;
  }
  return n;
}

Status CheckValue(const Column& column, const Value& v) {
  const std::string where = "column '" + column.name + "': ";
  DataType want = column.kind == ColumnKind::kArray   ? column.dtype
                  : column.kind == ColumnKind::kLabel ? DataType::kInt64
                                                      : DataType::kUInt8;
  if (v.dtype != want) {
    return Status::InvalidArgument(where + "value has dtype " + DataTypeName(v.dtype) +
                                   ", column holds " + DataTypeName(want));
  }
  if (column.kind == ColumnKind::kLabel && !v.shape.empty()) {
    return Status::InvalidArgument(where + "a label is a scalar (shape [])");
  }
  if (column.kind != ColumnKind::kArray && column.kind != ColumnKind::kLabel &&
      (v.shape.size() != 1 || v.shape[0] != v.bytes.size())) {
    return Status::InvalidArgument(where + "bytes value must have shape [nbytes]");
  }
  if (v.shape.size() > kMaxDims) return Status::InvalidArgument(where + "more than 32 dimensions");
  if (column.shape && v.shape != *column.shape) {
    return Status::InvalidArgument(where + "a value of shape " + ShapeName(v.shape) +
                                   " does not fit the column's fixed shape " +
                                   ShapeName(column.shape) +
                                   " (a column declared ragged takes any shape)");
  }
  Result<uint64_t> n = ElementCount(v.shape);
  if (!n.ok()) return n.status().WithContext(where);
  if (*n > UINT64_MAX / DataTypeSize(v.dtype) || *n * DataTypeSize(v.dtype) != v.bytes.size()) {
    return Status::InvalidArgument(where + "shape and dtype need " +
                                   std::to_string(*n * DataTypeSize(v.dtype)) +
                                   " bytes, value has " + std::to_string(v.bytes.size()));
  }
  return Status::OK();
}

}  // namespace

Result<std::string> EncodeRecord(const Schema& schema, const Sample& sample) {
  if (sample.size() != schema.size()) {
    return Status::InvalidArgument("sample has " + std::to_string(sample.size()) +
                                   " values, the schema has " + std::to_string(schema.size()) +
                                   " columns");
  }
  ByteWriter w;
  for (size_t c = 0; c < schema.size(); ++c) {
    COHORT_RETURN_IF_ERROR(CheckValue(schema[c], sample[c]));
    w.U8(static_cast<uint8_t>(sample[c].shape.size()));
    for (uint64_t d : sample[c].shape) w.U64(d);
    w.Raw(sample[c].bytes);
  }
  return std::move(w.out());
}

Result<Sample> DecodeRecord(const Schema& schema, std::string_view record) {
  ByteReader r(record, "record");
  Sample sample(schema.size());
  for (size_t c = 0; c < schema.size(); ++c) {
    Value& v = sample[c];
    v.dtype = schema[c].kind == ColumnKind::kArray   ? schema[c].dtype
              : schema[c].kind == ColumnKind::kLabel ? DataType::kInt64
                                                     : DataType::kUInt8;
    uint8_t ndim = 0;
    COHORT_RETURN_IF_ERROR(r.U8(&ndim));
    if (ndim > kMaxDims)
      return Status::IoError("record has a value with " + std::to_string(ndim) + " dims");
    v.shape.resize(ndim);
    for (uint64_t& d : v.shape) COHORT_RETURN_IF_ERROR(r.U64(&d));
    Result<uint64_t> n = ElementCount(v.shape);
    if (!n.ok() || *n > r.left() / DataTypeSize(v.dtype)) {
      return Status::IoError("record value of column '" + schema[c].name + "' overruns the record");
    }
    std::string_view bytes;
    COHORT_RETURN_IF_ERROR(r.Raw(*n * DataTypeSize(v.dtype), &bytes));
    v.bytes.assign(bytes);
  }
  if (r.left() != 0)
    return Status::IoError("record has " + std::to_string(r.left()) + " stray bytes");
  return sample;
}

Result<std::string> EncodeChunk(const ChunkBuilder& chunk, Compression c, int level) {
  ByteWriter payload;
  payload.U32(static_cast<uint32_t>(chunk.size()));
  for (uint64_t id : chunk.ids) payload.U64(id);
  uint64_t offset = 0;
  payload.U64(0);
  for (const std::string& record : chunk.records) payload.U64(offset += record.size());
  for (const std::string& record : chunk.records) payload.Raw(record);

  Result<std::string> stored = Compress(c, level, payload.out());
  if (!stored.ok()) return stored.status();
  ByteWriter object;
  object.Raw(std::string_view(kChunkMagic, 4));
  object.U8(static_cast<uint8_t>(c));
  object.Raw(std::string_view("\0\0\0", 3));
  object.U64(payload.out().size());
  object.U64(stored->size());
  object.U64(Checksum64(object.out(), *stored));  // header fields before it + payload
  object.Raw(*stored);
  return std::move(object.out());
}

Result<DecodedChunk> DecodedChunk::Decode(std::string object) {
  return Decode(ObjectBytes::Own(std::move(object)));
}

Result<DecodedChunk> DecodedChunk::Decode(ObjectBytes stored_object) {
  const std::string_view object = stored_object.bytes;
  ByteReader header(object, "chunk header");
  std::string_view magic;
  uint8_t compression = 0;
  std::string_view reserved;
  uint64_t raw_size = 0, stored_size = 0, checksum = 0;
  COHORT_RETURN_IF_ERROR(header.Raw(4, &magic));
  if (magic != std::string_view(kChunkMagic, 4)) return Status::IoError("not a chunk (bad magic)");
  COHORT_RETURN_IF_ERROR(header.U8(&compression));
  COHORT_RETURN_IF_ERROR(header.Raw(3, &reserved));
  COHORT_RETURN_IF_ERROR(header.U64(&raw_size));
  COHORT_RETURN_IF_ERROR(header.U64(&stored_size));
  COHORT_RETURN_IF_ERROR(header.U64(&checksum));
  if (object.size() - kChunkHeaderSize != stored_size) {
    return Status::IoError("truncated: header says " +
                           std::to_string(kChunkHeaderSize + stored_size) + " bytes, object has " +
                           std::to_string(object.size()));
  }
  const uint64_t actual = Checksum64(object.substr(0, 24), object.substr(kChunkHeaderSize));
  if (actual != checksum) {
    return Status::IoError("checksum mismatch (header " + std::to_string(checksum) + ", data " +
                           std::to_string(actual) + "): corrupted");
  }
  if (compression > static_cast<uint8_t>(Compression::kLz4)) {
    return Status::IoError("unknown compression " + std::to_string(compression));
  }
  DecodedChunk chunk;
  size_t start = 0;  // where the raw payload begins in chunk.payload_
  if (compression == static_cast<uint8_t>(Compression::kNone)) {
    // Keep the object itself: no copy of an uncompressed chunk.
    if (raw_size != stored_size) return Status::IoError("raw and stored sizes differ");
    chunk.owner_ = std::move(stored_object.owner);
    chunk.payload_ = object;
    start = kChunkHeaderSize;
  } else {
    Result<std::string> payload = Decompress(static_cast<Compression>(compression),
                                             object.substr(kChunkHeaderSize), raw_size);
    if (!payload.ok()) return payload.status();
    ObjectBytes decompressed = ObjectBytes::Own(std::move(*payload));
    chunk.owner_ = std::move(decompressed.owner);
    chunk.payload_ = decompressed.bytes;
  }
  ByteReader r(chunk.payload_.substr(start), "chunk payload");
  uint32_t n = 0;
  COHORT_RETURN_IF_ERROR(r.U32(&n));
  if (uint64_t{n} * 16 + 8 > r.left()) return Status::IoError("sample count overruns the chunk");
  chunk.ids_.resize(n);
  chunk.offsets_.resize(n + 1);
  for (uint64_t& id : chunk.ids_) COHORT_RETURN_IF_ERROR(r.U64(&id));
  for (uint64_t& off : chunk.offsets_) COHORT_RETURN_IF_ERROR(r.U64(&off));
  chunk.records_start_ = start + r.pos();
  for (uint32_t i = 0; i < n; ++i) {
    if (chunk.offsets_[i] > chunk.offsets_[i + 1])
      return Status::IoError("offset table not sorted");
  }
  if (chunk.offsets_[0] != 0 || chunk.offsets_[n] != r.left()) {
    return Status::IoError("offset table does not cover the records");
  }
  return chunk;
}

ChunkBuilder DecodedChunk::ToBuilder() const {
  ChunkBuilder b;
  for (size_t i = 0; i < size(); ++i) b.Add(ids_[i], std::string(record(i)));
  return b;
}

}  // namespace cohort::data
