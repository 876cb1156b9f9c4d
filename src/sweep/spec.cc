// The sweep spec (docs/sweeps.md): YAML read with yaml-cpp into a SweepSpec.
// Every error names the file, the line and the key, e.g.
//   "digits.yaml:9: parameters.lr: low (1) > high (0.5)".
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "sweep/algorithm_registry.h"
#include "sweep/space.h"
#include "sweep/yaml_checks.h"

namespace cohort::sweep {

namespace {

class SpecReader {
 public:
  explicit SpecReader(std::string origin) : origin_(std::move(origin)) {}

  Status Error(const YAML::Node& node, const std::string& key, const std::string& message) const {
    return YamlError(origin_, node, key, message);
  }

  Status OnlyKeys(const YAML::Node& map, const std::string& prefix,
                  const std::set<std::string>& allowed) const {
    return OnlyYamlKeys(origin_, map, prefix, allowed);
  }

  Result<std::string> String(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) return Error(node, key, "expected a string");
    return node.Scalar();
  }

  Result<double> Number(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) return Error(node, key, "expected a number");
    const std::string& s = node.Scalar();
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno == ERANGE) {
      return Error(node, key, "expected a number, got '" + s + "'");
    }
    return v;
  }

  Result<int64_t> Integer(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) return Error(node, key, "expected an integer");
    const std::string& s = node.Scalar();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno == ERANGE) {
      return Error(node, key, "expected an integer, got '" + s + "'");
    }
    return static_cast<int64_t>(v);
  }

  Result<bool> Bool(const YAML::Node& node, const std::string& key) const {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (s == "true" || s == "yes") return true;
      if (s == "false" || s == "no") return false;
    }
    return Error(node, key, "expected true or false");
  }

  // A categorical value keeps the type it was written with.
  static Value ScalarValue(const std::string& s) {
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return static_cast<int64_t>(i);
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return d;
    return s;
  }

  Result<ParamSpec> Param(const std::string& name, const YAML::Node& node) const {
    const std::string key = "parameters." + name;
    if (!node.IsMap())
      return Error(node, key, "expected a mapping such as {type: float, low: 0, high: 1}");
    COHORT_RETURN_IF_ERROR(
        OnlyKeys(node, key + ".", {"type", "low", "high", "log", "values", "when"}));
    ParamSpec p;
    p.name = name;
    if (!node["type"]) return Error(node, key, "missing 'type' (float, int or categorical)");
    Result<std::string> type = String(node["type"], key + ".type");
    if (!type.ok()) return type.status();
    if (*type == "float") {
      p.type = ParamSpec::Type::kFloat;
    } else if (*type == "int") {
      p.type = ParamSpec::Type::kInt;
    } else if (*type == "categorical") {
      p.type = ParamSpec::Type::kCategorical;
    } else {
      return Error(node["type"], key + ".type",
                   "unknown type '" + *type + "' (float, int or categorical)");
    }
    if (p.type == ParamSpec::Type::kCategorical) {
      const YAML::Node values = node["values"];
      if (!values || !values.IsSequence() || values.size() == 0) {
        return Error(values ? values : node, key + ".values",
                     "a categorical needs a non-empty list of values");
      }
      for (const YAML::Node& v : values) {
        if (!v.IsScalar()) return Error(v, key + ".values", "each value must be a scalar");
        p.values.push_back(ScalarValue(v.Scalar()));
      }
    } else {
      for (const char* bound : {"low", "high"}) {
        if (!node[bound]) return Error(node, key, std::string("missing '") + bound + "'");
        Result<double> v = Number(node[bound], key + "." + bound);
        if (!v.ok()) return v.status();
        (std::string(bound) == "low" ? p.low : p.high) = *v;
      }
      if (node["log"]) {
        Result<bool> log = Bool(node["log"], key + ".log");
        if (!log.ok()) return log.status();
        p.log = *log;
      }
    }
    // The parameter alone, so the error can name this line.
    Result<Space> alone = Space::Create(SpaceSpec{{p}});
    if (!alone.ok()) {
      const YAML::Node at = node["low"] ? node["low"] : node;
      return Error(at, key,
                   alone.status().message().substr(alone.status().message().find(": ") + 2));
    }
    if (node["when"]) {
      const YAML::Node when = node["when"];
      if (!when.IsMap()) return Error(when, key + ".when", "expected a mapping {parameter: value}");
      for (auto it = when.begin(); it != when.end(); ++it) {
        std::vector<std::string> wanted;
        if (it->second.IsSequence()) {
          for (const YAML::Node& v : it->second) wanted.push_back(v.Scalar());
        } else if (it->second.IsScalar()) {
          wanted.push_back(it->second.Scalar());
        } else {
          return Error(it->second, key + ".when", "expected a value or a list of values");
        }
        p.when[it->first.as<std::string>()] = std::move(wanted);
      }
    }
    return p;
  }

  Status Parameters(const YAML::Node& node, SpaceSpec* space) const {
    if (!node || !node.IsMap() || node.size() == 0) {
      return Error(node ? node : root_, "parameters", "expected a non-empty mapping of parameters");
    }
    std::map<std::string, YAML::Node> when_of;
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = it->first.as<std::string>();
      Result<ParamSpec> p = Param(name, it->second);
      if (!p.ok()) return p.status();
      if (it->second["when"]) when_of[name] = it->second["when"];
      space->params.push_back(std::move(*p));
    }
    // when: must name declared parameters and (categoricals) their values.
    for (const auto& [name, when] : when_of) {
      for (auto it = when.begin(); it != when.end(); ++it) {
        std::string parent = it->first.as<std::string>();
        const std::string key = "parameters." + name + ".when." + parent;
        if (!node[parent]) return Error(it->first, key, "unknown parameter '" + parent + "'");
        const ParamSpec* target = nullptr;
        for (const ParamSpec& p : space->params) target = p.name == parent ? &p : target;
        if (target->type != ParamSpec::Type::kCategorical) continue;
        for (const std::string& w : it->second.IsSequence()
                                        ? it->second.as<std::vector<std::string>>()
                                        : std::vector<std::string>{it->second.Scalar()}) {
          bool known = false;
          for (const Value& v : target->values) known |= ValueToString(v) == w;
          if (!known) return Error(it->second, key, "'" + parent + "' has no value '" + w + "'");
        }
      }
    }
    Result<Space> all = Space::Create(*space);
    if (!all.ok()) return Error(node, "parameters", all.status().message());
    return Status::OK();
  }

  Status Budget(const YAML::Node& node, sweep::Budget* b) const {
    if (!node) return Status::OK();
    if (!node.IsMap()) return Error(node, "budget", "expected a mapping");
    COHORT_RETURN_IF_ERROR(OnlyKeys(
        node, "budget.",
        {"trials", "concurrent", "resource", "min_resource", "max_resource", "reduction"}));
    struct Field {
      const char* key;
      int64_t* into;
    };
    int64_t concurrent = b->concurrent;
    for (Field f : {Field{"trials", &b->trials}, Field{"concurrent", &concurrent},
                    Field{"min_resource", &b->min_resource},
                    Field{"max_resource", &b->max_resource}, Field{"reduction", &b->reduction}}) {
      if (!node[f.key]) continue;
      Result<int64_t> v = Integer(node[f.key], std::string("budget.") + f.key);
      if (!v.ok()) return v.status();
      if (*v < 1) return Error(node[f.key], std::string("budget.") + f.key, "must be >= 1");
      *f.into = *v;
    }
    b->concurrent = static_cast<int>(concurrent);
    if (node["resource"]) {
      Result<std::string> r = String(node["resource"], "budget.resource");
      if (!r.ok()) return r.status();
      b->resource = *r;
    }
    if (b->max_resource < b->min_resource) {
      return Error(node["max_resource"] ? node["max_resource"] : node, "budget.max_resource",
                   "must be >= min_resource (" + std::to_string(b->min_resource) + ")");
    }
    return Status::OK();
  }

  Result<SweepSpec> Read(const std::string& text) {
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(origin_ + ":" + std::to_string(e.mark.line + 1) +
                                     ": not valid YAML: " + e.msg);
    }
    if (!root_.IsMap()) return Status::InvalidArgument(origin_ + ": expected a YAML mapping");
    try {
      return ReadRoot();
    } catch (const YAML::Exception& e) {  // a key that is not a scalar, and the like
      return Status::InvalidArgument(origin_ + ":" + std::to_string(e.mark.line + 1) + ": " +
                                     e.msg);
    }
  }

 private:
  Result<SweepSpec> ReadRoot() {
    COHORT_RETURN_IF_ERROR(OnlyKeys(root_, "",
                                    {"name", "command", "workers", "metric", "algorithm", "sampler",
                                     "sobol", "grid_points", "budget", "seed", "parameters"}));
    SweepSpec spec;
    for (const char* required : {"name", "command", "metric", "algorithm", "parameters"}) {
      if (!root_[required])
        return Error(root_, required, "missing (docs/sweeps.md lists the keys)");
    }
    Result<std::string> name = String(root_["name"], "name");
    if (!name.ok()) return name.status();
    spec.name = *name;
    const YAML::Node command = root_["command"];
    if (command.IsSequence()) {
      for (const YAML::Node& arg : command) spec.command.push_back(arg.Scalar());
    } else if (command.IsScalar()) {
      std::istringstream words(command.Scalar());
      for (std::string w; words >> w;) spec.command.push_back(w);
    }
    if (spec.command.empty())
      return Error(command, "command", "expected a command line or a list of arguments");
    if (root_["workers"]) {
      Result<int64_t> w = Integer(root_["workers"], "workers");
      if (!w.ok()) return w.status();
      if (*w < 1) return Error(root_["workers"], "workers", "must be >= 1");
      spec.workers = static_cast<int>(*w);
    }
    const YAML::Node metric = root_["metric"];
    if (!metric.IsMap() || !metric["name"]) {
      return Error(metric, "metric", "expected {name: METRIC, mode: min|max}");
    }
    COHORT_RETURN_IF_ERROR(OnlyKeys(metric, "metric.", {"name", "mode"}));
    Result<std::string> metric_name = String(metric["name"], "metric.name");
    if (!metric_name.ok()) return metric_name.status();
    spec.metric = *metric_name;
    spec.metric_where =
        origin_ + ":" + std::to_string(metric["name"].Mark().line + 1) + ": metric.name";
    if (metric["mode"]) {
      Result<std::string> mode = String(metric["mode"], "metric.mode");
      if (!mode.ok()) return mode.status();
      if (*mode != "min" && *mode != "max") {
        return Error(metric["mode"], "metric.mode", "expected min or max, got '" + *mode + "'");
      }
      spec.study.maximize = *mode == "max";
    }
    Result<std::string> algorithm = String(root_["algorithm"], "algorithm");
    if (!algorithm.ok()) return algorithm.status();
    if (FindSweepAlgorithm(*algorithm) == nullptr) {
      return Error(root_["algorithm"], "algorithm",
                   "unknown algorithm '" + *algorithm + "' (" + SweepAlgorithmList() + ")");
    }
    spec.study.algorithm = *algorithm;
    if (root_["sampler"]) {
      Result<std::string> s = String(root_["sampler"], "sampler");
      if (!s.ok()) return s.status();
      const AlgorithmEntry* sampler = FindSweepAlgorithm(*s);
      if (sampler == nullptr || !sampler->can_be_sampler) {
        return Error(root_["sampler"], "sampler",
                     "expected " + SamplerChoiceList() + ", got '" + *s + "'");
      }
      spec.study.sampler = *s;
    }
    if (root_["sobol"]) {
      Result<bool> s = Bool(root_["sobol"], "sobol");
      if (!s.ok()) return s.status();
      spec.study.sobol = *s;
    }
    if (root_["grid_points"]) {
      Result<int64_t> g = Integer(root_["grid_points"], "grid_points");
      if (!g.ok()) return g.status();
      if (*g < 1) return Error(root_["grid_points"], "grid_points", "must be >= 1");
      spec.study.grid_points = static_cast<int>(*g);
    }
    if (root_["seed"]) {
      Result<int64_t> s = Integer(root_["seed"], "seed");
      if (!s.ok()) return s.status();
      spec.study.seed = static_cast<uint64_t>(*s);
    }
    COHORT_RETURN_IF_ERROR(Budget(root_["budget"], &spec.study.budget));
    if (spec.study.algorithm == "pbt" && spec.study.budget.concurrent < 2) {
      return Error(root_["budget"] ? root_["budget"] : root_, "budget.concurrent",
                   "pbt needs a population of at least 2");
    }
    COHORT_RETURN_IF_ERROR(Parameters(root_["parameters"], &spec.study.space));
    return spec;
  }

  std::string origin_;
  YAML::Node root_;
};

}  // namespace

Result<SweepSpec> ParseSpec(const std::string& yaml_text, const std::string& origin) {
  return SpecReader(origin).Read(yaml_text);
}

Result<SweepSpec> LoadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot read sweep spec '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return ParseSpec(text.str(), path);
}

}  // namespace cohort::sweep
