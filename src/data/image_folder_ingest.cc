// Image folder ingest (IngestImageFolder in include/cohort/data.h): list,
// read in parallel, append in order, commit.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "cohort/data.h"
#include "data/image_decode.h"
#include "data/storage.h"

namespace cohort::data {

namespace {

namespace fs = std::filesystem;

constexpr size_t kBlock = 512;  // files read while the previous block is appended

struct ImageFile {
  std::string path;
  int64_t label = 0;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

Status ListImages(const std::string& dir, ImageFolderIngestResult* result,
                  std::vector<ImageFile>* files) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::InvalidArgument(dir + " is not a directory");
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory()) result->classes.push_back(e.path().filename().string());
  }
  if (ec) return Status::IoError("cannot list " + dir + ": " + ec.message());
  std::sort(result->classes.begin(), result->classes.end());
  if (result->classes.empty())
    return Status::InvalidArgument(dir + " has no class folders (expected DIR/CLASS/IMAGE)");
  for (size_t label = 0; label < result->classes.size(); ++label) {
    std::vector<std::string> names;
    const fs::path class_dir = fs::path(dir) / result->classes[label];
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(class_dir, ec)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = Lower(e.path().extension().string());
      if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") {
        names.push_back(e.path().string());
      } else {
        ++result->skipped;
      }
    }
    if (ec) return Status::IoError("cannot list " + class_dir.string() + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (std::string& n : names) files->push_back({std::move(n), int64_t(label)});
  }
  return Status::OK();
}

// The file's bytes, checked to be a JPEG or PNG the loader can decode (its header parses).
Result<std::string> ReadImage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (in.bad()) return Status::IoError("cannot read " + path);
  Result<Box> size = ImageSize(bytes);
  if (!size.ok()) return size.status().WithContext(path);
  return bytes;
}

// Reads files[begin, end) with `threads` threads; the first error wins.
Result<std::vector<std::string>> ReadBlock(const std::vector<ImageFile>& files, size_t begin,
                                           size_t end, int threads) {
  std::vector<std::string> out(end - begin);
  std::vector<Status> errors(end - begin);
  std::atomic<size_t> next{begin};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < end;) {
      Result<std::string> bytes = ReadImage(files[i].path);
      if (bytes.ok())
        out[i - begin] = std::move(*bytes);
      else
        errors[i - begin] = bytes.status();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const Status& s : errors) {
    if (!s.ok()) return s;
  }
  return out;
}

Result<std::unique_ptr<Writer>> OpenOrCreate(const std::string& location, const Schema& schema,
                                             const WriterOptions& options, bool* created) {
  Result<std::unique_ptr<Storage>> storage = OpenStorage(location, false);
  Result<bool> exists = storage.ok() ? (*storage)->Exists("format") : Result<bool>(false);
  if (!exists.ok()) return exists.status();
  *created = !*exists;
  if (*created) {
    // Nothing is written until the commit, so a failed first ingest leaves
    // no dataset; a failed later one leaves it as it was (appends stay in memory).
    WriterOptions deferred = options;
    deferred.create_at_commit = true;
    return Writer::Create(location, schema, deferred);
  }
  Result<std::unique_ptr<Writer>> writer = Writer::Open(location, options);
  if (!writer.ok()) return writer;
  const Schema& have = (*writer)->schema();
  if (have.size() != 2 || have[0].name != schema[0].name || have[0].kind != ColumnKind::kImage ||
      have[1].name != schema[1].name || have[1].kind != ColumnKind::kLabel) {
    return Status::InvalidArgument("dataset " + location + " has a different schema than image '" +
                                   schema[0].name + "' and label '" + schema[1].name + "'");
  }
  return writer;
}

std::string DefaultMessage(const std::string& dir, const std::vector<std::string>& classes) {
  std::string m = "ingest imagefolder " + dir + ": " + std::to_string(classes.size()) + " classes";
  for (size_t i = 0; i < classes.size(); ++i) {
    m += i > 0 ? ", " : ": ";
    m += classes[i];
  }
  return m;
}

}  // namespace

Result<ImageFolderIngestResult> IngestImageFolder(const std::string& dir,
                                                  const std::string& location,
                                                  ImageFolderIngestOptions options) {
  ImageFolderIngestResult result;
  std::vector<ImageFile> files;
  COHORT_RETURN_IF_ERROR(ListImages(dir, &result, &files));
  const Schema schema = {{options.image_column, ColumnKind::kImage},
                         {options.label_column, ColumnKind::kLabel}};
  Result<std::unique_ptr<Writer>> writer =
      OpenOrCreate(location, schema, options.writer, &result.ingest.created);
  if (!writer.ok()) return writer.status();
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  auto read = [&](size_t begin) {
    return std::async(std::launch::async, ReadBlock, std::cref(files), begin,
                      std::min(files.size(), begin + kBlock), threads);
  };
  std::future<Result<std::vector<std::string>>> pending = read(0);
  for (size_t begin = 0; begin < files.size(); begin += kBlock) {
    Result<std::vector<std::string>> block = pending.get();
    if (!block.ok()) return block.status();
    if (begin + kBlock < files.size()) pending = read(begin + kBlock);
    for (size_t k = 0; k < block->size(); ++k) {
      const ImageFile& f = files[begin + k];
      Status s = (*writer)->Append({Value::Image(std::move((*block)[k])), Value::Label(f.label)});
      if (!s.ok()) return s.WithContext(f.path);
    }
    if (options.progress) options.progress(begin + block->size(), files.size());
  }
  Result<std::string> commit = (*writer)->Commit(
      {options.message.empty() ? DefaultMessage(dir, result.classes) : options.message,
       options.author, options.command});
  if (!commit.ok()) return commit.status();
  result.ingest.samples = files.size();
  result.ingest.commit = *commit;
  return result;
}

}  // namespace cohort::data
