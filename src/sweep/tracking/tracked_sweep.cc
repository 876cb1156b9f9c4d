// The tracking store's view of a sweep (tracked_sweep.h).
#include "sweep/tracking/tracked_sweep.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cohort/track.h"
#include "sweep/algorithm_registry.h"
#include "sweep/asha.h"
#include "track/transport.h"

namespace cohort::sweep {

namespace {

using nlohmann::json;

// What earlier controllers of this sweep did.
struct Earlier {
  std::string sweep_id;                        // the first sweep run's id
  std::vector<std::string> sweep_runs;         // every earlier controller's sweep run
  std::map<int64_t, std::string> trial_runs;   // each trial's last run
  std::map<int64_t, std::string> trial_rungs;  // ASHA/Hyperband: each trial's rung resources
  std::optional<double> best;                  // best value of a completed trial
  int64_t completed = 0;
};

Earlier ReadJournal(const std::vector<std::string>& records, const std::vector<TrialRecord>& trials,
                    bool maximize) {
  Earlier e;
  for (const TrialRecord& t : trials) {
    if (t.state != TrialState::kCompleted || !t.value) continue;
    if (!e.best || (maximize ? *t.value > *e.best : *t.value < *e.best)) e.best = *t.value;
    ++e.completed;
  }
  for (const std::string& line : records) {
    json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object() || !r.contains("op")) continue;  // replay (replay.cc) checked them
    const std::string op = r["op"].get<std::string>();
    if (op == "run" && r.contains("sweep")) {
      if (e.sweep_id.empty()) e.sweep_id = r["sweep"].get<std::string>();
      e.sweep_runs.push_back(r["run"].get<std::string>());
    } else if (op == "run" && r.contains("trial")) {
      e.trial_runs[r["trial"].get<int64_t>()] = r["run"].get<std::string>();
      if (r.contains("rungs") && r["rungs"].is_string()) {
        e.trial_rungs[r["trial"].get<int64_t>()] = r["rungs"].get<std::string>();
      }
    }
  }
  return e;
}

json RunRecord(const char* key, const json& value, const std::string& run_id) {
  return json{{"op", "run"}, {key, value}, {"run", run_id}};
}

// "1,3,9": the resources of the rungs of the bracket whose first rung is
// `first`, as AshaBracket makes them. Hyperband's trials are in brackets with
// different first rungs, which their metric history cannot tell apart.
std::string RungResources(int64_t first, const Budget& budget) {
  std::string out;
  const AshaBracket bracket(first, budget.max_resource, budget.reduction);
  for (int64_t r : bracket.resources()) {
    if (!out.empty()) out += ',';
    out += std::to_string(r);
  }
  return out;
}

// Ends the runs an earlier controller left RUNNING (it was killed, or the
// server was down when it closed them): its sweep run and the runs of its
// trials that were running or paused then. A trial started again goes on in
// a new run; the old one is KILLED, tagged cohort.sweep.state=interrupted.
// A run that already ended is left as it is.
Status EndEarlierRuns(const std::string& uri, const Earlier& earlier) {
  if (earlier.sweep_runs.empty() && earlier.trial_runs.empty()) return Status::OK();
  auto transport = track::OpenTransport(uri);
  if (!transport.ok()) return transport.status();
  auto end = [&](const std::string& run_id, bool trial) -> Status {
    auto got = (*transport)->Call("GET", "runs/get", {{"run_id", run_id}});
    if (got.status().IsNotFound()) return Status::OK();
    if (!got.ok()) return got.status();
    auto status = track::StringIn(*got, "/run/info/status");
    if (!status.ok() || *status != "RUNNING") return Status::OK();
    if (trial) {
      auto tagged =
          (*transport)
              ->Call("POST", "runs/set-tag",
                     {{"run_id", run_id}, {"key", "cohort.sweep.state"}, {"value", "interrupted"}});
      if (!tagged.ok()) return tagged.status();
    }
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return (*transport)
        ->Call("POST", "runs/update", {{"run_id", run_id}, {"status", "KILLED"}, {"end_time", now}})
        .status();
  };
  for (const std::string& run_id : earlier.sweep_runs) COHORT_RETURN_IF_ERROR(end(run_id, false));
  for (const auto& [trial, run_id] : earlier.trial_runs) COHORT_RETURN_IF_ERROR(end(run_id, true));
  return Status::OK();
}

class TrackedSweep : public TrialObserver {
 public:
  TrackedSweep(const SweepSpec& spec, const std::string& uri, Journal& journal, Earlier earlier)
      : spec_(spec), uri_(uri), journal_(journal), earlier_(std::move(earlier)) {}

  // The sweep's own run; its id goes into the journal.
  Status Open() {
    const Budget& b = spec_.study.budget;
    TrackingOptions o;
    o.uri = uri_;
    o.project = spec_.name;
    o.run_name = earlier_.sweep_id.empty() ? spec_.name : spec_.name + " (continued)";
    o.params = {{"algorithm", spec_.study.algorithm},
                {"metric", spec_.metric},
                {"mode", spec_.study.maximize ? "max" : "min"},
                {"seed", std::to_string(spec_.study.seed)},
                {"workers", std::to_string(spec_.workers)},
                {"trials", std::to_string(b.trials)},
                {"concurrent", std::to_string(b.concurrent)},
                {"resource", b.resource},
                {"min_resource", std::to_string(b.min_resource)},
                {"max_resource", std::to_string(b.max_resource)},
                {"reduction", std::to_string(b.reduction)}};
    o.tags = {{"cohort.sweep.role", "sweep"}};
    o.spool_when_unreachable = false;  // the sweep's journal is in that store: no server, no sweep
    if (!earlier_.sweep_id.empty()) o.tags["cohort.sweep.id"] = earlier_.sweep_id;
    auto run = TrackingRun::Start(o);
    if (!run.ok()) return run.status();
    sweep_run_ = std::move(*run);
    if (earlier_.sweep_id.empty()) {
      earlier_.sweep_id = sweep_run_->run_id();
      sweep_run_->SetTag("cohort.sweep.id", earlier_.sweep_id);
    }
    return journal_.Append(RunRecord("sweep", sweep_run_->run_id(), sweep_run_->run_id()).dump());
  }

  void Started(const TrialRecord& record) override {
    const int64_t id = record.trial.id;
    auto open = runs_.find(id);
    if (open != runs_.end()) {  // resumed from a pause: the same run goes on
      open->second->SetTag("cohort.sweep.state", "running");
      return;
    }
    TrackingOptions o;
    o.uri = uri_;
    o.project = spec_.name;
    o.run_name = spec_.name + "-trial-" + std::to_string(id);
    for (const auto& [name, value] : record.trial.params) o.params[name] = ValueToString(value);
    o.tags = {{"mlflow.parentRunId", sweep_run_->run_id()},
              {"cohort.sweep.id", earlier_.sweep_id},
              {"cohort.sweep.role", "trial"},
              {"cohort.sweep.trial", std::to_string(id)},
              {"cohort.sweep.state", "running"}};
    auto before = earlier_.trial_runs.find(id);  // the controller was stopped during this trial
    if (before != earlier_.trial_runs.end()) o.tags["cohort.sweep.resumed_from"] = before->second;
    if (record.trial.clone_of) {  // PBT's exploit: the dashboard's lineage view draws it
      o.tags["cohort.sweep.clone_of"] = std::to_string(*record.trial.clone_of);
      o.tags["cohort.sweep.clone_step"] = std::to_string(record.trial.start_step);
    }
    const std::string rungs = Rungs(record);
    if (!rungs.empty()) o.tags["cohort.sweep.rungs"] = rungs;
    auto run = TrackingRun::Start(o);
    if (!run.ok()) {  // the sweep goes on; the trial is only missing from the store
      Warn("trial " + std::to_string(id) + ": " + run.status().message());
      return;
    }
    json entry = RunRecord("trial", id, (*run)->run_id());
    if (!rungs.empty()) entry["rungs"] = rungs;
    Status s = journal_.Append(entry.dump());
    if (!s.ok()) Warn(s.message());
    runs_[id] = std::move(*run);
  }

  void Reported(const TrialRecord& record, int64_t step,
                const std::vector<std::pair<std::string, double>>& metrics) override {
    auto it = runs_.find(record.trial.id);
    if (it != runs_.end() && !metrics.empty()) it->second->Log(metrics, step);
  }

  void Changed(const TrialRecord& record) override {
    auto it = runs_.find(record.trial.id);
    if (it == runs_.end()) return;
    TrackingRun& run = *it->second;
    run.SetTag("cohort.sweep.state", TrialStateName(record.state));
    switch (record.state) {
      case TrialState::kRunning:
      case TrialState::kPaused:
        return;  // the run stays open until the trial ends
      case TrialState::kCompleted:
        NoteCompleted(*record.value);
        End(it, "FINISHED");
        return;
      case TrialState::kStopped:
        End(it, "KILLED");
        return;
      case TrialState::kFailed:
        run.SetTag("cohort.sweep.error", record.error);
        End(it, "FAILED");
        return;
    }
  }

  void Closing(bool finished) override {
    // Left open: paused trials of a finished sweep (their rung was their end),
    // or trials the controller stops, which a restart starts again in new runs.
    while (!runs_.empty()) {
      if (!finished) runs_.begin()->second->SetTag("cohort.sweep.state", "interrupted");
      End(runs_.begin(), "KILLED");
    }
    Status s = sweep_run_->Finish(finished ? "FINISHED" : "KILLED");
    if (!s.ok()) Warn("the sweep's run: " + s.message());
  }

 private:
  using OpenRuns = std::map<int64_t, std::unique_ptr<TrackingRun>>;

  // The rungs of the trial's bracket (ASHA, Hyperband), for the dashboard's
  // rung view; "" for other algorithms. A new trial's resource is its
  // bracket's first rung; a trial started again after a restart is past it,
  // so its rungs come from the journal.
  std::string Rungs(const TrialRecord& record) const {
    const std::string& algorithm = spec_.study.algorithm;
    const AlgorithmEntry* entry = FindSweepAlgorithm(algorithm);
    if (entry == nullptr || !entry->has_rungs) return "";
    auto before = earlier_.trial_rungs.find(record.trial.id);
    if (before != earlier_.trial_rungs.end()) return before->second;
    return RungResources(record.trial.resource, spec_.study.budget);
  }

  void End(OpenRuns::iterator it, const std::string& status) {
    Status s = it->second->Finish(status);
    if (!s.ok()) Warn("trial " + std::to_string(it->first) + ": " + s.message());
    runs_.erase(it);
  }

  // The sweep's run: the best value so far, by completed trials.
  void NoteCompleted(double value) {
    std::optional<double>& best = earlier_.best;
    if (!best || (spec_.study.maximize ? value > *best : value < *best)) best = value;
    sweep_run_->Log({{"best_" + spec_.metric, *best}}, ++earlier_.completed);
  }

  static void Warn(const std::string& what) {
    std::fprintf(stderr, "cohort sweep: tracking: %s\n", what.c_str());
  }

  const SweepSpec spec_;
  const std::string uri_;
  Journal& journal_;
  Earlier earlier_;
  std::unique_ptr<TrackingRun> sweep_run_;
  OpenRuns runs_;  // trials running or paused
};

}  // namespace

TrialObserverFactory TrackingObserver(const SweepSpec& spec, const std::string& uri) {
  return
      [spec, uri](const std::vector<std::string>& records, const std::vector<TrialRecord>& trials,
                  Journal& journal) -> Result<std::unique_ptr<TrialObserver>> {
        Earlier earlier = ReadJournal(records, trials, spec.study.maximize);
        // Before this controller opens its own runs: an embedded store is
        // one connection at a time.
        Status ended = EndEarlierRuns(uri, earlier);
        if (!ended.ok()) {
          std::fprintf(stderr, "cohort sweep: tracking: ending the earlier controller's runs: %s\n",
                       ended.message().c_str());
        }
        auto sweep = std::make_unique<TrackedSweep>(spec, uri, journal, std::move(earlier));
        COHORT_RETURN_IF_ERROR(sweep->Open());
        return std::unique_ptr<TrialObserver>(std::move(sweep));
      };
}

}  // namespace cohort::sweep
