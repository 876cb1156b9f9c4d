// AutotuneLog: the CSV file COHORT_AUTOTUNE_LOG names. Rank 0 writes each
// measured sample; every rank that writes (all with "{rank}" in the path)
// writes each change it applied, at which negotiation round and after how
// many allreduces, and the final choice. Columns:
//   event,sample,round,allreduces,fusion_threshold_bytes,cycle_time_ms,
//   small_message_bytes,single_copy_bytes,score_bytes_per_s,median_step_ms
// event: warmup | sample (a measurement), apply | final (a change).
#ifndef COHORT_ENGINE_AUTOTUNE_LOG_H_
#define COHORT_ENGINE_AUTOTUNE_LOG_H_

#include <cstdio>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "engine/autotuner.h"
#include "engine/tuning.h"

namespace cohort {

class AutotuneLog {
 public:
  // Opens (truncates) `path` and writes the header.
  static Result<std::unique_ptr<AutotuneLog>> Open(const std::string& path);
  ~AutotuneLog();

  void Sample(const AutotuneSample& s);
  void Applied(const TuningOrder& order, uint64_t round, uint64_t allreduces);

 private:
  AutotuneLog(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  void Row(const char* event, int sample, const std::string& round, const std::string& allreduces,
           const TuningValues& v, const std::string& score, const std::string& step_ms);

  std::FILE* file_;
  const std::string path_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_AUTOTUNE_LOG_H_
