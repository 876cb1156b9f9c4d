// Timeline implementation: recording threads append to `pending_` under a
// mutex; the writer thread swaps it with an empty batch, formats the events as
// JSON and writes them with one write(2) per batch.
#include "engine/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

#include "common/logging.h"

namespace cohort {
namespace {

// Offsets into a batch's bytes are 32-bit to keep records small.
constexpr size_t kMaxBatchBytes = std::numeric_limits<uint32_t>::max();

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // 24 chars always fit an int64
  out->append(buf, end);
}

// Writes all of `data`, retrying short writes and EINTR.
Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::IoError("timeline: write to '" + path + "' failed: " + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void TimelineArgs::Key(std::string_view key) {
  if (json_.empty()) {
    json_.push_back('{');
  } else {
    json_.back() = ',';  // the closing brace becomes a separator
  }
  AppendJsonString(&json_, key);
  json_.push_back(':');
}

TimelineArgs& TimelineArgs::Int(std::string_view key, int64_t value) {
  Key(key);
  AppendInt(&json_, value);
  json_.push_back('}');
  return *this;
}

TimelineArgs& TimelineArgs::Bool(std::string_view key, bool value) {
  Key(key);
  json_.append(value ? "true" : "false");
  json_.push_back('}');
  return *this;
}

TimelineArgs& TimelineArgs::Text(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(&json_, value);
  json_.push_back('}');
  return *this;
}

Result<std::unique_ptr<Timeline>> Timeline::Open(const std::string& path, int rank,
                                                 const TimelineOptions& options) {
  if (rank < 0) {
    return Status::InvalidArgument("timeline: rank must be >= 0, got " + std::to_string(rank));
  }
  if (options.max_pending_events == 0 || options.max_pending_bytes == 0 ||
      options.flush_interval.count() <= 0) {
    return Status::InvalidArgument(
        "timeline: max_pending_events, max_pending_bytes and flush_interval must be > 0");
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("timeline: cannot open '" + path +
                           "' for writing: " + std::strerror(errno));
  }
  std::unique_ptr<Timeline> timeline(new Timeline(path, fd, rank, options));
  // The header goes out before Open returns, so even an empty trace loads.
  timeline->WriteHeader();
  if (!timeline->write_status_.ok()) {
    timeline->closed_ = true;  // no writer to join, nothing more to write
    ::close(fd);
    return timeline->write_status_;
  }
  timeline->writer_ = std::thread([t = timeline.get()] { t->WriterLoop(); });
  return timeline;
}

Timeline::Timeline(std::string path, int fd, int rank, const TimelineOptions& options)
    : path_(std::move(path)), fd_(fd), rank_(rank), options_(options), origin_(Clock::now()) {}

Timeline::~Timeline() {
  Status status = Close();
  if (!status.ok()) {
    COHORT_LOG(kWarning) << status.ToString();
  }
}

void Timeline::Begin(std::string_view tensor, std::string_view phase, Clock::time_point at) {
  Record(Kind::kBegin, tensor, phase, at, {}, {});
}

void Timeline::End(std::string_view tensor, Clock::time_point at) {
  Record(Kind::kEnd, tensor, {}, at, {}, {});
}

void Timeline::Span(std::string_view tensor, std::string_view phase, Clock::time_point begin,
                    Clock::time_point end, const TimelineArgs& args) {
  Record(Kind::kComplete, tensor, phase, begin, end - begin, args.json());
}

void Timeline::Instant(std::string_view tensor, std::string_view name, Clock::time_point at,
                       const TimelineArgs& args) {
  Record(Kind::kInstant, tensor, name, at, {}, args.json());
}

// The hot path: no allocation in steady state (the batch keeps its capacity
// across swaps), no formatting, no I/O. Time is converted to an integer here
// because it is one subtraction.
void Timeline::Record(Kind kind, std::string_view tensor, std::string_view name,
                      Clock::time_point at, Clock::duration dur, std::string_view args) {
  const size_t need = tensor.size() + name.size() + args.size();
  const size_t byte_limit = std::min(options_.max_pending_bytes, kMaxBatchBytes);
  Event e{};
  e.kind = kind;
  e.at_ns = std::chrono::nanoseconds(at - origin_).count();
  e.dur_ns = std::chrono::nanoseconds(dur).count();
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return;
  Batch& b = pending_;
  if (b.records.size() >= options_.max_pending_events || need > byte_limit - b.bytes.size()) {
    events_dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto add = [&b](std::string_view s, uint32_t* off, uint32_t* len) {
    *off = static_cast<uint32_t>(b.bytes.size());
    *len = static_cast<uint32_t>(s.size());
    b.bytes.append(s);
  };
  add(tensor, &e.tensor_off, &e.tensor_len);
  add(name, &e.name_off, &e.name_len);
  add(args, &e.args_off, &e.args_len);
  b.records.push_back(e);
  // Wake the writer early only once per batch, when it is half full.
  if (b.records.size() == options_.max_pending_events / 2 + 1) wake_writer_.notify_one();
}

void Timeline::WriterLoop() {
  for (;;) {
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_writer_.wait_for(lock, options_.flush_interval, [this] {
        return stop_ || pending_.records.size() > options_.max_pending_events / 2;
      });
      std::swap(pending_, writing_);
      stop = stop_;
    }
    FormatBatch(writing_);
    writing_.records.clear();
    writing_.bytes.clear();
    if (stop) return;
  }
}

void Timeline::WriteHeader() {
  out_.clear();
  StartEvent("process_name", "M", 0);
  out_.append(",\"args\":{\"name\":\"cohort rank ");
  AppendInt(&out_, rank_);
  out_.append("\",\"rank\":");
  AppendInt(&out_, rank_);
  out_.append("}}");
  StartEvent("thread_name", "M", 0);
  out_.append(",\"args\":{\"name\":\"rank ");
  AppendInt(&out_, rank_);
  out_.append("\"}}");
  StartEvent("process_sort_index", "M", 0);
  out_.append(",\"args\":{\"sort_index\":0}}");
  Flush(0);
}

void Timeline::FormatBatch(const Batch& batch) {
  out_.clear();
  uint64_t written = 0;
  for (const Event& e : batch.records) {
    if (FormatEvent(e, batch)) ++written;
  }
  FormatDropped(events_dropped_.load(std::memory_order_relaxed));
  Flush(written);
}

bool Timeline::FormatEvent(const Event& e, const Batch& batch) {
  auto view = [&batch](uint32_t off, uint32_t len) {
    return std::string_view(batch.bytes).substr(off, len);
  };
  Row& row = RowFor(view(e.tensor_off, e.tensor_len));
  std::string_view name = view(e.name_off, e.name_len);
  switch (e.kind) {
    case Kind::kBegin:
      ++row.open_phases;
      StartEvent(name, "B", row.pid);
      break;
    case Kind::kEnd:
      if (row.open_phases == 0) return false;  // unmatched: keep the file well nested
      --row.open_phases;
      StartEvent({}, "E", row.pid);
      break;
    case Kind::kComplete:
      StartEvent(name, "X", row.pid);
      AppendTimestamp("dur", e.dur_ns);
      break;
    case Kind::kInstant:
      StartEvent(name, "i", row.pid);
      out_.append(",\"s\":\"t\"");
      break;
  }
  AppendTimestamp("ts", e.at_ns);
  AppendArgs(view(e.args_off, e.args_len));
  out_.push_back('}');
  return true;
}

// Written each batch in which the count grew, so the count survives a crash
// and the last such event carries the final total.
void Timeline::FormatDropped(uint64_t dropped) {
  if (dropped == dropped_reported_) return;
  if (dropped_reported_ == 0) {  // once: the running count is in the file
    COHORT_LOG(kWarning) << "timeline '" << path_ << "': the writer fell behind; dropping events";
  }
  dropped_reported_ = dropped;
  StartEvent("timeline dropped events", "i", 0);
  out_.append(",\"s\":\"p\"");
  AppendTimestamp("ts", std::chrono::nanoseconds(Clock::now() - origin_).count());
  out_.append(",\"args\":{\"dropped\":");
  AppendInt(&out_, static_cast<int64_t>(dropped));
  out_.append("}}");
}

// A tensor seen for the first time gets the next pid and its metadata rows.
Timeline::Row& Timeline::RowFor(std::string_view tensor) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  const int pid = static_cast<int>(rows_.size()) + 1;
  StartEvent("process_name", "M", pid);
  out_.append(",\"args\":{\"name\":");
  AppendJsonString(&out_, tensor);
  out_.append("}}");
  StartEvent("process_sort_index", "M", pid);
  out_.append(",\"args\":{\"sort_index\":");
  AppendInt(&out_, pid);
  out_.append("}}");
  StartEvent("thread_name", "M", pid);
  out_.append(",\"args\":{\"name\":\"rank ");
  AppendInt(&out_, rank_);
  out_.append("\"}}");
  return rows_.emplace(std::string(tensor), Row{pid, 0}).first->second;
}

// Opens an event object up to and including its tid; the caller adds the rest
// and the closing brace. Commas go before events, not after, so Close() only
// has to append "]" and a truncated file ends with a whole event.
void Timeline::StartEvent(std::string_view name, const char* ph, int pid) {
  out_.append(first_event_ ? "[\n{" : ",\n{");
  first_event_ = false;
  if (!name.empty() || ph[0] != 'E') {
    out_.append("\"name\":");
    AppendJsonString(&out_, name);
    out_.push_back(',');
  }
  out_.append("\"ph\":\"");
  out_.append(ph);
  out_.append("\",\"pid\":");
  AppendInt(&out_, pid);
  out_.append(",\"tid\":");
  AppendInt(&out_, rank_);
}

// `args_json` was built by TimelineArgs: a complete object or empty.
void Timeline::AppendArgs(std::string_view args_json) {
  if (args_json.empty()) return;
  out_.append(",\"args\":");
  out_.append(args_json);
}

// Chrome trace times are microseconds; three decimals keep nanoseconds.
void Timeline::AppendTimestamp(const char* key, int64_t ns) {
  out_.append(",\"");
  out_.append(key);
  out_.append("\":");
  if (ns < 0) out_.push_back('-');
  const uint64_t abs_ns = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  AppendInt(&out_, static_cast<int64_t>(abs_ns / 1000));
  const unsigned frac = static_cast<unsigned>(abs_ns % 1000);
  out_.push_back('.');
  out_.push_back(static_cast<char>('0' + frac / 100));
  out_.push_back(static_cast<char>('0' + frac / 10 % 10));
  out_.push_back(static_cast<char>('0' + frac % 10));
}

// After the first failed write nothing more is written (a half-written file
// cannot be repaired); the failure is reported once and returned by Close().
void Timeline::Flush(uint64_t recorded_events) {
  if (out_.empty() || !write_status_.ok()) return;
  write_status_ = WriteAll(fd_, out_, path_);
  if (!write_status_.ok()) {
    COHORT_LOG(kWarning) << write_status_.ToString() << "; timeline recording stops";
    return;
  }
  events_written_.fetch_add(recorded_events, std::memory_order_release);
}

Status Timeline::Close() {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  if (closed_) return close_status_;
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    stop_ = true;
  }
  wake_writer_.notify_one();
  if (writer_.joinable()) writer_.join();
  // The writer has drained everything recorded before accepting_ fell.
  out_.assign("\n]\n");
  Flush(0);
  close_status_ = write_status_;
  if (dropped_reported_ > 0) {
    COHORT_LOG(kWarning) << "timeline '" << path_ << "': " << dropped_reported_
                         << " events were dropped in all";
  }
  if (::close(fd_) != 0 && close_status_.ok()) {
    close_status_ =
        Status::IoError("timeline: closing '" + path_ + "' failed: " + std::strerror(errno));
  }
  return close_status_;
}

}  // namespace cohort
