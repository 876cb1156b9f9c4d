// One step's batches as queue jobs (step_jobs.h).
#include "pipeline/step_jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cohort/data.h"
#include "common/child_env.h"
#include "pipeline/state.h"

namespace cohort::pipeline {

namespace {

using nlohmann::json;

// A batch's datums named in messages: the first few ids.
constexpr size_t kDatumsNamed = 5;
// Single datums that failed, with nothing done yet, before the step is
// taken to be broken rather than its datums.
constexpr int kBrokenAfter = 3;
// The first look after a submit or a finished job. Each look that finds
// nothing new doubles the wait up to poll_s, so a step of short jobs learns
// of each end within about its length (a fixed poll_s alone added up to
// poll_s per batch: 111 ms per batch of `true` against the queue's 14 ms)
// and a step of long jobs still looks only every poll_s.
constexpr double kFirstLookS = 0.005;

std::string DatumList(const json& batch) {
  if (batch.value("whole", false)) return "the whole input";
  std::string ids;
  const size_t n = batch["datums"].size();
  for (size_t i = 0; i < n && i < kDatumsNamed; ++i) {
    if (!ids.empty()) ids += ',';
    ids += batch["datums"][i][1].dump();
  }
  if (n > kDatumsNamed) ids += ",... (" + std::to_string(n) + " datums)";
  std::string list = batch["datums"].size() == 1 ? "datum " : "datums ";
  return list += ids;
}

class BatchRunner {
 public:
  BatchRunner(const StepJobsContext& c, queue::QueueClient& client, json& run)
      : c_(c), client_(client), run_(run) {}

  Status Run() {
    json& batches = run_["batches"];
    bool changed = false;             // a submit or a job's end since the last wait
    double interval_s = kFirstLookS;  // between two looks; see kFirstLookS
    for (;;) {
      if (c_.stopping()) return Status::OK();
      int running = 0;
      bool open = false;
      for (const json& b : batches) {
        running += b["state"] == "running";
        open = open || b["state"] == "running" || b["state"] == "waiting";
      }
      if (!open) return Status::OK();
      const int others = c_.others_running();
      for (size_t i = 0; i < batches.size() && running + others < c_.spec->parallel; ++i) {
        if (batches[i]["state"] != "waiting") continue;
        COHORT_RETURN_IF_ERROR(Submit(batches[i], i));
        ++running;
        changed = true;
      }
      interval_s = std::min(changed ? kFirstLookS : interval_s * 2, c_.poll_s);
      changed = false;
      if (c_.wait) {
        c_.wait(interval_s);
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
      }
      // Look at each running job; a failed batch may be split, so index by position.
      for (size_t i = 0; i < batches.size(); ++i) {
        if (batches[i]["state"] != "running") continue;
        COHORT_RETURN_IF_ERROR(Look(i));
        // A job ended: the next look comes soon again (the ended job's
        // neighbours were submitted at about the same time).
        changed = changed || batches[i]["state"] != "running";
      }
    }
  }

 private:
  Status Submit(json& batch, size_t index) {
    const std::string staging = c_.staging_folder + "/" + run_["token"].get<std::string>() + "-" +
                                std::to_string(index) + "-" +
                                std::to_string(batch["attempt"].get<int>()) + "-" +
                                std::to_string(run_["submits"].get<int>());
    run_["submits"] = run_["submits"].get<int>() + 1;
    std::error_code ignored;
    std::filesystem::remove_all(staging, ignored);  // an earlier controller's, never adopted
    std::map<std::string, std::string> env = c_.env;
    if (!batch.value("whole", false)) {
      std::string lines;
      for (const json& d : batch["datums"]) lines += d[0].dump() + " " + d[1].dump() + "\n";
      COHORT_RETURN_IF_ERROR(WriteFileAtomically(staging + ".datums", lines));
      env["COHORT_PIPELINE_DATUMS"] = staging + ".datums";
    }
    if (!c_.step->output.empty()) env["COHORT_PIPELINE_OUTPUT"] = staging;
    json body = {{"command", c_.step->command},
                 {"slots", c_.step->slots},
                 {"env", EnvironmentWith(env)},
                 {"cwd", c_.spec->folder}};
    Result<json> answer = queue::AnswerJson(client_.Post("jobs", body));
    if (!answer.ok())
      return Status::InvalidArgument("the queue at " + client_.server() +
                                     " refused the job: " + answer.status().message());
    if (!(*answer)["id"].is_number_unsigned())
      return Status::InvalidArgument("the queue's answer holds no job id");
    batch["job"] = (*answer)["id"];
    batch["staging"] = staging;
    batch["state"] = "running";
    run_["jobs"].push_back((*answer)["id"]);
    return c_.save();
  }

  Status Look(size_t index) {
    json& batch = run_["batches"][index];
    const std::string id = batch["job"].dump();
    auto answer = client_.Get("jobs/" + id);
    if (!answer.ok()) {  // the server may be restarting: its jobs go on
      if (!complained_)
        std::fprintf(stderr, "cohort pipeline: %s (asking again)\n",
                     answer.status().message().c_str());
      complained_ = true;
      return Status::OK();
    }
    complained_ = false;
    std::string failure;
    if (answer->status == 404) {
      failure = "job " + id + " is not in the queue at " + client_.server();
    } else {
      json job = json::parse(answer->body, nullptr, false);
      if (answer->status != 200 || !job.is_object() || !job["state"].is_string())
        return Status::OK();  // asked again next time
      const std::string state = job["state"].get<std::string>();
      if (state != "succeeded" && state != "failed" && state != "cancelled") return Status::OK();
      if (state == "succeeded") {
        failure = CheckOutput(batch);
      } else {
        std::string reason = job["reason"].is_string() ? job["reason"].get<std::string>() : "";
        failure = "job " + id + " " + state + (reason.empty() ? "" : ": " + reason);
      }
    }
    if (failure.empty()) {
      batch["state"] = "done";
      return c_.save();
    }
    return Failed(index, failure);
  }

  // "" when the job's staging dataset holds what the step promised: one
  // result per datum, in order, for a split input; anything for a whole one.
  std::string CheckOutput(const json& batch) {
    if (c_.step->output.empty()) return "";
    const std::string staging = batch["staging"];
    auto ds = data::Dataset::Open(staging);
    if (!ds.ok())
      return "job " + batch["job"].dump() + " succeeded but wrote no dataset at " + staging +
             " ($COHORT_PIPELINE_OUTPUT)";
    if (batch.value("whole", false) || (*ds)->size() == batch["datums"].size()) return "";
    return "job " + batch["job"].dump() + " wrote " + std::to_string((*ds)->size()) +
           " samples for " + std::to_string(batch["datums"].size()) +
           " datums (one result per datum, in the order of $COHORT_PIPELINE_DATUMS)";
  }

  Status Failed(size_t index, const std::string& failure) {
    json& batches = run_["batches"];
    json& batch = batches[index];
    batch["attempt"] = batch["attempt"].get<int>() + 1;
    batch["reason"] = failure;
    std::printf("cohort pipeline: step %s: %s: %s\n", c_.step->name.c_str(),
                DatumList(batch).c_str(), failure.c_str());
    if (batch["attempt"].get<int>() <= c_.step->retries) {
      batch["state"] = "waiting";
    } else if (batch["datums"].size() > 1) {
      // Each datum on its own, so only the one that fails is reported.
      const json datums = batch["datums"];  // a copy: push_back moves the array
      batch["state"] = "split";
      for (const json& d : datums) {
        batches.push_back(
            {{"datums", json::array({d})}, {"attempt", 0}, {"state", "waiting"}, {"whole", false}});
      }
    } else {
      batch["state"] = "failed";
      if (++failed_alone_ >= kBrokenAfter && !AnyDone()) {
        COHORT_RETURN_IF_ERROR(c_.save());
        return Status::InvalidArgument(std::to_string(failed_alone_) +
                                       " datums failed alone and none succeeded, so the "
                                       "step itself fails (the last: " +
                                       failure +
                                       "; `cohort logs ID` shows a job's "
                                       "output); fix it and run again");
      }
    }
    std::fflush(stdout);
    return c_.save();
  }

  bool AnyDone() const {
    for (const json& b : run_["batches"])
      if (b["state"] == "done") return true;
    return false;
  }

  const StepJobsContext& c_;
  queue::QueueClient& client_;
  json& run_;
  bool complained_ = false;
  int failed_alone_ = 0;
};

}  // namespace

Status RunBatches(const StepJobsContext& context, queue::QueueClient& client, json& run) {
  if (!run.contains("submits")) run["submits"] = 0;
  if (!run.contains("jobs")) run["jobs"] = json::array();
  return BatchRunner(context, client, run).Run();
}

}  // namespace cohort::pipeline
