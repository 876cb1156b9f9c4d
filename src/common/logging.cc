// Logging implementation.
#include "common/logging.h"

#include <unistd.h>

#include <cstring>

#include "common/env_config.h"

namespace cohort {

LogLevel MinLogLevel() {
  static const LogLevel level = [] {
    const char* v = ProcessEnv()("COHORT_LOG_LEVEL");
    if (v == nullptr) return LogLevel::kWarning;
    if (std::strcmp(v, "debug") == 0) return LogLevel::kDebug;
    if (std::strcmp(v, "info") == 0) return LogLevel::kInfo;
    if (std::strcmp(v, "error") == 0) return LogLevel::kError;
    return LogLevel::kWarning;
  }();
  return level;
}

void WriteLogLine(LogLevel level, const std::string& message) {
  static const char* const kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  std::string line = "[cohort ";
  line += kNames[static_cast<int>(level)];
  line += "] ";
  line += message;
  line += '\n';
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace cohort
