// `ingest numpy`: streams the rows of a .npy file into a commit.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cohort/data.h"
#include "data/npy.h"
#include "data/storage.h"

namespace cohort::data {

namespace {

constexpr size_t kHeaderProbe = 64 << 10;
constexpr uint64_t kReadBatchBytes = 8 << 20;  // rows are read in pieces of about this size

Status ReadAt(int fd, uint64_t offset, size_t len, std::string* out, const std::string& file) {
  out->resize(len);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, out->data() + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("cannot read " + file + ": " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  return Status::OK();
}

Result<std::unique_ptr<Writer>> OpenOrCreate(const std::string& location, const Column& column,
                                             const WriterOptions& options, bool* created) {
  Result<std::unique_ptr<Storage>> storage = OpenStorage(location, false);
  Result<bool> exists = storage.ok() ? (*storage)->Exists("format") : Result<bool>(false);
  if (!exists.ok()) return exists.status();
  *created = !*exists;
  if (*created) {  // nothing written before the commit: a failed first ingest leaves nothing
    WriterOptions deferred = options;
    deferred.create_at_commit = true;
    return Writer::Create(location, {column}, deferred);
  }
  Result<std::unique_ptr<Writer>> writer = Writer::Open(location, options);
  if (!writer.ok()) return writer;
  const Schema& schema = (*writer)->schema();
  if (schema.size() != 1 || schema[0].name != column.name || schema[0].kind != ColumnKind::kArray ||
      schema[0].dtype != column.dtype) {
    return Status::InvalidArgument("dataset " + location + " has a different schema than one " +
                                   DataTypeName(column.dtype) + " array column '" + column.name +
                                   "'");
  }
  return writer;
}

}  // namespace

Result<IngestResult> IngestNumpy(const std::string& location, const std::string& file,
                                 NumpyIngestOptions options) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + file + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return Status::IoError("cannot stat " + file + ": " + std::strerror(errno));
  std::string prefix;
  COHORT_RETURN_IF_ERROR(ReadAt(fd, 0, kHeaderProbe, &prefix, file));
  Result<NpyHeader> header = ParseNpyHeader(prefix);
  if (!header.ok()) return header.status().WithContext(file);
  if (header->shape.empty())
    return Status::InvalidArgument(file + ": a 0-d array has no rows to ingest");

  const std::vector<uint64_t> row_shape(header->shape.begin() + 1, header->shape.end());
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  uint64_t row_bytes = DataTypeSize(header->dtype);
  for (uint64_t d : row_shape) {
    if (d != 0 && row_bytes > file_size / d)
      return Status::InvalidArgument(file + ": shape exceeds the file");
    row_bytes *= d;
  }
  const uint64_t rows = header->shape[0];
  if (row_bytes != 0 && rows > file_size / row_bytes) {
    return Status::InvalidArgument(file + ": header promises more rows than the file holds");
  }
  const uint64_t expected = header->data_offset + rows * row_bytes;
  if (static_cast<uint64_t>(st.st_size) != expected) {
    return Status::InvalidArgument(file + ": header promises " + std::to_string(expected) +
                                   " bytes, file has " + std::to_string(st.st_size));
  }

  IngestResult result;
  Column column{options.column, ColumnKind::kArray, header->dtype};
  if (!options.ragged) column.shape = row_shape;  // for a new dataset; an old one keeps its own
  Result<std::unique_ptr<Writer>> writer =
      OpenOrCreate(location, column, options.writer, &result.created);
  if (!writer.ok()) return writer.status();
  const uint64_t batch_rows =
      row_bytes == 0 ? rows : std::max<uint64_t>(1, kReadBatchBytes / row_bytes);
  std::string batch;
  for (uint64_t row = 0; row < rows; row += batch_rows) {
    const uint64_t n = std::min(batch_rows, rows - row);
    COHORT_RETURN_IF_ERROR(
        ReadAt(fd, header->data_offset + row * row_bytes, n * row_bytes, &batch, file));
    if (batch.size() != n * row_bytes) return Status::IoError(file + " shrank while being read");
    for (uint64_t k = 0; k < n; ++k) {
      Status s =
          (*writer)->Append({Value::Array(header->dtype, row_shape, batch.data() + k * row_bytes)});
      if (!s.ok()) return s.WithContext(file + ", row " + std::to_string(row + k));
    }
  }
  Result<std::string> commit =
      (*writer)->Commit({options.message.empty() ? "ingest " + file : options.message,
                         options.author, options.command});
  if (!commit.ok()) return commit.status();
  result.samples = rows;
  result.commit = *commit;
  return result;
}

}  // namespace cohort::data
