// Step cache keys and the cache's files (cache.h).
#include "pipeline/cache.h"

#include <fstream>
#include <sstream>

#include "common/sha256.h"
#include "pipeline/state.h"

namespace cohort::pipeline {

namespace {

// Canonical JSON (nlohmann sorts object keys), hashed.
std::string Hash(const StepSpec& step, const std::vector<ResolvedInput>& inputs, bool with_split) {
  nlohmann::json what = {{"command", step.command}, {"params", step.params}};
  nlohmann::json in = nlohmann::json::object();
  for (const ResolvedInput& i : inputs) {
    in[i.name] = {{"location", i.location},
                  {"commit", with_split || !i.split ? i.commit : std::string("*")}};
  }
  what["inputs"] = in;
  return DigestHex(Sha256Of(what.dump()));
}

}  // namespace

std::string CacheKey(const StepSpec& step, const std::vector<ResolvedInput>& inputs) {
  return Hash(step, inputs, true);
}

std::string DatumKey(const StepSpec& step, const std::vector<ResolvedInput>& inputs) {
  return Hash(step, inputs, false);
}

std::optional<nlohmann::json> StepCache::Find(const std::string& key) const {
  std::ifstream in(folder_ + "/" + key + ".json");
  if (!in) return std::nullopt;
  nlohmann::json entry = nlohmann::json::parse(in, nullptr, false);
  if (!entry.is_object()) return std::nullopt;  // a torn file: a miss, rewritten on success
  return entry;
}

Status StepCache::Store(const std::string& key, const nlohmann::json& entry) const {
  return WriteFileAtomically(folder_ + "/" + key + ".json", entry.dump());
}

}  // namespace cohort::pipeline
