// A pipeline's status document (status_document.h).
#include "pipeline/status_document.h"

namespace cohort::pipeline {

namespace {

using nlohmann::json;

// {done, total, failed} of the batches of a step's current run.
json RunDatums(const json& run) {
  uint64_t done = 0, total = 0, failed = 0;
  for (const json& b : run.value("batches", json::array())) {
    if (b.value("state", "") == "split") continue;  // its datums are counted alone
    const uint64_t n = b.value("whole", false) ? 1 : b.value("datums", json::array()).size();
    total += n;
    if (b["state"] == "done") done += n;
    if (b["state"] == "failed") failed += n;
  }
  return {{"done", done}, {"total", total}, {"failed", failed}};
}

// The failed datums of a current run: id -> reason.
json RunFailures(const json& run) {
  json failed = json::object();
  for (const json& b : run.value("batches", json::array())) {
    if (b.value("state", "") != "failed") continue;
    const std::string id = b.value("whole", false) ? "whole" : b["datums"][0][1].dump();
    failed[id] = b.value("reason", "");
  }
  return failed;
}

std::string StepState(const json& s, bool waiting) {
  if (s.contains("error")) return "broken";
  if (s.contains("run")) return "running";
  if (waiting || !s.contains("done")) return "waiting";
  if (!s["done"].value("failed", json::object()).empty()) return "failed";
  return s.value("outcome", "") == "cached" ? "cached" : "done";
}

json StepDocument(const StepSpec& step, const json& s, bool waiting) {
  json inputs = json::array();
  for (const StepInput& in : step.inputs) {
    if (in.step.empty()) {
      inputs.push_back({{"name", in.name}, {"dataset", in.dataset}, {"ref", in.ref}});
    } else {
      inputs.push_back({{"name", in.name}, {"step", in.step}});
    }
  }
  const json done = s.value("done", json::object());
  json doc = {{"name", step.name},
              {"state", StepState(s, waiting)},
              {"inputs", inputs},
              {"output", step.output},
              {"output_commit", done.value("output_commit", "")}};
  if (s.contains("run")) {
    const json& run = s["run"];
    doc["run"] = run.value("token", "");
    doc["datums"] = RunDatums(run);
    doc["failed_datums"] = RunFailures(run);
    doc["jobs"] = run.value("jobs", json::array());
    doc["input_commits"] = run.value("inputs", json::array());
  } else {
    const json failed = done.value("failed", json::object());
    // A split input's datums are its results' ids; a whole input is one datum,
    // with or without results (a step without output keeps none).
    const uint64_t results = PipelineSpec::SplitInput(step) != nullptr
                                 ? done.value("results", json::object()).size()
                                 : (done.empty() || !failed.empty() ? 0 : 1);
    doc["run"] = done.value("run", "");
    doc["datums"] = {
        {"done", results}, {"total", results + failed.size()}, {"failed", failed.size()}};
    doc["failed_datums"] = failed;
    doc["jobs"] = done.value("jobs", json::array());
    doc["input_commits"] = done.value("inputs", json::array());
  }
  if (s.contains("error")) doc["error"] = s["error"];
  return doc;
}

}  // namespace

json StatusDocument(const PipelineSpec& spec, const json& state,
                    const std::vector<json>& output_records, int controller_pid) {
  const json run = state.value("pipeline_run", json::object());
  const json steps = state.value("steps", json::object());
  std::string pipeline_state = run.value("state", "waiting");
  // A controller killed outright left "running" behind: its jobs go on, but
  // nothing follows them until the next `run`.
  if (controller_pid == 0 && pipeline_state == "running") pipeline_state = "stopped";
  json doc = {{"pipeline", spec.name},
              {"state", pipeline_state},
              {"controller_pid", controller_pid},
              {"started", run.value("started", 0.0)},
              {"ended", run.value("ended", 0.0)},
              {"steps", json::array()}};
  if (run.contains("error")) doc["error"] = run["error"];
  for (const StepSpec& step : spec.steps) {
    const json s = steps.value(step.name, json::object());
    // While a controller runs, a step its run has not reached yet waits.
    const bool waiting = controller_pid != 0 && pipeline_state == "running" &&
                         s.value("visited", 0.0) != run.value("started", 0.0);
    doc["steps"].push_back(StepDocument(step, s, waiting));
  }
  doc["commits"] = output_records;
  return doc;
}

}  // namespace cohort::pipeline
