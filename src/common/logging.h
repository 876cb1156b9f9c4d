// Minimal logging to stderr. Each line is written with one write(2) so lines
// from concurrent threads and processes do not interleave.
#ifndef COHORT_COMMON_LOGGING_H_
#define COHORT_COMMON_LOGGING_H_

#include <sstream>
#include <string>

namespace cohort {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Threshold from COHORT_LOG_LEVEL (debug, info, warning, error); read once.
LogLevel MinLogLevel();
void WriteLogLine(LogLevel level, const std::string& message);

class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { WriteLogLine(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace cohort

#define COHORT_LOG(level)                                                    \
  if (::cohort::LogLevel::level < ::cohort::MinLogLevel()) {                 \
  } else                                                                     \
    ::cohort::LogMessage(::cohort::LogLevel::level).stream()

#endif  // COHORT_COMMON_LOGGING_H_
