// Parsing of numeric flag values for the `cohort` subcommands. Every error
// names the flag and the value it was given.
#ifndef COHORT_CLI_FLAG_VALUES_H_
#define COHORT_CLI_FLAG_VALUES_H_

#include <map>
#include <string>

#include "cohort/status.h"

namespace cohort::cli {

Result<int> ParsePositiveInt(const std::string& flag, const std::string& text);
Result<int> ParseNonNegativeInt(const std::string& flag, const std::string& text);
Result<double> ParsePositiveSeconds(const std::string& flag, const std::string& text);
Result<double> ParseNonNegativeNumber(const std::string& flag, const std::string& text);
// --quota "P=N,Q=M": guaranteed slots per project, into *quota.
Status ParseQuota(const std::string& text, std::map<std::string, int>* quota);

}  // namespace cohort::cli

#endif  // COHORT_CLI_FLAG_VALUES_H_
