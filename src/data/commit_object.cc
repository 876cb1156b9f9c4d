// Commit object encoding and the per-commit chunk index.
#include "data/commit_object.h"

#include <algorithm>

#include "data/bytes.h"
#include "data/hash.h"

namespace cohort::data {

namespace {

constexpr char kCommitMagic[4] = {'C', 'M', 'T', '1'};
constexpr uint32_t kFlagColumnShapes = 1;  // a shape declaration per column follows the columns

Status GetShapes(ByteReader* r, Schema* schema) {
  for (Column& col : *schema) {
    uint8_t fixed = 0, ndim = 0;
    COHORT_RETURN_IF_ERROR(r->U8(&fixed));
    if (fixed > 1) return Status::IoError("commit object has a bad column shape flag");
    if (fixed == 0) continue;
    COHORT_RETURN_IF_ERROR(r->U8(&ndim));
    if (ndim > 32 || col.kind != ColumnKind::kArray)
      return Status::IoError("commit object has a bad shape for column '" + col.name + "'");
    col.shape.emplace(ndim);
    for (uint64_t& d : *col.shape) COHORT_RETURN_IF_ERROR(r->U64(&d));
  }
  return Status::OK();
}

void PutId(ByteWriter* w, const std::string& hex) {
  for (size_t i = 0; i < 32; ++i) {
    w->U8(hex.empty() ? 0 : static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
  }
}

Status GetId(ByteReader* r, std::string* hex) {
  std::string_view raw;
  COHORT_RETURN_IF_ERROR(r->Raw(32, &raw));
  static constexpr char kHex[] = "0123456789abcdef";
  hex->clear();
  bool all_zero = true;
  for (char c : raw) {
    uint8_t b = static_cast<uint8_t>(c);
    all_zero = all_zero && b == 0;
    hex->push_back(kHex[b >> 4]);
    hex->push_back(kHex[b & 15]);
  }
  if (all_zero) hex->clear();
  return Status::OK();
}

}  // namespace

std::string EncodeCommit(const CommitObject& c) {
  ByteWriter w;
  w.Raw(std::string_view(kCommitMagic, 4));
  bool shapes = false;
  for (const Column& col : c.schema) shapes = shapes || col.shape.has_value();
  // Without fixed shapes the object is byte for byte what format 1 always wrote.
  w.U32(shapes ? kFlagColumnShapes : 0);
  PutId(&w, c.parent);
  w.U64(static_cast<uint64_t>(c.time));
  w.Str(c.message);
  w.Str(c.author);
  w.Str(c.command);
  w.U64(c.next_sample_id);
  w.U32(static_cast<uint32_t>(c.schema.size()));
  for (const Column& col : c.schema) {
    w.Str(col.name);
    w.U8(static_cast<uint8_t>(col.kind));
    w.U8(static_cast<uint8_t>(col.dtype));
  }
  if (shapes) {
    for (const Column& col : c.schema) {
      w.U8(col.shape ? 1 : 0);
      if (!col.shape) continue;
      w.U8(static_cast<uint8_t>(col.shape->size()));
      for (uint64_t d : *col.shape) w.U64(d);
    }
  }
  w.U64(c.chunks.size());
  for (const ChunkRef& ref : c.chunks) {
    PutId(&w, ref.id);
    w.U64(ref.num_samples);
    w.U64(ref.stored_size);
  }
  w.U64(Checksum64(w.out()));
  return std::move(w.out());
}

Result<CommitObject> DecodeCommit(std::string_view bytes) {
  if (bytes.size() < 8) return Status::IoError("commit object is truncated");
  uint64_t stored_sum = 0;
  ByteReader tail(bytes.substr(bytes.size() - 8), "commit checksum");
  COHORT_RETURN_IF_ERROR(tail.U64(&stored_sum));
  std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (Checksum64(body) != stored_sum) return Status::IoError("commit object checksum mismatch");

  ByteReader r(body, "commit object");
  CommitObject c;
  std::string_view magic;
  uint32_t flags = 0, ncols = 0;
  uint64_t time = 0, nchunks = 0;
  COHORT_RETURN_IF_ERROR(r.Raw(4, &magic));
  if (magic != std::string_view(kCommitMagic, 4))
    return Status::IoError("not a commit (bad magic)");
  COHORT_RETURN_IF_ERROR(r.U32(&flags));
  if ((flags & ~kFlagColumnShapes) != 0)
    return Status::IoError("commit object has unknown flags " + std::to_string(flags));
  COHORT_RETURN_IF_ERROR(GetId(&r, &c.parent));
  COHORT_RETURN_IF_ERROR(r.U64(&time));
  c.time = static_cast<int64_t>(time);
  COHORT_RETURN_IF_ERROR(r.Str(&c.message));
  COHORT_RETURN_IF_ERROR(r.Str(&c.author));
  COHORT_RETURN_IF_ERROR(r.Str(&c.command));
  COHORT_RETURN_IF_ERROR(r.U64(&c.next_sample_id));
  COHORT_RETURN_IF_ERROR(r.U32(&ncols));
  for (uint32_t i = 0; i < ncols; ++i) {
    Column col;
    uint8_t kind = 0, dtype = 0;
    COHORT_RETURN_IF_ERROR(r.Str(&col.name));
    COHORT_RETURN_IF_ERROR(r.U8(&kind));
    COHORT_RETURN_IF_ERROR(r.U8(&dtype));
    if (kind > static_cast<uint8_t>(ColumnKind::kJson) || !IsValidDataType(dtype)) {
      return Status::IoError("commit object has a column of unknown kind or dtype");
    }
    col.kind = static_cast<ColumnKind>(kind);
    col.dtype = static_cast<DataType>(dtype);
    c.schema.push_back(std::move(col));
  }
  if (flags & kFlagColumnShapes) COHORT_RETURN_IF_ERROR(GetShapes(&r, &c.schema));
  COHORT_RETURN_IF_ERROR(r.U64(&nchunks));
  if (nchunks > r.left() / 48) return Status::IoError("chunk count overruns the commit object");
  c.chunks.resize(nchunks);
  for (ChunkRef& ref : c.chunks) {
    COHORT_RETURN_IF_ERROR(GetId(&r, &ref.id));
    COHORT_RETURN_IF_ERROR(r.U64(&ref.num_samples));
    COHORT_RETURN_IF_ERROR(r.U64(&ref.stored_size));
  }
  if (r.left() != 0) return Status::IoError("commit object has stray bytes");
  return c;
}

CommitInfo CommitInfoOf(const std::string& id, const CommitObject& c) {
  CommitInfo info;
  info.id = id;
  info.parent = c.parent;
  info.message = c.message;
  info.author = c.author;
  info.command = c.command;
  info.time = c.time;
  info.num_chunks = c.chunks.size();
  for (const ChunkRef& ref : c.chunks) {
    info.num_samples += ref.num_samples;
    info.stored_bytes += ref.stored_size;
    info.chunk_samples.push_back(ref.num_samples);
  }
  info.schema = c.schema;
  return info;
}

ChunkIndex::ChunkIndex(const std::vector<ChunkRef>& chunks) {
  uint64_t total = 0;
  for (const ChunkRef& ref : chunks) ends_.push_back(total += ref.num_samples);
}

std::pair<size_t, uint64_t> ChunkIndex::Find(uint64_t i) const {
  size_t k = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin());
  uint64_t start = k == 0 ? 0 : ends_[k - 1];
  return {k, i - start};
}

}  // namespace cohort::data
