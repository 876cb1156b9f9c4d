// The environment a child process (a queue job, a trial) gets: this
// process's, with some variables set or replaced, as NAME=value entries.
#ifndef COHORT_COMMON_CHILD_ENV_H_
#define COHORT_COMMON_CHILD_ENV_H_

#include <map>
#include <string>
#include <vector>

namespace cohort {

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& extra);

}  // namespace cohort

#endif  // COHORT_COMMON_CHILD_ENV_H_
