// Manifest text format and object keys (see manifest.h, docs/checkpoints.md).
#include "checkpoint/manifest.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cohort::checkpoint {

namespace {

constexpr std::string_view kMagic = "cohort-checkpoint 1";
constexpr std::string_view kManifestName = "/MANIFEST";
constexpr std::string_view kStepPrefix = "step-";

bool ParseInt64(const std::string& text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

}  // namespace

std::string StepFolder(int64_t step) {
  char name[40];
  std::snprintf(name, sizeof(name), "step-%012" PRId64, step);
  return name;
}

std::string ManifestKey(int64_t step) { return StepFolder(step) + std::string(kManifestName); }

int64_t StepOfManifestKey(std::string_view key) {
  if (key.substr(0, kStepPrefix.size()) != kStepPrefix) return -1;
  size_t slash = key.find('/');
  if (slash == std::string_view::npos || key.substr(slash) != kManifestName) return -1;
  int64_t step = -1;
  std::string digits(key.substr(kStepPrefix.size(), slash - kStepPrefix.size()));
  if (!ParseInt64(digits, &step) || step < 0 || StepFolder(step) != key.substr(0, slash)) return -1;
  return step;
}

std::string FormatManifest(const Manifest& m) {
  std::string text(kMagic);
  text += "\nstep " + std::to_string(m.info.step);
  text += "\nstate " + m.state_object;
  text += "\nbytes " + std::to_string(m.info.bytes);
  text += "\nsha256 " + m.info.sha256;
  if (m.info.metric) {
    char metric[40];
    std::snprintf(metric, sizeof(metric), "%.17g", *m.info.metric);
    text += "\nmetric " + std::string(metric);
  }
  return text + "\n";
}

Result<Manifest> ParseManifest(std::string_view text, const std::string& where) {
  Manifest m;
  bool has[4] = {false, false, false, false};  // step, state, bytes, sha256
  size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    size_t newline = text.find('\n', start);
    std::string line(text.substr(start, newline == text.npos ? text.npos : newline - start));
    start = newline == text.npos ? text.size() : newline + 1;
    if (number == 1) {
      if (line != kMagic) {
        return Status::InvalidArgument(where + ": not a cohort checkpoint manifest (first line '" +
                                       line + "')");
      }
      continue;
    }
    size_t space = line.find(' ');
    std::string key = line.substr(0, space),
                value = space == line.npos ? "" : line.substr(space + 1);
    auto bad = [&] {
      return Status::InvalidArgument(where + ":" + std::to_string(number) + ": bad " + key + " '" +
                                     value + "'");
    };
    int64_t n = 0;
    if (key == "step") {
      if (!ParseInt64(value, &n) || n < 0) return bad();
      m.info.step = n;
      has[0] = true;
    } else if (key == "state") {
      if (value.empty()) return bad();
      m.state_object = value;
      has[1] = true;
    } else if (key == "bytes") {
      if (!ParseInt64(value, &n) || n < 0) return bad();
      m.info.bytes = static_cast<uint64_t>(n);
      has[2] = true;
    } else if (key == "sha256") {
      if (value.size() != 64) return bad();
      m.info.sha256 = value;
      has[3] = true;
    } else if (key == "metric") {
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') return bad();
      m.info.metric = v;
    }  // unknown keys: written by a newer version, ignored
  }
  const char* names[4] = {"step", "state", "bytes", "sha256"};
  for (int k = 0; k < 4; ++k) {
    if (!has[k]) return Status::InvalidArgument(where + ": missing '" + names[k] + "'");
  }
  return m;
}

}  // namespace cohort::checkpoint
