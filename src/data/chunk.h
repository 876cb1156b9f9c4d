// Chunk objects: a run of whole samples with their ids, an offset table and a
// checksummed, optionally compressed payload. Layout: docs/dataset-format.md.
#ifndef COHORT_DATA_CHUNK_H_
#define COHORT_DATA_CHUNK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/data.h"
#include "data/storage.h"

namespace cohort::data {

inline constexpr size_t kChunkHeaderSize = 32;

// A chunk being built or edited: sample ids and encoded records, in order.
struct ChunkBuilder {
  std::vector<uint64_t> ids;
  std::vector<std::string> records;
  uint64_t raw_bytes = 0;  // sum of record sizes

  void Add(uint64_t id, std::string record) {
    raw_bytes += record.size();
    ids.push_back(id);
    records.push_back(std::move(record));
  }
  size_t size() const { return ids.size(); }
};

// The stored object bytes for `chunk`.
Result<std::string> EncodeChunk(const ChunkBuilder& chunk, Compression c, int level);

// A chunk read back: its raw payload and a view of each record.
class DecodedChunk {
 public:
  // Checks the header, the checksum and the offset table. Errors say what is
  // wrong; the caller adds which dataset, commit and chunk.
  static Result<DecodedChunk> Decode(std::string object);
  // The same over bytes someone else owns (a mapped file): an uncompressed
  // chunk keeps `object.owner` alive and reads its records in place.
  static Result<DecodedChunk> Decode(ObjectBytes object);

  size_t size() const { return ids_.size(); }
  uint64_t id(size_t i) const { return ids_[i]; }
  std::string_view record(size_t i) const {
    return payload_.substr(records_start_ + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  ChunkBuilder ToBuilder() const;

 private:
  std::shared_ptr<const void> owner_;  // keeps payload_'s bytes alive
  std::string_view payload_;
  size_t records_start_ = 0;
  std::vector<uint64_t> ids_;
  std::vector<uint64_t> offsets_;  // size()+1 entries, relative to records_start_
};

// Sample <-> record bytes, checked against the schema.
Result<std::string> EncodeRecord(const Schema& schema, const Sample& sample);
Result<Sample> DecodeRecord(const Schema& schema, std::string_view record);

}  // namespace cohort::data

#endif  // COHORT_DATA_CHUNK_H_
