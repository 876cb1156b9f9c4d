// AutotuneLog: CSV rows, flushed as written so a running job's log is readable.
#include "engine/autotune_log.h"

#include <cerrno>
#include <cstring>

namespace cohort {
namespace {

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Result<std::unique_ptr<AutotuneLog>> AutotuneLog::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::IoError("cannot write the autotune log '" + path + "': " + std::strerror(errno));
  }
  std::fputs(
      "event,sample,round,allreduces,fusion_threshold_bytes,cycle_time_ms,small_message_bytes,"
      "single_copy_bytes,score_bytes_per_s,median_step_ms\n",
      file);
  std::fflush(file);
  return std::unique_ptr<AutotuneLog>(new AutotuneLog(file, path));
}

AutotuneLog::~AutotuneLog() { std::fclose(file_); }

void AutotuneLog::Sample(const AutotuneSample& s) {
  Row(s.sample < 0 ? "warmup" : "sample", s.sample, "", "", s.values, Number(s.score),
      Number(s.median_step_s * 1e3));
}

void AutotuneLog::Applied(const TuningOrder& order, uint64_t round, uint64_t allreduces) {
  Row(order.final ? "final" : "apply", order.sample, std::to_string(round),
      std::to_string(allreduces), order.values, order.final ? Number(order.score) : "", "");
}

void AutotuneLog::Row(const char* event, int sample, const std::string& round,
                      const std::string& allreduces, const TuningValues& v,
                      const std::string& score, const std::string& step_ms) {
  std::fprintf(
      file_, "%s,%s,%s,%s,%llu,%s,%llu,%llu,%s,%s\n", event,
      sample < 0 ? "" : std::to_string(sample).c_str(), round.c_str(), allreduces.c_str(),
      static_cast<unsigned long long>(v.fusion_threshold_bytes), Number(v.cycle_time_ms).c_str(),
      static_cast<unsigned long long>(v.small_message_bytes),
      static_cast<unsigned long long>(v.single_copy_bytes), score.c_str(), step_ms.c_str());
  std::fflush(file_);
}

}  // namespace cohort
