// Errors for specs read with yaml-cpp (sweeps, pipelines): each names the
// file, the line and the key, e.g. "p.yaml:9: parameters.lr: low > high".
#ifndef COHORT_SWEEP_YAML_CHECKS_H_
#define COHORT_SWEEP_YAML_CHECKS_H_

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "cohort/status.h"

namespace cohort::sweep {

inline Status YamlError(const std::string& origin, const YAML::Node& node, const std::string& key,
                        const std::string& message) {
  return Status::InvalidArgument(origin + ":" + std::to_string(node.Mark().line + 1) + ": " + key +
                                 ": " + message);
}

// Rejects keys of `map` other than `allowed` (a typo would otherwise be ignored).
inline Status OnlyYamlKeys(const std::string& origin, const YAML::Node& map,
                           const std::string& prefix, const std::set<std::string>& allowed) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (allowed.count(key)) continue;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return YamlError(origin, it->first, prefix + key,
                     "unknown key (expected one of: " + list + ")");
  }
  return Status::OK();
}

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_YAML_CHECKS_H_
