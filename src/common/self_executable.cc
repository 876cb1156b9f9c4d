// SelfExecutable (self_executable.h).
#include "common/self_executable.h"

#include <limits.h>
#include <unistd.h>

namespace cohort {

Result<std::string> SelfExecutable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return Status::IoError("cannot read /proc/self/exe");
  return std::string(path, static_cast<size_t>(n));
}

std::string CohortBinary() {
  Result<std::string> self = SelfExecutable();
  return self.ok() ? *self : "cohort";
}

}  // namespace cohort
