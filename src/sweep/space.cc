// The search space: validation, dependency order, and value <-> coordinate.
#include "sweep/space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace cohort::sweep {

std::string ValueToString(const Value& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", std::get<double>(value));
  return buf;
}

namespace {

Status CheckParam(const ParamSpec& p) {
  const std::string where = "parameter '" + p.name + "'";
  if (p.name.empty()) return Status::InvalidArgument("a parameter has an empty name");
  if (p.type == ParamSpec::Type::kCategorical) {
    if (p.values.empty()) return Status::InvalidArgument(where + ": categorical without values");
    return Status::OK();
  }
  if (!std::isfinite(p.low) || !std::isfinite(p.high)) {
    return Status::InvalidArgument(where + ": low and high must be finite numbers");
  }
  if (p.low > p.high) {
    return Status::InvalidArgument(where + ": low (" + ValueToString(p.low) + ") > high (" +
                                   ValueToString(p.high) + ")");
  }
  if (p.log && p.low <= 0) {
    return Status::InvalidArgument(where + ": log scale needs low > 0");
  }
  if (p.type == ParamSpec::Type::kInt && std::ceil(p.low) > std::floor(p.high)) {
    return Status::InvalidArgument(where + ": no integer between low and high");
  }
  return Status::OK();
}

}  // namespace

Result<Space> Space::Create(const SpaceSpec& spec) {
  if (spec.params.empty()) return Status::InvalidArgument("the search space has no parameters");
  std::map<std::string, const ParamSpec*> by_name;
  for (const ParamSpec& p : spec.params) {
    COHORT_RETURN_IF_ERROR(CheckParam(p));
    if (!by_name.emplace(p.name, &p).second) {
      return Status::InvalidArgument("parameter '" + p.name + "' is declared twice");
    }
  }
  for (const ParamSpec& p : spec.params) {
    for (const auto& [parent, wanted] : p.when) {
      auto it = by_name.find(parent);
      if (it == by_name.end()) {
        return Status::InvalidArgument("parameter '" + p.name +
                                       "': when: names unknown parameter '" + parent + "'");
      }
      if (it->second->type != ParamSpec::Type::kCategorical) continue;
      for (const std::string& w : wanted) {
        const auto& vals = it->second->values;
        bool known = std::any_of(vals.begin(), vals.end(),
                                 [&](const Value& v) { return ValueToString(v) == w; });
        if (!known) {
          return Status::InvalidArgument("parameter '" + p.name + "': when: '" + parent +
                                         "' has no value '" + w + "'");
        }
      }
    }
  }
  // Parents first, keeping the declared order otherwise (Kahn's algorithm).
  Space space;
  std::set<std::string> placed;
  while (space.params_.size() < spec.params.size()) {
    bool progress = false;
    for (const ParamSpec& p : spec.params) {
      if (placed.count(p.name)) continue;
      bool ready = std::all_of(p.when.begin(), p.when.end(),
                               [&](const auto& kv) { return placed.count(kv.first) > 0; });
      if (!ready) continue;
      space.params_.push_back(p);
      placed.insert(p.name);
      progress = true;
    }
    if (!progress) {
      for (const ParamSpec& p : spec.params) {
        if (!placed.count(p.name)) {
          return Status::InvalidArgument("parameter '" + p.name +
                                         "': its when: conditions form a cycle");
        }
      }
    }
  }
  return space;
}

bool Space::Active(size_t i, const Params& chosen) const {
  for (const auto& [parent, wanted] : params_[i].when) {
    auto it = chosen.find(parent);
    if (it == chosen.end()) return false;
    const std::string got = ValueToString(it->second);
    if (std::find(wanted.begin(), wanted.end(), got) == wanted.end()) return false;
  }
  return true;
}

bool Space::Categorical(size_t i) const { return params_[i].type == ParamSpec::Type::kCategorical; }

double Space::Lower(size_t i) const {
  const ParamSpec& p = params_[i];
  if (Categorical(i)) return 0;
  double low = p.type == ParamSpec::Type::kInt ? std::ceil(p.low) - 0.5 : p.low;
  if (p.log) return std::log(low);  // ints: ceil(low) >= 1, so low >= 0.5
  return low;
}

double Space::Upper(size_t i) const {
  const ParamSpec& p = params_[i];
  if (Categorical(i)) return static_cast<double>(p.values.size() - 1);
  double high = p.type == ParamSpec::Type::kInt ? std::floor(p.high) + 0.5 : p.high;
  return p.log ? std::log(high) : high;
}

Value Space::Decode(size_t i, double x) const {
  const ParamSpec& p = params_[i];
  if (Categorical(i)) {
    long idx = std::lround(x);
    idx = std::clamp<long>(idx, 0, static_cast<long>(p.values.size()) - 1);
    return p.values[idx];
  }
  double v = p.log ? std::exp(x) : x;
  if (p.type == ParamSpec::Type::kInt) {
    double r = std::clamp(std::round(v), std::ceil(p.low), std::floor(p.high));
    return static_cast<int64_t>(r);
  }
  return std::clamp(v, p.low, p.high);
}

double Space::Encode(size_t i, const Value& value) const {
  const ParamSpec& p = params_[i];
  if (Categorical(i)) {
    const std::string s = ValueToString(value);
    for (size_t k = 0; k < p.values.size(); ++k) {
      if (ValueToString(p.values[k]) == s) return static_cast<double>(k);
    }
    return 0;
  }
  double v = std::holds_alternative<int64_t>(value) ? static_cast<double>(std::get<int64_t>(value))
                                                    : std::get<double>(value);
  return p.log ? std::log(v) : v;
}

Value Space::FromUnit(size_t i, double u) const {
  u = std::clamp(u, 0.0, 1.0);
  if (Categorical(i)) {
    size_t n = params_[i].values.size();
    return params_[i].values[std::min(n - 1, static_cast<size_t>(u * n))];
  }
  return Decode(i, Lower(i) + u * (Upper(i) - Lower(i)));
}

}  // namespace cohort::sweep
