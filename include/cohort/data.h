// cohort datasets: a chunked, versioned, content-addressed sample store.
//
// A dataset is a directory (later: an HTTP or S3 prefix) holding immutable
// chunk and commit objects plus named refs (branches, tags, HEAD). Every
// sample has one value per column; values carry their own shape (ragged
// shapes are fine). The byte-level format is docs/dataset-format.md.
//
//   auto w = data::Writer::Create("/data/mnist", {{"image", ColumnKind::kImage},
//                                                 {"label", ColumnKind::kLabel}});
//   (*w)->Append({data::Value::Image(png_bytes), data::Value::Label(7)});
//   (*w)->Commit({"first 60k"});
//   auto ds = data::Dataset::Open("/data/mnist");  // HEAD; or a branch, tag, commit
//   Result<data::Sample> s = (*ds)->Get(123);
//
// Errors are Status values. A corrupted, truncated or missing chunk is
// reported with the dataset location, the commit and the chunk id. A commit
// that lost a race with another writer fails with kAborted and a message
// starting "conflict:" (see IsConflict).
#ifndef COHORT_DATA_H_
#define COHORT_DATA_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort::data {

// What a column holds. The numeric values are stored in commit objects; never renumber.
enum class ColumnKind : uint8_t {
  kArray = 0,  // N-d array of the column's dtype; each sample has its own shape
  kImage = 1,  // encoded image (JPEG, PNG, ...) kept as bytes: uint8, shape [nbytes]
  kText = 2,   // UTF-8 text: uint8, shape [nbytes]
  kLabel = 3,  // one int64 (class label): int64, shape []
  kJson = 4,   // a JSON document as UTF-8 text: uint8, shape [nbytes]
};
const char* ColumnKindName(ColumnKind kind);  // "array", "image", "text", "label", "json"
Result<ColumnKind> ParseColumnKind(const std::string& name);  // the inverse of ColumnKindName

struct Column {
  std::string name;
  ColumnKind kind = ColumnKind::kArray;
  DataType dtype = DataType::kUInt8;  // only meaningful for kArray; fixed for the other kinds
  // kArray only: the shape every value must have, checked at Append/Update;
  // nullopt declares the column ragged (each sample its own shape).
  std::optional<std::vector<uint64_t>> shape = std::nullopt;
};
// "[4,3]" for a fixed shape, "ragged" for none: how messages and `data info` show it.
std::string ShapeName(const std::optional<std::vector<uint64_t>>& shape);
using Schema = std::vector<Column>;

// One column's value in one sample: the element type, the shape and the
// little-endian element bytes (product(shape) * DataTypeSize(dtype) of them).
struct Value {
  DataType dtype = DataType::kUInt8;
  std::vector<uint64_t> shape;
  std::string bytes;

  static Value Array(DataType dtype, std::vector<uint64_t> shape, const void* data);
  static Value Image(std::string encoded);
  static Value Text(std::string text);
  static Value Json(std::string json);
  static Value Label(int64_t label);

  // The label of a kLabel value (0 when the value is not 8 bytes).
  int64_t label() const;
  bool operator==(const Value&) const = default;
};
using Sample = std::vector<Value>;  // one Value per column, in schema order

enum class Compression : uint8_t { kNone = 0, kZstd = 1, kLz4 = 2 };
const char* CompressionName(Compression c);  // "none", "zstd", "lz4"
Result<Compression> ParseCompression(const std::string& name);

struct WriterOptions {
  std::string branch;                  // branch to commit to; empty: the branch HEAD names
  uint64_t chunk_bytes = 16ull << 20;  // target uncompressed chunk size
  Compression compression = Compression::kNone;
  int compression_level = 0;  // 0: the codec's default
  // Writer::Create only: write nothing to the location until the first
  // Commit(), which then writes the empty creation commit and the new one.
  // A writer dropped before committing (a failed ingest) leaves no dataset.
  bool create_at_commit = false;
  // Called at each step of Commit() with the step's name ("chunk-written",
  // "commit-written", "ref-locked", "ref-replaced"). Tests use it to kill a
  // writer at a chosen point; it may also drive a progress display.
  std::function<void(std::string_view step)> on_commit_step;
};

struct CommitRequest {
  CommitRequest(std::string message = "", std::string author = "", std::string command = "")
      : message(std::move(message)), author(std::move(author)), command(std::move(command)) {}
  std::string message;
  std::string author;   // empty: $USER
  std::string command;  // optional: the command or transform that produced this commit
};

struct CommitInfo {
  std::string id;      // 64 hex digits (SHA-256 of the commit object)
  std::string parent;  // empty for the first commit
  std::string message, author, command;
  int64_t time = 0;  // seconds since the Unix epoch
  uint64_t num_samples = 0;
  uint64_t num_chunks = 0;
  uint64_t stored_bytes = 0;  // sum of the referenced chunk objects' sizes
  std::vector<uint64_t> chunk_samples;  // samples in each chunk, in dataset order
  Schema schema;
};

// A read-only view of one commit. Not thread-safe (it caches the last chunk
// read); open one per thread.
class Dataset {
 public:
  // `location` is a directory. `ref`: a branch, tag, commit id (or unique
  // prefix of at least 4 hex digits) or "HEAD", optionally followed by ~N
  // (N parents back, as in git); empty means HEAD.
  static Result<std::unique_ptr<Dataset>> Open(const std::string& location,
                                               const std::string& ref = "");
  virtual ~Dataset() = default;

  virtual const CommitInfo& commit() const = 0;
  virtual const Schema& schema() const = 0;
  virtual uint64_t size() const = 0;
  // Sample i (0 <= i < size()): binary search over the chunk index, then one
  // chunk read (verified against its checksum) unless it is the cached one.
  virtual Result<Sample> Get(uint64_t i) = 0;
  // The stable id of sample i: assigned at Append, kept across updates; Diff reports ids.
  virtual Result<uint64_t> SampleId(uint64_t i) = 0;
};

// Builds the next commit of one branch. Changes are kept in memory (only the
// chunks they touch) until Commit. Not thread-safe.
class Writer {
 public:
  // A new, empty dataset at `location` (which must not hold one yet) whose
  // first commit on `options.branch` (default "main") has no samples.
  static Result<std::unique_ptr<Writer>> Create(const std::string& location, const Schema& schema,
                                                WriterOptions options = {});
  // Continues the branch `options.branch` (or HEAD's branch) of an existing dataset.
  static Result<std::unique_ptr<Writer>> Open(const std::string& location,
                                              WriterOptions options = {});
  virtual ~Writer() = default;

  virtual const Schema& schema() const = 0;
  virtual uint64_t size() const = 0;            // samples in the working state
  virtual const std::string& base() const = 0;  // commit this writer started from
  virtual Status Append(const Sample& sample) = 0;
  virtual Status Update(uint64_t i, const Sample& sample) = 0;  // keeps the sample's id
  virtual Status Delete(uint64_t i) = 0;                        // later samples move down by one
  // Writes the new chunks and the commit object, then moves the branch from
  // base() to the new commit atomically. Fails with a conflict when the
  // branch no longer points at base(); the writer then stays unchanged.
  // After success base() is the new commit and the writer can go on.
  virtual Result<std::string> Commit(const CommitRequest& request) = 0;
};

// Sample ids (see Dataset::SampleId) that differ between two commits.
struct DiffResult {
  std::vector<uint64_t> added, removed, changed;  // each sorted
};

// History, newest first, following parents from `ref` (empty: HEAD).
Result<std::vector<CommitInfo>> Log(const std::string& location, const std::string& ref = "");
// Reads only the chunks the two commits do not share.
Result<DiffResult> Diff(const std::string& location, const std::string& from,
                        const std::string& to);
// Points HEAD at a branch (HEAD follows it) or, for a tag or commit, at that commit (detached).
Status Checkout(const std::string& location, const std::string& ref);
// Creates refs/heads/NAME or refs/tags/NAME at `ref`; fails if it exists.
Status CreateBranch(const std::string& location, const std::string& name, const std::string& ref);
Status CreateTag(const std::string& location, const std::string& name, const std::string& ref);
// Resolves a ref to a commit id.
Result<std::string> ResolveRef(const std::string& location, const std::string& ref);

struct VerifyReport {
  uint64_t commits = 0, chunks = 0, bytes = 0;
  std::vector<std::string> problems;  // one line each; empty when all is well
};
// Reads every commit reachable from every ref and every chunk they reference,
// checking each checksum and each object's SHA-256 against its name.
Result<VerifyReport> Verify(const std::string& location);

// True for the Status a Commit returns when another writer moved the branch:
// its code, kAborted (a lost compare-and-swap), whatever the message says.
bool IsConflict(const Status& status);

// --- Copying a dataset between storages (`cohort data cp`) ---
// Locations are directories, "s3://bucket/prefix" or (as a source only, since
// HTTP cannot list) never "http(s)://".
struct CopyProgress {
  uint64_t objects_done = 0, objects_total = 0;
  uint64_t bytes_copied = 0;  // bytes written so far (objects already there are skipped)
};
struct CopyOptions {
  std::function<void(const CopyProgress&)> on_progress;  // after each batch of objects
};
struct CopyResult {
  uint64_t copied = 0, skipped = 0, bytes = 0;
};
// Copies every object, then format and HEAD, then the refs, so a copy that
// stops early holds no ref and is never taken for a complete dataset; run
// again, it skips the objects already there. Each chunk and commit object is
// checked against its SHA-256 on the way. Fails when `destination` has refs.
Result<CopyResult> CopyDataset(const std::string& source, const std::string& destination,
                               const CopyOptions& options = {});

// --- Removing what no ref reaches (`cohort data gc`) ---
// An interrupted or failed writer can leave chunk and commit objects that no
// commit reachable from a ref (HEAD, branches, tags) names. Every Writer
// announces itself with a lease object while it is open; gc removes an
// unreachable object only when it is older than the oldest open writer's
// lease and than `min_age_s` (a margin for clocks and for writers that open
// while gc runs). Leases older than `lease_expiry_s` count as left by dead
// writers and are removed too.
struct GcOptions {
  bool dry_run = false;                // report, remove nothing
  int64_t min_age_s = 300;             // keep objects younger than this
  int64_t lease_expiry_s = 24 * 3600;  // older leases are dead writers'
};
struct GcReport {
  uint64_t reachable = 0;    // chunk and commit objects a ref reaches
  uint64_t kept_recent = 0;  // unreachable, but too recent to remove
  std::vector<std::string> removed;      // keys removed (or, dry run, that would be)
  std::vector<std::string> open_leases;  // leases of writers taken to be open
  std::vector<std::string> dead_leases;  // expired leases, removed (or would be)
};
Result<GcReport> CollectGarbage(const std::string& location, const GcOptions& options = {});

// --- Ingest: files into dataset commits (`cohort data ingest`) ---
// Nothing reaches the dataset before the commit: a failed ingest leaves a
// new dataset absent and an existing one as it was.

struct NumpyIngestOptions {
  std::string column = "data";  // the one array column the rows go into
  // A new dataset's column takes the file's row shape as its fixed shape
  // (later ingests must match it) unless declared ragged here.
  bool ragged = false;
  WriterOptions writer;  // branch, chunk size, compression
  std::string message;   // empty: "ingest FILE"
  std::string author;
  std::string command;  // recorded in the commit
};

struct IngestResult {
  uint64_t samples = 0;
  std::string commit;
  bool created = false;  // the dataset did not exist before
};

// Appends every row of the .npy file `file` to the dataset at `location`
// (created with one array column when absent; otherwise its schema must be
// exactly that column) and commits.
Result<IngestResult> IngestNumpy(const std::string& location, const std::string& file,
                                 NumpyIngestOptions options);

// `ingest imagefolder`: a class-per-folder tree of images (torchvision's
// ImageFolder layout, DIR/CLASS/FILE) becomes samples with an image column
// (the encoded file bytes) and a label column (the class's index among the
// sorted folder names). Files are read and checked by several threads while
// the writer appends the previous block, in the same order every time.
struct ImageFolderIngestOptions {
  std::string image_column = "image", label_column = "label";
  int threads = 0;       // readers; 0: one per core
  WriterOptions writer;  // branch, chunk size, compression
  std::string message;   // empty: "ingest imagefolder DIR" and the classes
  std::string author;
  std::string command;
  // Called after each block with images appended so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct ImageFolderIngestResult {
  IngestResult ingest;
  std::vector<std::string> classes;  // label i is classes[i]
  uint64_t skipped = 0;              // files that are not .jpg, .jpeg or .png
};

// Appends every image under `dir` (sorted by class, then file name) to the
// dataset at `location` (created with the two columns when absent) and
// commits. A file that is not a readable JPEG/PNG fails the ingest, naming it.
Result<ImageFolderIngestResult> IngestImageFolder(const std::string& dir,
                                                  const std::string& location,
                                                  ImageFolderIngestOptions options);

}  // namespace cohort::data

#endif  // COHORT_DATA_H_
