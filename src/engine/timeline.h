// Timeline: a per-rank Chrome-trace / Perfetto file with one row per tensor,
// showing each tensor's phases (negotiation, queueing, fusion copies, the
// collective) as they happen. Recording is cheap and never does I/O; a
// background thread formats and writes the events.
//
// File format: the Chrome "JSON Array Format", i.e. "[" followed by one event
// object per line, separated by commas, and "]" written by Close(). The array
// format is chosen over the {"traceEvents": [...]} object format because the
// viewers (chrome://tracing, Perfetto) accept an array whose closing bracket is
// missing, so a rank that crashes or is killed still leaves a loadable trace of
// everything written so far; the object format would need two closing
// brackets and is unloadable without them. After Close() the file is strict
// JSON. Events are written in whole batches by one write(2) each, so a killed
// process leaves complete events only.
//
// Rows: each tensor name gets its own "pid" (numbered in order of first use;
// pid 0 is the timeline's own row) with "process_name" = the tensor name, and
// "tid" = the rank with "thread_name" = "rank N". Begin/End pairs nest per
// tensor row as in Horovod's timeline.
#ifndef COHORT_ENGINE_TIMELINE_H_
#define COHORT_ENGINE_TIMELINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

// Typed arguments of one event (the trace's "args" object), e.g.
// TimelineArgs().Int("fused_tensors", 3).Bool("in_place", true). Each call adds
// one key; the values are formatted (and strings escaped) here, so callers
// never write JSON and the file cannot be corrupted by what they pass.
class TimelineArgs {
 public:
  TimelineArgs& Int(std::string_view key, int64_t value);
  TimelineArgs& Bool(std::string_view key, bool value);
  TimelineArgs& Text(std::string_view key, std::string_view value);
  // The JSON object ("{...}"), or "" when no key was added.
  std::string_view json() const { return json_; }

 private:
  void Key(std::string_view key);
  std::string json_;  // a complete object once a key was added
};

struct TimelineOptions {
  // Memory bound: events (and their name bytes) waiting for the writer. When
  // the writer falls this far behind, new events are dropped and counted, and
  // the file records how many were lost (an instant "timeline dropped events"
  // on pid 0). Each event costs about 48 bytes plus its strings.
  size_t max_pending_events = size_t{1} << 18;
  size_t max_pending_bytes = size_t{16} << 20;
  // How often the writer wakes to write what was recorded, bounding what a
  // crash can lose. It also wakes early when half the buffer is used.
  std::chrono::milliseconds flush_interval{100};
};

class Timeline {
 public:
  // Opens `path` for writing (truncating it) and starts the writer thread.
  // Timestamps in the file are microseconds since this call (steady clock).
  static Result<std::unique_ptr<Timeline>> Open(const std::string& path, int rank,
                                                const TimelineOptions& options = {});
  ~Timeline();  // Close(); a failure is logged.

  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Recording: callable from any thread, concurrently with each other and with
  // Close(). Each one copies its strings into a buffer under a mutex and
  // returns; after Close() they do nothing. `args` become the event's "args"
  // object (left out when empty).

  // Starts `phase` on the tensor's row ("B").
  void Begin(std::string_view tensor, std::string_view phase, Clock::time_point at);
  // Ends the tensor's innermost open phase ("E"). An End with no open phase is
  // not written, so the file stays well nested.
  void End(std::string_view tensor, Clock::time_point at);
  // A phase whose begin and end are both known ("X", complete event).
  void Span(std::string_view tensor, std::string_view phase, Clock::time_point begin,
            Clock::time_point end, const TimelineArgs& args = {});
  // A moment on the tensor's row ("i", thread scope), e.g. "rank 3 ready".
  void Instant(std::string_view tensor, std::string_view name, Clock::time_point at,
               const TimelineArgs& args = {});

  // Writes everything recorded so far, then the closing "]", and joins the
  // writer. Idempotent: later calls return the first call's Status. Fails with
  // kIoError naming the path when any write to the file failed.
  Status Close();

  // Recorded events written to the file so far (metadata rows and the
  // timeline's own bookkeeping events are not counted).
  uint64_t events_written() const { return events_written_.load(std::memory_order_acquire); }
  // Events lost because the writer fell behind (see TimelineOptions).
  uint64_t events_dropped() const { return events_dropped_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }

 private:
  enum class Kind : uint8_t { kBegin, kEnd, kComplete, kInstant };

  // A recorded event; its strings live in the owning Batch's `bytes`.
  struct Event {
    Kind kind;
    int64_t at_ns;   // since origin_
    int64_t dur_ns;  // kComplete only
    uint32_t tensor_off, tensor_len, name_off, name_len, args_off, args_len;
  };
  struct Batch {
    std::vector<Event> records;
    std::string bytes;
  };
  // Per-tensor state, owned by the writer thread.
  struct Row {
    int pid;
    int open_phases;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  Timeline(std::string path, int fd, int rank, const TimelineOptions& options);

  void Record(Kind kind, std::string_view tensor, std::string_view name, Clock::time_point at,
              Clock::duration dur, std::string_view args);
  void WriterLoop();
  // Writer-thread helpers: format into out_, then write out_ with one write(2).
  void WriteHeader();
  void FormatBatch(const Batch& batch);
  bool FormatEvent(const Event& e, const Batch& batch);
  void FormatDropped(uint64_t dropped);
  Row& RowFor(std::string_view tensor);
  void StartEvent(std::string_view name, const char* ph, int pid);
  void AppendArgs(std::string_view args_json);
  void AppendTimestamp(const char* key, int64_t ns);
  void Flush(uint64_t recorded_events);

  const std::string path_;
  const int fd_;
  const int rank_;
  const TimelineOptions options_;
  const Clock::time_point origin_;

  std::mutex mu_;  // guards pending_, accepting_, stop_
  std::condition_variable wake_writer_;
  Batch pending_;
  bool accepting_ = true;
  bool stop_ = false;

  std::atomic<uint64_t> events_written_{0};
  std::atomic<uint64_t> events_dropped_{0};

  // Owned by the writer thread (and by Close() once the writer has joined).
  Batch writing_;
  std::string out_;
  bool first_event_ = true;
  uint64_t dropped_reported_ = 0;
  std::unordered_map<std::string, Row, StringHash, std::equal_to<>> rows_;
  Status write_status_;

  std::mutex close_mu_;  // serializes Close()
  bool closed_ = false;  // guarded by close_mu_
  Status close_status_;  // guarded by close_mu_
  std::thread writer_;
};

// Appends `s` to `out` as a quoted JSON string, escaping quotes, backslashes
// and control characters. Bytes >= 0x80 are copied as they are (UTF-8 names
// stay readable).
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace cohort

#endif  // COHORT_ENGINE_TIMELINE_H_
