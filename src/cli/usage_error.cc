// The one way a `cohort` command reports a usage error (usage_error.h).
#include "cli/usage_error.h"

#include <cstdio>

namespace cohort::cli {

int UsageError(const std::string& command, const std::string& problem, const char* synopsis) {
  const std::string name = command.empty() ? "cohort" : "cohort " + command;
  std::fprintf(stderr, "%s: %s\nusage: %s  (%s --help lists the %s)\n", name.c_str(),
               problem.c_str(), synopsis, name.c_str(), command.empty() ? "commands" : "options");
  return kExitUsage;
}

void PrintHelp(const char* synopsis, const char* body) {
  std::printf("usage: %s\n%s", synopsis, body);
}

}  // namespace cohort::cli
