// The pipeline spec (spec.h): YAML read with yaml-cpp, every error naming the
// file, the line and the key; the steps' graph is checked by dag.h.
#include "pipeline/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "pipeline/dag.h"
#include "sweep/yaml_checks.h"

namespace cohort::pipeline {

namespace {

// COHORT_INPUT_<NAME>: letters, digits and '_' only, upper case.
std::string EnvName(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
  return out;
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class SpecReader {
 public:
  SpecReader(std::string origin, std::string folder)
      : origin_(std::move(origin)), folder_(std::move(folder)) {}

  Result<PipelineSpec> Read(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(origin_ + ":" + std::to_string(e.mark.line + 1) +
                                     ": not valid YAML: " + e.msg);
    }
    if (!root.IsMap()) return Status::InvalidArgument(origin_ + ": expected a YAML mapping");
    try {
      return Root(root);
    } catch (const YAML::Exception& e) {  // a key that is not a scalar, and the like
      return Status::InvalidArgument(origin_ + ":" + std::to_string(e.mark.line + 1) + ": " +
                                     e.msg);
    }
  }

 private:
  Status Error(const YAML::Node& node, const std::string& key, const std::string& message) const {
    return sweep::YamlError(origin_, node, key, message);
  }

  Status OnlyKeys(const YAML::Node& map, const std::string& prefix,
                  const std::set<std::string>& allowed) const {
    return sweep::OnlyYamlKeys(origin_, map, prefix, allowed);
  }

  Result<std::string> Text(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty()) return Error(node, key, "expected a string");
    return node.Scalar();
  }

  Status Count(const YAML::Node& node, const std::string& key, int min, int* out) const {
    if (!node) return Status::OK();
    const std::string s = node.IsScalar() ? node.Scalar() : "";
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno == ERANGE || v < min || v > 1000000) {
      return Error(node, key,
                   "expected an integer >= " + std::to_string(min) + ", got '" + s + "'");
    }
    *out = static_cast<int>(v);
    return Status::OK();
  }

  std::string Location(const std::string& path) const {
    if (path.find("://") != std::string::npos || path[0] == '/' || folder_.empty()) return path;
    return folder_ + "/" + path;
  }

  Result<PipelineSpec> Root(const YAML::Node& root) {
    COHORT_RETURN_IF_ERROR(OnlyKeys(root, "", {"name", "parallel", "steps"}));
    PipelineSpec spec;
    spec.origin = origin_;
    spec.folder = folder_;
    if (!root["name"]) return Error(root, "name", "missing (the pipeline's name)");
    auto name = Text(root["name"], "name");
    if (!name.ok()) return name.status();
    spec.name = *name;
    COHORT_RETURN_IF_ERROR(Count(root["parallel"], "parallel", 1, &spec.parallel));
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0)
      return Error(steps ? steps : root, "steps", "expected a non-empty list of steps");
    std::set<std::string> names;
    for (size_t i = 0; i < steps.size(); ++i) {
      auto step = Step(steps[i], "steps[" + std::to_string(i) + "]");
      if (!step.ok()) return step.status();
      if (!names.insert(step->name).second)
        return Error(steps[i]["name"], "steps[" + std::to_string(i) + "].name",
                     "a second step named '" + step->name + "'");
      spec.steps.push_back(std::move(*step));
    }
    COHORT_RETURN_IF_ERROR(CheckGraph(spec));
    return spec;
  }

  Result<StepSpec> Step(const YAML::Node& node, const std::string& key) {
    if (!node.IsMap()) return Error(node, key, "expected a mapping (name, inputs, command, ...)");
    COHORT_RETURN_IF_ERROR(
        OnlyKeys(node, key + ".",
                 {"name", "inputs", "command", "params", "resources", "output", "retries"}));
    StepSpec step;
    step.line = node.Mark().line + 1;
    if (!node["name"]) return Error(node, key + ".name", "missing");
    auto name = Text(node["name"], key + ".name");
    if (!name.ok()) return name.status();
    step.name = *name;
    const std::string at = "step '" + step.name + "'";
    const YAML::Node inputs = node["inputs"];
    if (!inputs || !inputs.IsSequence() || inputs.size() == 0)
      return Error(inputs ? inputs : node, at + ": inputs", "expected a non-empty list of inputs");
    std::set<std::string> input_names;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto input = Input(inputs[i], at + ": inputs[" + std::to_string(i) + "]");
      if (!input.ok()) return input.status();
      if (!input_names.insert(input->name).second)
        return Error(inputs[i], at + ": inputs[" + std::to_string(i) + "]",
                     "a second input named '" + input->name + "' (give one a name:)");
      step.inputs.push_back(std::move(*input));
    }
    int split = 0;
    for (const StepInput& in : step.inputs) split += in.glob != Glob::kWhole;
    if (split > 1)
      return Error(inputs, at + ": inputs", "at most one input may be split into datums");
    const YAML::Node command = node["command"];
    if (command && command.IsSequence()) {
      for (const YAML::Node& arg : command) {
        if (!arg.IsScalar()) return Error(arg, at + ": command", "each word must be a string");
        step.command.push_back(arg.Scalar());
      }
    } else if (command && command.IsScalar()) {
      std::istringstream words(command.Scalar());
      for (std::string w; words >> w;) step.command.push_back(w);
    }
    if (step.command.empty())
      return Error(command ? command : node, at + ": command",
                   "expected a command line or a list of words");
    if (const YAML::Node params = node["params"]) {
      if (!params.IsMap()) return Error(params, at + ": params", "expected a mapping");
      for (auto it = params.begin(); it != params.end(); ++it) {
        if (!it->second.IsScalar())
          return Error(it->second, at + ": params." + it->first.Scalar(), "expected a scalar");
        step.params[it->first.Scalar()] = it->second.Scalar();
      }
    }
    if (const YAML::Node resources = node["resources"]) {
      if (!resources.IsMap()) return Error(resources, at + ": resources", "expected a mapping");
      COHORT_RETURN_IF_ERROR(OnlyKeys(resources, at + ": resources.", {"slots", "batch"}));
      COHORT_RETURN_IF_ERROR(Count(resources["slots"], at + ": resources.slots", 1, &step.slots));
      COHORT_RETURN_IF_ERROR(Count(resources["batch"], at + ": resources.batch", 1, &step.batch));
    }
    COHORT_RETURN_IF_ERROR(Count(node["retries"], at + ": retries", 0, &step.retries));
    if (const YAML::Node output = node["output"]) {
      auto location = Text(output, at + ": output");
      if (!location.ok()) return location.status();
      step.output = Location(*location);
    }
    return step;
  }

  Result<StepInput> Input(const YAML::Node& node, const std::string& key) {
    if (!node.IsMap()) return Error(node, key, "expected {dataset: LOCATION@REF} or {step: NAME}");
    COHORT_RETURN_IF_ERROR(OnlyKeys(node, key + ".", {"dataset", "step", "glob", "name"}));
    StepInput in;
    in.line = node.Mark().line + 1;
    if (node["dataset"].IsDefined() == node["step"].IsDefined())
      return Error(node, key, "expected exactly one of dataset: and step:");
    if (node["dataset"]) {
      auto text = Text(node["dataset"], key + ".dataset");
      if (!text.ok()) return text.status();
      size_t at = text->rfind('@');
      in.dataset = Location(text->substr(0, at));
      in.ref = at == std::string::npos ? "main" : text->substr(at + 1);
      if (in.ref.empty()) return Error(node["dataset"], key + ".dataset", "empty ref after '@'");
      in.name = BaseName(text->substr(0, at));
    } else {
      auto text = Text(node["step"], key + ".step");
      if (!text.ok()) return text.status();
      in.step = *text;
      in.name = in.step;
    }
    if (node["name"]) {
      auto name = Text(node["name"], key + ".name");
      if (!name.ok()) return name.status();
      in.name = *name;
    }
    in.name = EnvName(in.name);
    if (node["glob"]) {
      auto glob = Text(node["glob"], key + ".glob");
      if (!glob.ok()) return glob.status();
      if (*glob == "whole") {
        in.glob = Glob::kWhole;
      } else if (*glob == "sample" || *glob == "file") {
        in.glob = Glob::kSample;
      } else {
        return Error(node["glob"], key + ".glob",
                     "expected whole, sample or file, got '" + *glob + "'");
      }
    }
    return in;
  }

  std::string origin_, folder_;
};

}  // namespace

const StepSpec* PipelineSpec::Find(const std::string& step) const {
  for (const StepSpec& s : steps)
    if (s.name == step) return &s;
  return nullptr;
}

const StepInput* PipelineSpec::SplitInput(const StepSpec& step) {
  for (const StepInput& in : step.inputs)
    if (in.glob != Glob::kWhole) return &in;
  return nullptr;
}

Result<PipelineSpec> ParseSpec(const std::string& yaml_text, const std::string& origin,
                               const std::string& folder) {
  return SpecReader(origin, folder).Read(yaml_text);
}

Result<PipelineSpec> LoadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot read pipeline spec '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  // Absolute: the steps run as queue jobs, maybe from another directory.
  char* real = ::realpath(path.c_str(), nullptr);
  std::string folder = real != nullptr ? real : path;
  std::free(real);
  folder = folder.substr(0, std::max<size_t>(folder.rfind('/'), 1));
  return ParseSpec(text.str(), path, folder);
}

}  // namespace cohort::pipeline
