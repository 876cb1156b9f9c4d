// `cohort pipeline run|watch|status|log|provenance|stop SPEC.yaml`: parses
// the command line and the spec and hands them to src/pipeline.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/terminal_text.h"
#include "cli/usage_error.h"
#include "cohort/data.h"
#include "pipeline/controller.h"
#include "pipeline/provenance.h"
#include "pipeline/spec.h"
#include "pipeline/state.h"
#include "pipeline/status_document.h"

namespace cohort::cli {
namespace {

using nlohmann::json;

constexpr char kSynopsis[] =
    "cohort pipeline run|watch|status|log|stop SPEC.yaml [options]\n"
    "       cohort pipeline provenance SPEC.yaml LOCATION[@REF]";
constexpr char kHelp[] =
    "\n"
    "Data pipelines (docs/pipelines.md): steps over dataset commits, run as jobs\n"
    "of the queue named by COHORT_SERVER (or --queue), incremental per datum,\n"
    "cached, with provenance on every output commit.\n"
    "  run         runs every step that is not up to date; resumes a stopped run\n"
    "  watch       runs, then again whenever a dataset input gets a new commit\n"
    "  status      each step's state, datums done, failed datums, output commit\n"
    "  log         the controller's log (runs, cache hits, outputs)\n"
    "  stop        stops the running controller (its jobs go on; run resumes)\n"
    "  provenance  what made LOCATION@REF (back to raw data) and what was made from it\n"
    "Options:\n"
    "  --state DIR   the controller's state (default SPEC's folder/.cohort-pipeline/NAME)\n"
    "  --queue URL   the queue's server (default COHORT_SERVER)\n"
    "  --force       run: re-run every step from nothing, ignoring the cache\n"
    "  --every S     watch: seconds between looks at the inputs (default 2)\n"
    "  --json        status: the status document (steps, states, datums, jobs) as JSON\n";

constexpr int kExitFailure = 1;

int Fail(const std::string& message) {
  std::fprintf(stderr, "cohort pipeline: %s\n", TerminalText(message).c_str());
  return kExitFailure;
}

int Usage(const std::string& problem) { return UsageError("pipeline", problem, kSynopsis); }

struct Args {
  std::string action, spec_path, target;
  pipeline::ControllerOptions options;
  double every_s = 2;
  bool as_json = false;
};

int PrintStatus(const pipeline::PipelineSpec& spec, pipeline::PipelineState& state, bool as_json) {
  const int holder = state.LockHolder();
  if (as_json) {
    const json document =
        pipeline::StatusDocument(spec, state.json(), state.RecentOutputRecords(), holder);
    std::printf("%s\n", TerminalJson(document.dump(2)).c_str());
    return 0;
  }
  std::printf("pipeline %s: %s\n", spec.name.c_str(),
              holder ? ("controller running (pid " + std::to_string(holder) + ")").c_str()
                     : "no controller running");
  const json steps = state.json().value("steps", json::object());
  for (const pipeline::StepSpec& step : spec.steps) {
    const json s = steps.value(step.name, json::object());
    std::string line = "  " + step.name + ": ";
    if (s.contains("run")) {
      size_t done = 0, total = 0, failed = 0;
      for (const json& b : s["run"]["batches"]) {
        if (b["state"] == "split") continue;
        size_t n = b.value("whole", false) ? 1 : b["datums"].size();
        total += n;
        done += b["state"] == "done" ? n : 0;
        failed += b["state"] == "failed" ? n : 0;
      }
      line += "running, " + std::to_string(done) + "/" + std::to_string(total) + " datums done";
      if (failed) line += ", " + std::to_string(failed) + " failed";
    } else if (s.contains("done")) {
      const json& d = s["done"];
      line += d["failed"].empty() ? "done" : "done with failed datums";
      line += ", " + std::to_string(d["results"].size()) + " results, output " +
              d.value("output_commit", "").substr(0, 12);
      for (const auto& [id, reason] : d["failed"].items())
        line += "\n    datum " + id + " failed: " + reason.get<std::string>();
    } else {
      line += "not run yet";
    }
    std::printf("%s\n", TerminalText(line).c_str());
  }
  return 0;
}

int PrintProvenance(pipeline::PipelineState& state, const std::string& target) {
  size_t at = target.rfind('@');
  std::string location = target.substr(0, at);
  // Records name local datasets by absolute path.
  if (char* real = ::realpath(location.c_str(), nullptr)) {
    location = real;
    std::free(real);
  }
  const std::string ref = at == std::string::npos ? "main" : target.substr(at + 1);
  auto back = pipeline::Backward(location, ref);
  if (!back.ok()) return Fail(back.status().message());
  std::printf("made from:\n");
  for (const std::string& line : *back) std::printf("  %s\n", TerminalText(line).c_str());
  const std::vector<json> records = state.ProvenanceRecords();
  auto commit = data::ResolveRef(location, ref);
  if (!commit.ok()) return Fail(commit.status().message());
  std::vector<std::string> forward = pipeline::Forward(records, location, *commit);
  std::printf("used by (re-run these if it is bad):\n");
  if (forward.empty()) std::printf("  nothing\n");
  for (const std::string& line : forward) std::printf("  %s\n", TerminalText(line).c_str());
  return 0;
}

}  // namespace

int PipelineCommand(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      PrintHelp(kSynopsis, kHelp);
      return 0;
    } else if (arg == "--state") {
      if (!value(&a.options.state_folder) || a.options.state_folder.empty())
        return Usage("--state needs a folder");
    } else if (arg == "--queue") {
      if (!value(&a.options.server) || a.options.server.empty())
        return Usage("--queue needs the URL of a `cohort server` (http://HOST:PORT)");
    } else if (arg == "--force") {
      a.options.force = true;
    } else if (arg == "--json") {
      a.as_json = true;
    } else if (arg == "--every") {
      if (!value(&v)) return Usage("--every needs a value");
      auto s = ParsePositiveSeconds("--every", v);
      if (!s.ok()) return Usage(s.status().message());
      a.every_s = *s;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  static const char* kActions[] = {"run", "watch", "status", "log", "stop", "provenance"};
  if (positional.empty()) return Usage("missing the action (run, watch, status, ...)");
  a.action = positional[0];
  bool known = false;
  for (const char* k : kActions) known = known || a.action == k;
  if (!known) return Usage("unknown action '" + a.action + "'");
  const size_t wanted = a.action == "provenance" ? 3 : 2;
  if (positional.size() != wanted)
    return Usage(a.action == "provenance" ? "expected SPEC.yaml and LOCATION[@REF]"
                                          : "expected one SPEC.yaml");
  a.spec_path = positional[1];
  if (wanted == 3) a.target = positional[2];
  auto spec = pipeline::LoadSpec(a.spec_path);
  if (!spec.ok()) return Fail(spec.status().message());
  if (a.options.state_folder.empty()) a.options.state_folder = pipeline::DefaultStateFolder(*spec);
  if (a.action == "run" || a.action == "watch") {
    auto code = a.action == "run" ? pipeline::RunPipeline(*spec, a.options)
                                  : pipeline::WatchPipeline(*spec, a.options, a.every_s);
    if (!code.ok()) return Fail(code.status().message());
    return *code;
  }
  pipeline::PipelineState state(a.options.state_folder);
  auto read = state.Read();
  if (!read.ok()) return Fail(read.message());
  if (a.action == "status") return PrintStatus(*spec, state, a.as_json);
  if (a.action == "provenance") return PrintProvenance(state, a.target);
  if (a.action == "log") {
    std::ifstream in(state.folder() + "/log.txt");
    for (std::string line; std::getline(in, line);) std::printf("%s\n", TerminalText(line).c_str());
    return 0;
  }
  const int holder = state.LockHolder();  // stop
  if (holder == 0) return Fail("no controller of pipeline " + spec->name + " is running");
  if (::kill(holder, SIGTERM) != 0) return Fail("cannot signal pid " + std::to_string(holder));
  std::printf("asked the controller (pid %d) to stop; its jobs go on\n", holder);
  return 0;
}

}  // namespace cohort::cli
