// A child's environment (child_env.h).
#include "common/child_env.h"

extern char** environ;

namespace cohort {

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (extra.count(entry.substr(0, entry.find('='))) == 0) env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

}  // namespace cohort
