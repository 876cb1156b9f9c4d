// The pipeline controller (controller.h): plan, run and commit each step.
#include "pipeline/controller.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "cohort/data.h"
#include "common/env_config.h"
#include "common/settings.h"
#include "data/repository.h"
#include "pipeline/cache.h"
#include "pipeline/dag.h"
#include "pipeline/provenance.h"
#include "pipeline/state.h"
#include "pipeline/status_document.h"
#include "pipeline/status_poster.h"
#include "pipeline/step_jobs.h"
#include "queue/queue_client.h"

namespace cohort::pipeline {

namespace {

using nlohmann::json;

volatile sig_atomic_t g_stop_signal = 0;  // set by the SIGINT/SIGTERM handler only
void OnStopSignal(int sig) { g_stop_signal = sig; }

constexpr char kOutputBranch[] = "main";

// Seconds since the Unix epoch: a run's start survives a controller's restart.
double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string NewToken() {
  std::random_device device;
  char text[17];
  std::snprintf(text, sizeof(text), "%08x%08x", device(), device());
  return text;
}

// The exit status of a controller stopped at COHORT_TESTING_PIPELINE_EXIT_AT's point.
constexpr int kTestingExitStatus = 99;

std::string TestingExitPoint() {
  Result<SettingValue> value = ReadSetting(ProcessEnv(), "COHORT_TESTING_PIPELINE_EXIT_AT");
  return value.ok() ? value->text : "";
}

// (index, id) of every sample of location@commit.
Result<std::vector<std::pair<uint64_t, uint64_t>>> Datums(const std::string& location,
                                                          const std::string& commit) {
  auto ds = data::Dataset::Open(location, commit);
  if (!ds.ok()) return ds.status();
  std::vector<std::pair<uint64_t, uint64_t>> all;
  all.reserve((*ds)->size());
  for (uint64_t i = 0; i < (*ds)->size(); ++i) {
    auto id = (*ds)->SampleId(i);
    if (!id.ok()) return id.status();
    all.emplace_back(i, *id);
  }
  return all;
}

// The output dataset's branch head, nullopt when the dataset does not exist yet.
std::optional<std::string> OutputHead(const std::string& output) {
  auto head = data::ResolveRef(output, kOutputBranch);
  if (!head.ok()) return std::nullopt;
  return *head;
}

class PipelineRun {
 public:
  PipelineRun(const PipelineSpec& spec, const ControllerOptions& options)
      : spec_(spec),
        options_(options),
        state_(options.state_folder),
        cache_(options.state_folder + "/cache"),
        client_(options.server.empty() ? queue::QueueClient()
                                       : queue::QueueClient(options.server, "--queue")),
        poster_(options.server),
        exit_at_(TestingExitPoint()) {}

  Result<int> Run() {
    COHORT_RETURN_IF_ERROR(state_.Open());
    if (!state_.json().contains("steps")) state_.json()["steps"] = json::object();
    code_ = CodeVersion(spec_.folder);
    COHORT_RETURN_IF_ERROR(state_.AppendLog("run started (pid " + std::to_string(::getpid()) +
                                            (options_.force ? ", --force" : "") + ")"));
    state_.json()["pipeline_run"] = {{"started", Now()}, {"state", "running"}};
    COHORT_RETURN_IF_ERROR(SaveState(/*post_now=*/true));
    std::unique_lock<std::mutex> lock(mu_);
    RunReadySteps(lock);
    if (g_stop_signal) {
      std::printf("cohort pipeline: stopped (signal %d); run the same command to continue\n",
                  static_cast<int>(g_stop_signal));
      (void)state_.AppendLog("stopped");
      (void)EndRun("stopped", "");
      return 3;
    }
    std::optional<Status> first_error;
    int failed = 0;
    for (const StepSpec* step : StepOrder(spec_)) {
      const Status& status = results_[step->name];
      if (!status.ok() && !skipped_.count(step->name)) {
        Status named(status.code(), "step '" + step->name + "': " + status.message());
        // The first is the run's error; the others are reported here.
        if (first_error) std::fprintf(stderr, "cohort pipeline: %s\n", named.message().c_str());
        if (!first_error) first_error = named;
      }
      failed += static_cast<int>(
          StepState(*step).value("done", json::object()).value("failed", json::object()).size());
    }
    if (first_error) {
      (void)EndRun("broken", first_error->message());
      return *first_error;
    }
    (void)state_.AppendLog(failed ? "run ended with failed datums" : "run ended");
    COHORT_RETURN_IF_ERROR(EndRun(failed ? "failed" : "done", ""));
    return failed ? 1 : 0;
  }

 private:
  // Runs every step whose input steps have finished, each in a thread of its
  // own, so that independent steps run at once (their jobs together bounded
  // by `parallel`); a step whose input step failed does not run. The
  // threads share the state under mu_ (held by `lock` on entry and exit),
  // which a step lets go of only while it waits between looks at its jobs.
  void RunReadySteps(std::unique_lock<std::mutex>& lock) {
    const double started = state_.json()["pipeline_run"]["started"];
    std::vector<std::thread> threads;
    std::set<std::string> begun;
    int running = 0;
    for (;;) {
      for (const StepSpec* step :
           g_stop_signal ? std::vector<const StepSpec*>() : StepOrder(spec_)) {
        if (begun.count(step->name)) continue;
        std::string blocked;
        bool ready = true;
        for (const StepInput& in : step->inputs) {
          if (in.step.empty()) continue;
          auto result = results_.find(in.step);
          if (result == results_.end())
            ready = false;
          else if (!result->second.ok())
            blocked = in.step;
        }
        if (!blocked.empty()) {  // not run: the input step's error is the one to report
          begun.insert(step->name);
          skipped_.insert(step->name);
          StepState(*step)["visited"] = started;
          StepState(*step)["error"] =
              "input step '" + blocked + "' failed, so this step did not run";
          results_[step->name] =
              Status::InvalidArgument(StepState(*step)["error"].get<std::string>());
          continue;
        }
        if (!ready) continue;
        begun.insert(step->name);
        StepState(*step)["visited"] = started;
        StepState(*step).erase("error");
        Publish(/*now=*/true);
        ++running;
        threads.emplace_back([this, step, &running] {
          std::unique_lock<std::mutex> held(mu_);
          Status status = RunStep(*step);
          if (!status.ok()) StepState(*step)["error"] = status.message();
          results_[step->name] = status;
          --running;
          step_ended_.notify_all();
        });
      }
      if (running == 0) break;
      step_ended_.wait(lock);
    }
    lock.unlock();
    for (std::thread& t : threads) t.join();
    lock.lock();
  }

  // Saves the state, then lets the dashboard know (at once, or throttled).
  Status SaveState(bool post_now = false) {
    COHORT_RETURN_IF_ERROR(state_.Save());
    Publish(post_now);
    return Status::OK();
  }

  // An ended run's document names no controller, as `status --json` will once this one exits.
  void Publish(bool now) {
    const bool running = state_.json()["pipeline_run"].value("state", "") == "running";
    poster_.Post(StatusDocument(spec_, state_.json(), state_.RecentOutputRecords(),
                                running ? ::getpid() : 0),
                 now);
  }

  Status EndRun(const std::string& how, const std::string& error) {
    json& run = state_.json()["pipeline_run"];
    run["state"] = how;
    run["ended"] = Now();
    if (!error.empty()) run["error"] = error;
    return SaveState(/*post_now=*/true);
  }

  json& StepState(const StepSpec& step) {
    json& s = state_.json()["steps"][step.name];
    if (!s.is_object()) s = json::object();
    return s;
  }

  Result<std::vector<ResolvedInput>> Resolve(const StepSpec& step) {
    std::vector<ResolvedInput> inputs;
    for (const StepInput& in : step.inputs) {
      ResolvedInput r{in.name, in.dataset, "", in.glob != Glob::kWhole};
      if (in.step.empty()) {
        auto commit = data::ResolveRef(in.dataset, in.ref);
        if (!commit.ok())
          return Status(commit.status().code(),
                        "input " + in.dataset + "@" + in.ref + ": " + commit.status().message());
        r.commit = *commit;
      } else {
        r.location = spec_.Find(in.step)->output;
        const json done = StepState(*spec_.Find(in.step)).value("done", json::object());
        if (done.value("output_commit", "").empty())
          return Status::InvalidArgument("input step '" + in.step + "' has no output yet");
        r.commit = done["output_commit"];
      }
      inputs.push_back(std::move(r));
    }
    return inputs;
  }

  Status RunStep(const StepSpec& step) {
    json& s = StepState(step);
    if (!s.is_object()) s = json::object();
    if (s.contains("run")) {  // a run a stopped or killed controller left
      std::printf("cohort pipeline: step %s: resuming its run\n", step.name.c_str());
      COHORT_RETURN_IF_ERROR(Execute(step));
      if (g_stop_signal) return Status::OK();
    }
    auto inputs = Resolve(step);
    if (!inputs.ok()) return inputs.status();
    const std::string key = CacheKey(step, *inputs);
    const json done = s.value("done", json::object());
    const bool forced = options_.force && !forced_.count(step.name);
    if (!forced && done.value("key", "") == key && done.value("failed", json::object()).empty()) {
      std::printf("cohort pipeline: step %s: up to date\n", step.name.c_str());
      return Status::OK();
    }
    if (!forced) {
      std::optional<json> hit = cache_.Find(key);
      if (hit && Reuse(step, *hit)) return Status::OK();
    }
    forced_.insert(step.name);
    COHORT_RETURN_IF_ERROR(Plan(step, *inputs, key, forced));
    return Execute(step);
  }

  // A cached run's output made current again (its commit is still in the dataset).
  bool Reuse(const StepSpec& step, const json& entry) {
    const std::string commit = entry.value("output_commit", "");
    if (!step.output.empty()) {
      std::optional<std::string> head = OutputHead(step.output);
      if (!head) return false;
      if (*head != commit) {
        auto repo = data::Repository::Open(step.output);
        if (!repo.ok() || !(*repo)->LoadCommit(commit).ok()) return false;
        if (!(*repo)->SetRef(std::string("refs/heads/") + kOutputBranch, *head, commit).ok())
          return false;
      }
    }
    StepState(step)["done"] = entry;
    StepState(step)["outcome"] = "cached";
    std::printf("cohort pipeline: step %s: cached (output %s)\n", step.name.c_str(),
                commit.substr(0, 12).c_str());
    (void)state_.AppendLog("step " + step.name + ": cache hit " + entry.value("key", ""));
    return SaveState(/*post_now=*/true).ok();
  }

  // Decides the datums to process and the results to drop; saves the run.
  Status Plan(const StepSpec& step, const std::vector<ResolvedInput>& inputs,
              const std::string& key, bool forced) {
    json& s = StepState(step);
    const json done = s.value("done", json::object());
    json run = {
        {"token", NewToken()},      {"key", key},      {"datum_key", DatumKey(step, inputs)},
        {"inputs", json::array()},  {"full", true},    {"remove", json::array()},
        {"batches", json::array()}, {"started", Now()}};
    for (const ResolvedInput& in : inputs) {
      run["inputs"].push_back({{"name", in.name},
                               {"location", in.location},
                               {"commit", in.commit},
                               {"split", in.split}});
    }
    auto split = std::find_if(inputs.begin(), inputs.end(), [](auto& i) { return i.split; });
    size_t planned = 0;
    if (split == inputs.end()) {
      run["batches"].push_back(
          {{"datums", json::array()}, {"attempt", 0}, {"state", "waiting"}, {"whole", true}});
      planned = 1;
    } else {
      auto all = Datums(split->location, split->commit);
      if (!all.ok()) return all.status();
      std::set<uint64_t> process;
      const json results = done.value("results", json::object());
      const bool incremental = !forced && done.value("datum_key", "") == run["datum_key"] &&
                               done.contains("split_commit");
      if (incremental) {
        auto diff = data::Diff(split->location, done["split_commit"], split->commit);
        if (!diff.ok()) return diff.status();
        std::set<uint64_t> present;
        for (auto [index, id] : *all) {
          present.insert(id);
          if (!results.contains(std::to_string(id))) process.insert(id);  // new, or failed before
        }
        for (uint64_t id : diff->changed) {
          if (!present.count(id)) continue;
          process.insert(id);
          if (results.contains(std::to_string(id))) run["remove"].push_back(std::to_string(id));
        }
        for (const auto& [id, outputs] : results.items()) {
          if (!present.count(std::stoull(id))) run["remove"].push_back(id);
        }
        run["full"] = false;
      } else {
        for (auto [index, id] : *all) process.insert(id);
      }
      json batch = json::array();
      for (auto [index, id] : *all) {
        if (!process.count(id)) continue;
        batch.push_back({index, id});
        if (batch.size() == static_cast<size_t>(step.batch)) {
          run["batches"].push_back(
              {{"datums", batch}, {"attempt", 0}, {"state", "waiting"}, {"whole", false}});
          batch = json::array();
        }
      }
      if (!batch.empty())
        run["batches"].push_back(
            {{"datums", batch}, {"attempt", 0}, {"state", "waiting"}, {"whole", false}});
      planned = process.size();
    }
    if (run["full"]) {
      std::printf("cohort pipeline: step %s: %zu datum%s to process (all)\n", step.name.c_str(),
                  planned, planned == 1 ? "" : "s");
    } else {
      std::printf(
          "cohort pipeline: step %s: %zu datum%s to process (incremental), %zu result%s to "
          "remove\n",
          step.name.c_str(), planned, planned == 1 ? "" : "s", run["remove"].size(),
          run["remove"].size() == 1 ? "" : "s");
    }
    std::fflush(stdout);
    s["run"] = std::move(run);
    (void)state_.AppendLog("step " + step.name + ": run " + s["run"]["token"].get<std::string>() +
                           ", " + std::to_string(planned) + " datums");
    return SaveState();
  }

  Status Execute(const StepSpec& step) {
    json& run = StepState(step)["run"];
    StepJobsContext context;
    context.spec = &spec_;
    context.step = &step;
    context.staging_folder = state_.folder() + "/staging/" + step.name;
    context.poll_s = options_.poll_s;
    context.env = {{"COHORT_PIPELINE", spec_.name},
                   {"COHORT_PIPELINE_STEP", step.name},
                   {"COHORT_PIPELINE_RUN", run["token"]}};
    for (const json& in : run["inputs"]) {
      context.env["COHORT_INPUT_" + in["name"].get<std::string>()] = in["location"];
      context.env["COHORT_INPUT_" + in["name"].get<std::string>() + "_COMMIT"] = in["commit"];
    }
    for (const auto& [name, value] : step.params) {
      std::string env = "COHORT_PARAM_";
      for (char c : name)
        env += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
      context.env[env] = value;
    }
    context.save = [this] { return SaveState(); };
    context.others_running = [this, &step] {
      int n = 0;
      for (const auto& [name, s] : state_.json()["steps"].items()) {
        if (name == step.name || !s.contains("run")) continue;
        for (const json& b : s["run"]["batches"]) n += b["state"] == "running";
      }
      return n;
    };
    context.wait = [this](double seconds) {  // mu_ is held by this step's thread
      mu_.unlock();
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      mu_.lock();
    };
    context.stopping = [] { return g_stop_signal != 0; };
    COHORT_RETURN_IF_ERROR(MakeFolders(context.staging_folder));
    COHORT_RETURN_IF_ERROR(RunBatches(context, client_, run));
    if (g_stop_signal) return SaveState();
    return Commit(step);
  }

  // The output commit: previous output - removed results + new results.
  Status Commit(const StepSpec& step) {
    json& s = StepState(step);
    json& run = s["run"];
    const json previous = s.value("done", json::object());
    json results = run["full"] ? json::object() : previous.value("results", json::object());
    json failed = json::object();
    std::vector<const json*> staged;
    for (const json& b : run["batches"]) {
      if (b["state"] == "done") staged.push_back(&b);
      if (b["state"] != "failed") continue;
      const std::string id = b.value("whole", false) ? "whole" : b["datums"][0][1].dump();
      failed[id] = b.value("reason", "");
      std::printf("cohort pipeline: step %s: datum %s failed after %d attempts: %s\n",
                  step.name.c_str(), id.c_str(), b["attempt"].get<int>(),
                  b.value("reason", "").c_str());
    }
    std::string output_commit = previous.value("output_commit", "");
    json record = {{"pipeline", spec_.name},  {"step", step.name},  {"run", run["token"]},
                   {"inputs", run["inputs"]}, {"code", code_},      {"params", step.params},
                   {"command", step.command}, {"jobs", run["jobs"]}};
    if (!step.output.empty()) {
      auto made = WriteOutput(step, run, staged, results, record);
      if (!made.ok()) return made.status();
      output_commit = *made;
      if (exit_at_ == "output-committed") {  // a crash between the commit and the state (testing)
        std::fflush(stdout);
        ::_exit(kTestingExitStatus);
      }
    }
    json done = {{"key", run["key"]},       {"datum_key", run["datum_key"]},
                 {"inputs", run["inputs"]}, {"output_commit", output_commit},
                 {"results", results},      {"failed", failed},
                 {"run", run["token"]},     {"jobs", run["jobs"]}};
    for (const json& in : run["inputs"])
      if (in["split"]) done["split_commit"] = in["commit"];
    record["output"] = step.output;
    record["output_commit"] = output_commit;
    record["time"] = static_cast<int64_t>(std::time(nullptr));
    COHORT_RETURN_IF_ERROR(state_.AppendProvenance(record));
    if (failed.empty()) COHORT_RETURN_IF_ERROR(cache_.Store(run["key"], done));
    std::error_code ignored;
    for (const json* b : staged) {
      std::filesystem::remove_all(b->value("staging", ""), ignored);
      std::filesystem::remove(b->value("staging", "") + ".datums", ignored);
    }
    std::printf("cohort pipeline: step %s: %zu batch%s done in %.2f s, output %s\n",
                step.name.c_str(), staged.size(), staged.size() == 1 ? "" : "es",
                Now() - run.value("started", Now()), output_commit.substr(0, 12).c_str());
    std::fflush(stdout);
    s["done"] = std::move(done);
    s["outcome"] = "ran";
    s.erase("run");
    (void)state_.AppendLog("step " + step.name + ": output " + output_commit);
    return SaveState(/*post_now=*/true);
  }

  // Writes (or, after a controller died between the commit and saving the
  // state, finds) the output commit; fills `results` with the new ones.
  Result<std::string> WriteOutput(const StepSpec& step, json& run,
                                  const std::vector<const json*>& staged, json& results,
                                  const json& record) {
    std::optional<std::string> head = OutputHead(step.output);
    if (!run.contains("merge_base")) {
      run["merge_base"] = head ? *head : "";
      COHORT_RETURN_IF_ERROR(SaveState());
    }
    const std::string base = run["merge_base"];
    // The output ids to delete: every one for a full run, else the removed datums'.
    std::set<uint64_t> drop;
    if (!run["full"]) {
      for (const json& id : run["remove"])
        for (const json& out : results[id.get<std::string>()]) drop.insert(out.get<uint64_t>());
      for (const json& id : run["remove"]) results.erase(id.get<std::string>());
    }
    std::vector<uint64_t> deletes;  // indices in the base commit, descending
    uint64_t base_size = 0;
    if (!base.empty()) {
      auto all = Datums(step.output, base);
      if (!all.ok()) return all.status();
      base_size = all->size();
      for (auto [index, id] : *all)
        if (run["full"] || drop.count(id)) deletes.push_back(index);
      std::reverse(deletes.begin(), deletes.end());
    }
    const bool written = head && *head != base &&
                         RecordOfCommand(data::Log(step.output, *head).ok()
                                             ? data::Log(step.output, *head)->front().command
                                             : "")
                                 .value_or(json::object())
                                 .value("run", "") == run["token"];
    std::string commit = written ? *head : "";
    if (!written) {
      if (staged.empty() && deletes.empty() && !base.empty()) return base;  // nothing changed
      auto made = WriteCommit(step, base, deletes, staged, record);
      if (!made.ok()) return made.status();
      commit = *made;
      if (commit.empty()) return commit;  // no dataset yet, and no result to make one of
    }
    // The new results' ids: appended after what the deletes left, in batch order.
    auto ds = data::Dataset::Open(step.output, commit);
    if (!ds.ok()) return ds.status();
    uint64_t position = base_size - deletes.size();
    for (const json* b : staged) {
      auto staging = data::Dataset::Open((*b)["staging"].get<std::string>());
      if (!staging.ok()) return staging.status();
      json ids = json::array();
      for (uint64_t i = 0; i < (*staging)->size(); ++i) {
        auto id = (*ds)->SampleId(position++);
        if (!id.ok()) return id.status();
        if (b->value("whole", false)) {
          ids.push_back(*id);
        } else {
          results[(*b)["datums"][i][1].dump()] = json::array({*id});
        }
      }
      if (b->value("whole", false)) results["whole"] = ids;
    }
    return commit;
  }

  Result<std::string> WriteCommit(const StepSpec& step, const std::string& base,
                                  const std::vector<uint64_t>& deletes,
                                  const std::vector<const json*>& staged, const json& record) {
    data::WriterOptions options;
    options.branch = kOutputBranch;
    std::unique_ptr<data::Writer> writer;
    if (base.empty()) {
      if (staged.empty()) return std::string();  // nothing to make a dataset of yet
      auto first = data::Dataset::Open((*staged[0])["staging"].get<std::string>());
      if (!first.ok()) return first.status();
      auto created = data::Writer::Create(step.output, (*first)->schema(), options);
      if (!created.ok()) return created.status();
      writer = std::move(*created);
    } else {
      auto opened = data::Writer::Open(step.output, options);
      if (!opened.ok()) return opened.status();
      writer = std::move(*opened);
      if (writer->base() != base)
        return Status::Mismatch("output " + step.output + " moved from " + base.substr(0, 12) +
                                " to " + writer->base().substr(0, 12) +
                                " while the step ran: another writer?");
    }
    for (uint64_t index : deletes) COHORT_RETURN_IF_ERROR(writer->Delete(index));
    uint64_t added = 0;
    for (const json* b : staged) {
      auto staging = data::Dataset::Open((*b)["staging"].get<std::string>());
      if (!staging.ok()) return staging.status();
      for (uint64_t i = 0; i < (*staging)->size(); ++i, ++added) {
        auto sample = (*staging)->Get(i);
        if (!sample.ok()) return sample.status();
        Status appended = writer->Append(*sample);
        if (!appended.ok())
          return Status(appended.code(), "the results of job " + (*b)["job"].dump() +
                                             " do not fit output " + step.output + ": " +
                                             appended.message());
      }
    }
    data::CommitRequest request("pipeline " + spec_.name + " step " + step.name + ": " +
                                    std::to_string(added) + " results added, " +
                                    std::to_string(deletes.size()) + " removed",
                                "", kProvenancePrefix + record.dump());
    return writer->Commit(request);
  }

  const PipelineSpec& spec_;
  ControllerOptions options_;
  PipelineState state_;
  StepCache cache_;
  queue::QueueClient client_;
  StatusPoster poster_;
  const std::string exit_at_;  // COHORT_TESTING_PIPELINE_EXIT_AT
  json code_;
  std::set<std::string> forced_;  // steps --force already re-ran in this run
  // The steps' threads share everything above; see RunReadySteps.
  std::mutex mu_;
  std::condition_variable step_ended_;
  std::map<std::string, Status> results_;  // each ended step's outcome
  std::set<std::string> skipped_;          // steps not run: an input step failed
};

}  // namespace

std::string DefaultStateFolder(const PipelineSpec& spec) {
  return spec.folder + "/.cohort-pipeline/" + spec.name;
}

namespace {

// Installs the stop handler for its lifetime.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa = {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

// The commit each dataset input's ref names now ("" when it does not resolve).
std::vector<std::string> WatchedCommits(const PipelineSpec& spec) {
  std::vector<std::string> commits;
  for (const StepSpec& step : spec.steps)
    for (const StepInput& in : step.inputs)
      if (in.step.empty()) {
        auto commit = data::ResolveRef(in.dataset, in.ref);
        commits.push_back(commit.ok() ? *commit : "");
      }
  return commits;
}

}  // namespace

Result<int> RunPipeline(const PipelineSpec& spec, const ControllerOptions& options) {
  StopSignals signals;
  return PipelineRun(spec, options).Run();
}

Result<int> WatchPipeline(const PipelineSpec& spec, const ControllerOptions& options,
                          double every_s) {
  StopSignals signals;
  std::vector<std::string> seen;
  Result<int> last = 0;
  while (!g_stop_signal) {
    std::vector<std::string> now = WatchedCommits(spec);
    if (now != seen) {
      seen = now;
      std::printf("cohort pipeline: watch: running for the inputs' current commits\n");
      std::fflush(stdout);
      last = PipelineRun(spec, options).Run();
      if (!last.ok()) {  // reported, and tried again at the next commit
        std::fprintf(stderr, "cohort pipeline: %s\n", last.status().message().c_str());
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(every_s));
  }
  return last.ok() ? Result<int>(3) : last;
}

}  // namespace cohort::pipeline
