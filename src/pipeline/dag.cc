// The steps' graph (dag.h): depth-first search for cycles, Kahn's order.
#include "pipeline/dag.h"

#include <map>
#include <set>

namespace cohort::pipeline {

namespace {

std::string At(const PipelineSpec& spec, int line) {
  return spec.origin + ":" + std::to_string(line) + ": ";
}

// The steps `step` reads.
std::vector<std::string> Upstream(const StepSpec& step) {
  std::vector<std::string> names;
  for (const StepInput& in : step.inputs)
    if (!in.step.empty()) names.push_back(in.step);
  return names;
}

// Depth-first: `path` is the chain being walked; a step met again on it closes a cycle.
Status Visit(const PipelineSpec& spec, const StepSpec& step, std::vector<std::string>& path,
             std::set<std::string>& done) {
  if (done.count(step.name)) return Status::OK();
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != step.name) continue;
    std::string cycle;
    for (size_t j = i; j < path.size(); ++j) cycle += path[j] + " -> ";
    const StepSpec& first = *spec.Find(path[i]);
    return Status::InvalidArgument(At(spec, first.line) + "step '" + first.name +
                                   "': cycle: " + cycle + step.name);
  }
  path.push_back(step.name);
  // A step's inputs are the steps before it on the chain: walk from reader to read.
  for (const std::string& up : Upstream(step))
    COHORT_RETURN_IF_ERROR(Visit(spec, *spec.Find(up), path, done));
  path.pop_back();
  done.insert(step.name);
  return Status::OK();
}

}  // namespace

Status CheckGraph(const PipelineSpec& spec) {
  for (const StepSpec& step : spec.steps) {
    for (const StepInput& in : step.inputs) {
      if (in.step.empty()) continue;
      const StepSpec* from = spec.Find(in.step);
      if (from == nullptr)
        return Status::InvalidArgument(At(spec, in.line) + "step '" + step.name + "': input '" +
                                       in.step + "' is not a step of this pipeline");
      if (from->output.empty())
        return Status::InvalidArgument(At(spec, in.line) + "step '" + step.name + "': input '" +
                                       in.step + "' writes no output (give it output:)");
    }
  }
  std::set<std::string> done;
  for (const StepSpec& step : spec.steps) {
    std::vector<std::string> path;
    COHORT_RETURN_IF_ERROR(Visit(spec, step, path, done));
  }
  return Status::OK();
}

std::vector<const StepSpec*> StepOrder(const PipelineSpec& spec) {
  std::vector<const StepSpec*> order;
  std::set<std::string> placed;
  while (order.size() < spec.steps.size()) {
    size_t before = order.size();
    for (const StepSpec& step : spec.steps) {
      if (placed.count(step.name)) continue;
      bool ready = true;
      for (const std::string& up : Upstream(step)) ready = ready && placed.count(up) > 0;
      if (!ready) continue;
      order.push_back(&step);
      placed.insert(step.name);
      break;  // restart from the top: ties go in spec order
    }
    if (order.size() == before) break;  // a cycle: CheckGraph refuses those
  }
  return order;
}

std::vector<const StepSpec*> Downstream(const PipelineSpec& spec, const std::string& step) {
  std::set<std::string> reached = {step};
  std::vector<const StepSpec*> out;
  for (const StepSpec* s : StepOrder(spec)) {
    for (const std::string& up : Upstream(*s)) {
      if (!reached.count(up) || reached.count(s->name)) continue;
      reached.insert(s->name);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace cohort::pipeline
