// The sweep controller's loop (controller.h).
#include "sweep/controller.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/settings.h"
#include "sweep/journal.h"
#include "sweep/replay.h"
#include "sweep/report_server.h"
#include "sweep/trial_executor.h"
#include "sweep/trial_observer.h"

namespace cohort::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

volatile sig_atomic_t g_stop_signal = 0;  // set by the SIGINT/SIGTERM handler only
void OnStopSignal(int sig) { g_stop_signal = sig; }

std::string ParamsJson(const Params& params) {
  json j = json::object();
  for (const auto& [k, v] : params) {
    if (const auto* i = std::get_if<int64_t>(&v))
      j[k] = *i;
    else if (const auto* d = std::get_if<double>(&v))
      j[k] = *d;
    else
      j[k] = std::get<std::string>(v);
  }
  return j.dump();
}

// A trial's queue job as the journal has it: {"op":"job","trial":N,"job":J,
// "queue":URL} when submitted, the same with "stopping":true when the
// controller cancelled it to stop (the trial then starts again on restart).
// Replay skips these records; the controller reads them to follow a job that
// outlived it instead of submitting the trial twice.
struct JobNote {
  int64_t job = 0;
  std::string where;
  bool stopping = false;
};

std::string JobRecord(int64_t trial, int64_t job, const std::string& where, bool stopping) {
  json j = {{"op", "job"}, {"trial", trial}, {"job", job}, {"queue", where}};
  if (stopping) j["stopping"] = true;
  return j.dump();
}

// What a restarted controller needs from the journal beyond the replay, read
// in one pass: the last job record of each trial, and each trial's decisions
// by step ("pause", ...).
struct QueueNotes {
  std::map<int64_t, JobNote> jobs;
  std::map<int64_t, std::map<int64_t, std::string>> decisions;
};

QueueNotes ReadQueueNotes(const std::vector<std::string>& records) {
  QueueNotes notes;
  for (const std::string& line : records) {
    json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object()) continue;
    const std::string op = r.value("op", "");
    const int64_t trial = r.value("trial", int64_t{-1});
    if (op == "job") {
      JobNote& note = notes.jobs[trial];
      note.job = r.value("job", int64_t{0});
      note.where = r.value("queue", "");
      note.stopping = r.value("stopping", false);
    } else if (op == "report") {
      notes.decisions[trial][r.value("step", int64_t{0})] = r.value("decision", "");
    }
  }
  return notes;
}

// Refuses to go on elsewhere than in the queue that may still run an
// interrupted trial's job (not cancelled by a stopping controller): the trial
// would run twice. `executor` null: this host.
Status CheckJobs(const std::map<int64_t, JobNote>& jobs, const std::set<int64_t>& interrupted,
                 const TrialExecutor* executor) {
  for (int64_t id : interrupted) {
    auto it = jobs.find(id);
    if (it == jobs.end() || it->second.stopping) continue;
    const JobNote& job = it->second;
    if (executor && executor->Durable() && executor->Where() == job.where) continue;
    return Status::InvalidArgument("trial " + std::to_string(id) + " runs as job " +
                                   std::to_string(job.job) + " of the queue at " + job.where +
                                   ": continue with --queue " + job.where +
                                   " (or cancel the job first: COHORT_SERVER=" + job.where +
                                   " cohort cancel " + std::to_string(job.job) + ")");
  }
  return Status::OK();
}

struct RunningTrial {
  int64_t id = 0;
  int64_t handle = 0;  // the executor's: a pid, a job id
  bool rerun = false;  // --rerun-best: not part of the study
  // Followed again after a restart: its reports up to `known_step` are in the
  // journal already, and a trial that sends one again (it lost the dead
  // controller's answer) hears the journal's decision, not a second report.
  bool adopted = false;
  int64_t known_step = -1;
  bool stopping = false;       // cancelled by a stopped controller: started again once it ended
  std::optional<double> last;  // rank 0's last value of the metric
  std::set<std::string> other_metrics;                  // names reported without the metric
  std::vector<std::pair<std::string, double>> numbers;  // rank 0's latest report, every number
  // This run's answers by step, and the other ranks waiting for rank 0's.
  std::map<int64_t, std::string> answers;
  std::map<int64_t, std::vector<int>> waiters;
};

class Controller {
 public:
  Controller(const ControllerOptions& o, std::unique_ptr<Study> study,
             std::unique_ptr<Journal> journal, ReportServer server,
             std::unique_ptr<TrialExecutor> executor)
      : o_(o),
        study_(std::move(study)),
        journal_(std::move(journal)),
        server_(std::move(server)),
        executor_(std::move(executor)) {
    if (!executor_) {
      executor_ = LocalTrialExecutor(o_.spec.workers, o_.spec.command, o_.trial_timeout,
                                     [this] { return server_.Descriptors(); });
    }
  }

  Journal& journal() { return *journal_; }
  void set_observer(std::unique_ptr<TrialObserver> observer) { observer_ = std::move(observer); }

  // `interrupted`: the trials that were running when the last controller
  // ended; `notes`: the queue jobs they may still have, from the journal.
  Result<int> Run(const std::set<int64_t>& interrupted, const QueueNotes& notes) {
    Result<int> result = Loop(interrupted, notes);
    // A controller that fails ends its trials too: queue jobs would outlive it.
    if (!result.ok() && !running_.empty()) (void)StopTrials();
    return result;
  }

 private:
  Result<int> Loop(const std::set<int64_t>& interrupted, const QueueNotes& notes) {
    COHORT_RETURN_IF_ERROR(Resume(interrupted, notes));
    if (o_.rerun_best) {
      auto best = study_->Best();
      if (!best)
        return Status::InvalidArgument("sweep '" + o_.spec.name +
                                       "' has no finished trial to re-run");
      COHORT_RETURN_IF_ERROR(Launch(best->trial, /*rerun=*/true));
    }
    for (;;) {
      if (g_stop_signal) return Stop();
      if (!o_.rerun_best) COHORT_RETURN_IF_ERROR(FillSlots());
      if (running_.empty()) break;
      for (const ReportMessage& m : server_.Poll(100)) COHORT_RETURN_IF_ERROR(OnReport(m));
      COHORT_RETURN_IF_ERROR(Reap());
    }
    PrintSummary();
    if (observer_ && !o_.rerun_best) observer_->Closing(/*finished=*/study_->Finished());
    return o_.rerun_best ? 0 : ExitStatus();
  }

  // 1 when every trial failed (a broken command or script, not a bad
  // region of the space), with the first failure's reason; else 0.
  int ExitStatus() const {
    const std::vector<TrialRecord>& trials = study_->Trials();
    const TrialRecord* first = nullptr;
    for (const TrialRecord& r : trials) {
      if (r.state != TrialState::kFailed) return 0;
      if (first == nullptr) first = &r;
    }
    if (first == nullptr) return 0;
    std::printf("cohort sweep: every trial failed (%zu of %zu); trial %lld: %s\n", trials.size(),
                trials.size(), static_cast<long long>(first->trial.id), first->error.c_str());
    std::fflush(stdout);
    return 1;
  }

  // Once per controller: a report without the spec's metric is found at the
  // first such report, not when the trial ends.
  void WarnMissingMetric(const ReportMessage& m, const RunningTrial& r) {
    if (warned_missing_metric_) return;
    warned_missing_metric_ = true;
    std::string names;
    for (const auto& [name, value] : r.numbers) names += (names.empty() ? "" : ", ") + name;
    std::printf(
        "cohort sweep: warning: trial %lld reported {%s} at step %lld without the metric '%s' "
        "(%s); a trial that ends without reporting it fails\n",
        static_cast<long long>(r.id), names.c_str(), static_cast<long long>(m.step),
        o_.spec.metric.c_str(), o_.spec.metric_where.c_str());
    std::fflush(stdout);
  }

  Status FillSlots() {
    while (static_cast<int>(running_.size()) < o_.spec.study.budget.concurrent) {
      if (!relaunch_.empty()) {
        int64_t id = relaunch_.back();
        relaunch_.pop_back();
        Trial t = study_->Trials()[id].trial;
        std::error_code ec;  // a missing directory is an empty one
        t.resumed = t.resumed || !fs::is_empty(CheckpointDir(id), ec);
        COHORT_RETURN_IF_ERROR(Launch(t, false));
        continue;
      }
      std::optional<Trial> t = study_->Ask();
      if (!t) break;
      COHORT_RETURN_IF_ERROR(journal_->Append(AskRecord(t->id)));
      if (FindRunning(t->id)) {
        // Resumed while its paused job is still exiting: started once that job is gone.
        deferred_[t->id] = *t;
        break;
      }
      COHORT_RETURN_IF_ERROR(Launch(*t, false));
    }
    return Status::OK();
  }

  // Trials interrupted with the last controller start again, except those
  // whose queue job outlived it: those are followed again.
  Status Resume(const std::set<int64_t>& interrupted, const QueueNotes& notes) {
    for (int64_t id : interrupted) {
      auto it = notes.jobs.find(id);
      if (it == notes.jobs.end()) {
        relaunch_.push_back(id);
        continue;
      }
      const JobNote& job = it->second;
      if (!executor_->Durable() || job.where != executor_->Where()) {
        relaunch_.push_back(id);  // cancelled when the last controller stopped (CheckJobs)
        continue;
      }
      COHORT_RETURN_IF_ERROR(executor_->Adopt(job.job, TrialDir(id) + "/log"));
      RunningTrial r;
      r.id = id;
      r.handle = job.job;
      r.adopted = true;
      r.stopping = job.stopping;
      const TrialRecord& rec = study_->Trials()[id];
      r.last = rec.value;
      r.known_step = rec.last_step;
      auto decisions = notes.decisions.find(id);
      if (decisions != notes.decisions.end()) {
        for (const auto& [step, decision] : decisions->second)
          r.answers[step] = decision + " " + std::to_string(rec.trial.resource);
      }
      running_[r.handle] = r;
      if (observer_ && !job.stopping) observer_->Started(rec);  // a new run, resumed_from the last
      std::printf("cohort sweep: trial %lld: following job %lld again%s\n",
                  static_cast<long long>(id), static_cast<long long>(job.job),
                  job.stopping ? " until it ends, then starting the trial again" : "");
    }
    std::fflush(stdout);
    return Status::OK();
  }

  std::string TrialDir(int64_t id) const { return o_.dir + "/trials/" + std::to_string(id); }
  std::string CheckpointDir(int64_t id) const { return TrialDir(id) + "/checkpoint"; }

  Status Launch(const Trial& t, bool rerun) {
    const std::string dir = rerun ? o_.dir + "/rerun-" + std::to_string(t.id) : TrialDir(t.id);
    std::error_code ec;
    fs::create_directories(dir + "/checkpoint", ec);
    if (ec) return Status::IoError("cannot create '" + dir + "': " + ec.message());
    TrialLaunch launch;
    launch.trial = t.id;
    launch.log = dir + "/log";
    launch.env = {
        {setting::kSweepTrial, std::to_string(t.id)},
        {setting::kSweepParams, ParamsJson(t.params)},
        {setting::kSweepSocket, server_.path()},
        {setting::kSweepCheckpointDir, dir + "/checkpoint"},
        {setting::kSweepResource, std::to_string(t.resource)},
        {setting::kSweepResumed, t.resumed ? "1" : "0"},
        {setting::kSweepStartStep, std::to_string(t.start_step)},
        {setting::kSweepCloneFrom, t.clone_of ? CheckpointDir(*t.clone_of) : ""},
    };
    Result<int64_t> handle = executor_->Start(launch);
    if (!handle.ok()) return handle.status().WithContext("trial " + std::to_string(t.id));
    if (executor_->Durable() && !rerun)
      COHORT_RETURN_IF_ERROR(journal_->Append(JobRecord(t.id, *handle, executor_->Where(), false)));
    RunningTrial r;
    r.id = t.id;
    r.handle = *handle;
    r.rerun = rerun;
    running_[r.handle] = r;
    if (observer_ && !rerun) observer_->Started(study_->Trials()[t.id]);
    std::printf("cohort sweep: trial %lld %s (resource %lld) %s%s\n", static_cast<long long>(t.id),
                rerun ? "re-run" : (t.resumed ? "resumed" : "started"),
                static_cast<long long>(t.resource), ParamsJson(t.params).c_str(),
                executor_->Durable() ? (" as job " + std::to_string(*handle)).c_str() : "");
    std::fflush(stdout);
    return Status::OK();
  }

  RunningTrial* FindRunning(int64_t id) {
    for (auto& [handle, r] : running_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }

  // The metric's value in a payload, or std::nullopt (names noted).
  Result<std::optional<double>> MetricValue(const std::string& payload, RunningTrial* r) {
    json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
    r->numbers.clear();
    if (j.is_number()) {
      r->numbers.emplace_back(o_.spec.metric, j.get<double>());
      return std::optional<double>(j.get<double>());
    }
    if (!j.is_object())
      return Status::InvalidArgument("report value must be a number or {metric: number}");
    for (const auto& item : j.items()) {
      if (item.value().is_number()) r->numbers.emplace_back(item.key(), item.value().get<double>());
    }
    if (j.contains(o_.spec.metric) && j[o_.spec.metric].is_number()) {
      return std::optional<double>(j[o_.spec.metric].get<double>());
    }
    for (const auto& item : j.items()) r->other_metrics.insert(item.key());
    return std::optional<double>();
  }

  Status OnReport(const ReportMessage& m) {
    RunningTrial* r = FindRunning(m.trial);
    if (!r) {
      server_.Reply(m.fd,
                    "error trial " + std::to_string(m.trial) + " is not running in this sweep");
      return Status::OK();
    }
    if (r->stopping) {  // its run is being cancelled and starts again: nothing to decide
      server_.Reply(m.fd, "error trial " + std::to_string(m.trial) +
                              " was stopped with the sweep; it starts again from its checkpoint");
      return Status::OK();
    }
    if (m.rank != 0) {  // waits for rank 0's decision at this step
      auto it = r->answers.find(m.step);
      if (it != r->answers.end())
        server_.Reply(m.fd, it->second);
      else
        r->waiters[m.step].push_back(m.fd);
      return Status::OK();
    }
    if (r->adopted && m.step <= r->known_step && r->answers.count(m.step)) {
      // Decided before the restart (the journal has it): the trial resends
      // a report whose answer it lost with the previous controller.
      server_.Reply(m.fd, r->answers[m.step]);
      return Status::OK();
    }
    Result<std::optional<double>> value = MetricValue(m.payload, r);
    std::string answer;
    if (!value.ok()) {
      answer = "error " + value.status().message();
    } else if (!value->has_value()) {
      answer = "continue";  // other metrics only: nothing to decide on
      WarnMissingMetric(m, *r);
      if (observer_ && !r->rerun)
        observer_->Reported(study_->Trials()[m.trial], m.step, r->numbers);
    } else if (r->rerun) {
      r->last = **value;
      answer = "continue";
    } else {
      r->last = **value;
      Result<Decision> d = study_->Report(m.trial, **value, m.step);
      if (!d.ok()) {
        answer = "error " + d.status().message();
      } else {
        COHORT_RETURN_IF_ERROR(journal_->Append(ReportRecord(m.trial, m.step, **value, *d)));
        if (observer_) {
          const TrialRecord& rec = study_->Trials()[m.trial];
          observer_->Reported(rec, m.step, r->numbers);
          if (rec.state != TrialState::kRunning) observer_->Changed(rec);
        }
        // With the resource to train to now: ASHA may have promoted the trial in place.
        answer = std::string(DecisionName(*d)) + " " +
                 std::to_string(study_->Trials()[m.trial].trial.resource);
      }
    }
    r->answers[m.step] = answer;
    server_.Reply(m.fd, answer);
    // Ranks waiting at this step, or at one rank 0 has passed without reporting it.
    while (!r->waiters.empty() && r->waiters.begin()->first <= m.step) {
      for (int fd : r->waiters.begin()->second) server_.Reply(fd, answer);
      r->waiters.erase(r->waiters.begin());
    }
    return Status::OK();
  }

  Status Reap() {
    Result<std::vector<TrialEnd>> ended = executor_->Reap();
    if (!ended.ok()) return ended.status();
    for (int64_t handle : executor_->Restarted()) {
      auto it = running_.find(handle);
      if (it == running_.end()) continue;
      // A new run of the trial: it reports its steps again, to the study, and
      // its ranks must not hear the old run's answers.
      RunningTrial& r = it->second;
      r.answers.clear();
      r.waiters.clear();
      r.adopted = false;
      std::printf(
          "cohort sweep: trial %lld: job %lld was preempted; it resumes from its "
          "checkpoint when the queue starts it again\n",
          static_cast<long long>(r.id), static_cast<long long>(handle));
      std::fflush(stdout);
    }
    for (const TrialEnd& end : *ended) {
      auto it = running_.find(end.handle);
      if (it == running_.end()) continue;
      RunningTrial r = it->second;
      running_.erase(it);
      COHORT_RETURN_IF_ERROR(OnExit(r, end));
    }
    return Status::OK();
  }

  Status OnExit(const RunningTrial& r, const TrialEnd& end) {
    auto deferred = deferred_.find(r.id);
    if (deferred != deferred_.end()) {  // its paused run ended: now the resumed one
      Trial t = deferred->second;
      deferred_.erase(deferred);
      return Launch(t, false);
    }
    if (r.stopping && !end.ok) {  // cancelled when a controller stopped: start the trial again
      relaunch_.push_back(r.id);
      return Status::OK();
    }  // (a job that succeeded before the cancel reached it is accounted as it ended)
    const int code = end.code;
    const std::string log =
        (r.rerun ? o_.dir + "/rerun-" + std::to_string(r.id) : TrialDir(r.id)) + "/log";
    if (r.rerun) {
      std::printf("cohort sweep: re-run of trial %lld exited %d, %s = %s (log: %s)\n",
                  static_cast<long long>(r.id), code, o_.spec.metric.c_str(),
                  r.last ? std::to_string(*r.last).c_str() : "never reported", log.c_str());
      return Status::OK();
    }
    const TrialRecord& rec = study_->Trials()[r.id];
    if (rec.state != TrialState::kRunning && !(rec.state == TrialState::kPaused && !end.ok)) {
      return Status::OK();  // paused, stopped or complete by a report: its result stands
    }
    std::string error;
    if (!end.ok) {
      error = end.failure + " (log: " + log + ")";
    } else if (!r.last) {
      error = o_.spec.metric_where + ": trial " + std::to_string(r.id) +
              " exited without reporting metric '" + o_.spec.metric + "'";
      if (!r.other_metrics.empty()) {
        std::string names;
        for (const std::string& n : r.other_metrics) names += (names.empty() ? "" : ", ") + n;
        error += " (it reported: " + names + ")";
      }
    }
    if (!error.empty()) {
      std::printf("cohort sweep: trial %lld failed: %s\n", static_cast<long long>(r.id),
                  error.c_str());
      COHORT_RETURN_IF_ERROR(journal_->Append(FailRecord(r.id, error)));
      COHORT_RETURN_IF_ERROR(study_->Fail(r.id, error));
    } else {
      COHORT_RETURN_IF_ERROR(journal_->Append(TellRecord(r.id, *r.last)));
      COHORT_RETURN_IF_ERROR(study_->Tell(r.id, *r.last));
    }
    if (observer_) observer_->Changed(study_->Trials()[r.id]);
    return Status::OK();
  }

  // Stops every running trial's job; they are started again on restart.
  Result<int> Stop() {
    int sig = g_stop_signal;
    std::printf("cohort sweep: stopping (signal %d); run the same command to continue\n", sig);
    std::fflush(stdout);
    COHORT_RETURN_IF_ERROR(StopTrials());
    if (observer_ && !o_.rerun_best) observer_->Closing(/*finished=*/false);
    return 128 + sig;
  }

  // Stops (cancels) the running trials' jobs; a restart starts them again.
  Status StopTrials() {
    Status noted;
    if (executor_->Durable()) {  // noted first: a restart must not wait for these to report
      for (const auto& [handle, r] : running_) {
        if (!r.rerun && noted.ok())
          noted = journal_->Append(JobRecord(r.id, handle, executor_->Where(), true));
      }
    }
    executor_->StopAll(kStopWaitS);
    running_.clear();
    return noted;
  }

  void PrintSummary() const {
    std::printf("cohort sweep: %s: %zu trials\n", o_.spec.name.c_str(), study_->Trials().size());
    for (const TrialRecord& r : study_->Trials()) {
      std::printf("  trial %-4lld %-9s %s=%-12s step %-5lld %s%s%s\n",
                  static_cast<long long>(r.trial.id), TrialStateName(r.state),
                  o_.spec.metric.c_str(), r.value ? std::to_string(*r.value).c_str() : "-",
                  static_cast<long long>(r.last_step), ParamsJson(r.trial.params).c_str(),
                  r.error.empty() ? "" : "  ", r.error.c_str());
    }
    if (auto best = study_->Best()) {
      std::printf("best: trial %lld %s=%g %s\n", static_cast<long long>(best->trial.id),
                  o_.spec.metric.c_str(), *best->value, ParamsJson(best->trial.params).c_str());
    }
    std::fflush(stdout);
  }

  // How long a stopping controller waits for its trials' jobs to end.
  static constexpr double kStopWaitS = 30;

  const ControllerOptions& o_;
  std::unique_ptr<Study> study_;
  std::unique_ptr<Journal> journal_;
  ReportServer server_;
  std::unique_ptr<TrialExecutor> executor_;
  std::map<int64_t, RunningTrial> running_;  // by handle
  std::vector<int64_t> relaunch_;
  std::map<int64_t, Trial> deferred_;        // resumed trials whose paused job has not exited yet
  std::unique_ptr<TrialObserver> observer_;  // may be null
  bool warned_missing_metric_ = false;
};

}  // namespace

Result<int> RunSweep(const ControllerOptions& options) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec)
    return Status::IoError("cannot create sweep directory '" + options.dir + "': " + ec.message());
  auto study = Study::Create(options.spec.study);
  if (!study.ok()) return study.status();
  auto journal = options.journal ? options.journal() : OpenFileJournal(options.dir + "/journal");
  if (!journal.ok()) return journal.status();
  auto records = (*journal)->Records();
  if (!records.ok()) return records.status();
  const uint64_t fingerprint = Fingerprint(options.spec_text);
  auto replay = Replay(*records, fingerprint, **study);
  if (!replay.ok()) {
    return replay.status().WithContext(options.journal ? options.journal_name
                                                       : options.dir + "/journal");
  }
  std::unique_ptr<TrialExecutor> executor;  // null: the controller's LocalTrialExecutor
  if (options.executor) {
    auto made = options.executor();
    if (!made.ok()) return made.status();
    executor = std::move(*made);
  }
  const QueueNotes notes = ReadQueueNotes(*records);
  COHORT_RETURN_IF_ERROR(CheckJobs(notes.jobs, replay->running, executor.get()));
  if (!replay->started) COHORT_RETURN_IF_ERROR((*journal)->Append(StartRecord(fingerprint)));
  if (replay->started) {
    std::printf("cohort sweep: continuing '%s' from %s (%zu records, %zu trials, %zu to restart)\n",
                options.spec.name.c_str(), options.dir.c_str(), records->size(),
                (*study)->Trials().size(), replay->running.size());
  }
  if (options.extend > 0) {
    COHORT_RETURN_IF_ERROR((*journal)->Append(ExtendRecord(options.extend)));
    (*study)->AddTrials(options.extend);
  }
  auto server = ReportServer::Listen(options.dir + "/controller.sock");
  if (!server.ok()) return server.status();
  {  // `cohort sweep SPEC --stop` signals the pid written here
    std::FILE* f = std::fopen((options.dir + "/controller.pid").c_str(), "w");
    if (!f) return Status::IoError("cannot write '" + options.dir + "/controller.pid'");
    std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
    std::fclose(f);
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  struct sigaction old_int, old_term;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  std::vector<TrialRecord> trials = (*study)->Trials();
  Controller controller(options, std::move(*study), std::move(*journal), std::move(*server),
                        std::move(executor));
  if (options.observer) {
    auto observer = options.observer(*records, trials, controller.journal());
    if (!observer.ok()) return observer.status();
    controller.set_observer(std::move(*observer));
  }
  Result<int> result = controller.Run(replay->running, notes);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

}  // namespace cohort::sweep
