// An EnvLookup over a map, so settings parsing is tested without touching
// the process environment.
#ifndef COHORT_TESTS_SUPPORT_FAKE_ENV_H_
#define COHORT_TESTS_SUPPORT_FAKE_ENV_H_

#include <map>
#include <memory>
#include <string>

#include "common/env_config.h"

namespace cohort::testing {

inline EnvLookup FakeEnv(std::map<std::string, std::string> values) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(values));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_FAKE_ENV_H_
