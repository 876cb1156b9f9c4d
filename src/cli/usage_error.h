// How every `cohort` subcommand answers a usage error: the problem and one
// hint line on stderr, exit status 2. The whole help is printed only for
// --help (to stdout, exit 0): printed after an error, it would scroll the
// problem out of view.
#ifndef COHORT_CLI_USAGE_ERROR_H_
#define COHORT_CLI_USAGE_ERROR_H_

#include <string>

namespace cohort::cli {

// The exit status of a usage error, for every subcommand.
constexpr int kExitUsage = 2;

// Prints "cohort COMMAND: PROBLEM" and then
// "usage: SYNOPSIS  (cohort COMMAND --help lists the options)" to stderr and
// returns kExitUsage. COMMAND may be several words ("bench engine"), or empty
// for the top level (the hint then points at `cohort --help` for the
// commands). SYNOPSIS is the command's usage line, without "usage: ".
int UsageError(const std::string& command, const std::string& problem, const char* synopsis);

// Prints a command's whole help to stdout: "usage: SYNOPSIS", then `body`.
void PrintHelp(const char* synopsis, const char* body);

}  // namespace cohort::cli

#endif  // COHORT_CLI_USAGE_ERROR_H_
