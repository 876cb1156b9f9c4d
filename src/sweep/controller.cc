// The sweep controller's loop (controller.h).
#include "sweep/controller.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "launch/local_launcher.h"
#include "sweep/journal.h"
#include "sweep/replay.h"
#include "sweep/report_server.h"
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

struct RunningTrial {
  int64_t id = 0;
  pid_t pid = 0;
  bool rerun = false;                                   // --rerun-best: not part of the study
  std::optional<double> last;                           // rank 0's last value of the metric
  std::set<std::string> other_metrics;                  // names reported without the metric
  std::vector<std::pair<std::string, double>> numbers;  // rank 0's latest report, every number
  // This run's answers by step, and the other ranks waiting for rank 0's.
  std::map<int64_t, std::string> answers;
  std::map<int64_t, std::vector<int>> waiters;
};

class Controller {
 public:
  Controller(const ControllerOptions& o, std::unique_ptr<Study> study,
             std::unique_ptr<Journal> journal, ReportServer server)
      : o_(o), study_(std::move(study)), journal_(std::move(journal)), server_(std::move(server)) {}

  Journal& journal() { return *journal_; }
  void set_observer(std::unique_ptr<TrialObserver> observer) { observer_ = std::move(observer); }

  Result<int> Run(std::set<int64_t> interrupted) {
    for (int64_t id : interrupted) relaunch_.push_back(id);
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
    return 0;
  }

 private:
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

  std::string TrialDir(int64_t id) const { return o_.dir + "/trials/" + std::to_string(id); }
  std::string CheckpointDir(int64_t id) const { return TrialDir(id) + "/checkpoint"; }

  Status Launch(const Trial& t, bool rerun) {
    const std::string dir = rerun ? o_.dir + "/rerun-" + std::to_string(t.id) : TrialDir(t.id);
    std::error_code ec;
    fs::create_directories(dir + "/checkpoint", ec);
    if (ec) return Status::IoError("cannot create '" + dir + "': " + ec.message());
    LaunchOptions launch;
    launch.np = o_.spec.workers;
    launch.command = o_.spec.command;
    launch.timeout_seconds = o_.trial_timeout;
    launch.extra_env = {
        {"COHORT_SWEEP_TRIAL", std::to_string(t.id)},
        {"COHORT_SWEEP_PARAMS", ParamsJson(t.params)},
        {"COHORT_SWEEP_SOCKET", server_.path()},
        {"COHORT_SWEEP_CHECKPOINT_DIR", dir + "/checkpoint"},
        {"COHORT_SWEEP_RESOURCE", std::to_string(t.resource)},
        {"COHORT_SWEEP_RESUMED", t.resumed ? "1" : "0"},
        {"COHORT_SWEEP_START_STEP", std::to_string(t.start_step)},
        {"COHORT_SWEEP_CLONE_FROM", t.clone_of ? CheckpointDir(*t.clone_of) : ""},
    };
    const std::string log = dir + "/log";
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Status::IoError("cannot open trial log '" + log + "'");
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(log_fd);
      return Status::IoError("fork failed for trial " + std::to_string(t.id));
    }
    if (pid == 0) RunTrialJob(launch, log_fd, parent);  // never returns
    ::close(log_fd);
    RunningTrial r;
    r.id = t.id;
    r.pid = pid;
    r.rerun = rerun;
    running_[pid] = r;
    if (observer_ && !rerun) observer_->Started(study_->Trials()[t.id]);
    std::printf("cohort sweep: trial %lld %s (resource %lld) %s\n", static_cast<long long>(t.id),
                rerun ? "re-run" : (t.resumed ? "resumed" : "started"),
                static_cast<long long>(t.resource), ParamsJson(t.params).c_str());
    std::fflush(stdout);
    return Status::OK();
  }

  // In the forked child: the job's launcher, stopped when the controller dies.
  [[noreturn]] void RunTrialJob(const LaunchOptions& launch, int log_fd, pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(143);  // the controller died before prctl
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    for (int fd : server_.Descriptors()) ::close(fd);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    Result<int> status = RunJob(launch);
    if (!status.ok())
      std::fprintf(stderr, "cohort sweep: %s\n", status.status().ToString().c_str());
    std::fflush(nullptr);
    ::_exit(status.ok() ? *status : 1);
  }

  RunningTrial* FindRunning(int64_t id) {
    for (auto& [pid, r] : running_) {
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
    if (m.rank != 0) {  // waits for rank 0's decision at this step
      auto it = r->answers.find(m.step);
      if (it != r->answers.end())
        server_.Reply(m.fd, it->second);
      else
        r->waiters[m.step].push_back(m.fd);
      return Status::OK();
    }
    Result<std::optional<double>> value = MetricValue(m.payload, r);
    std::string answer;
    if (!value.ok()) {
      answer = "error " + value.status().message();
    } else if (!value->has_value()) {
      answer = "continue";  // other metrics only: nothing to decide on
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
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return Status::OK();
      auto it = running_.find(pid);
      if (it == running_.end()) continue;
      RunningTrial r = it->second;
      running_.erase(it);
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      COHORT_RETURN_IF_ERROR(OnExit(r, code));
    }
  }

  Status OnExit(const RunningTrial& r, int code) {
    auto deferred = deferred_.find(r.id);
    if (deferred != deferred_.end()) {  // its paused run ended: now the resumed one
      Trial t = deferred->second;
      deferred_.erase(deferred);
      return Launch(t, false);
    }
    const std::string log =
        (r.rerun ? o_.dir + "/rerun-" + std::to_string(r.id) : TrialDir(r.id)) + "/log";
    if (r.rerun) {
      std::printf("cohort sweep: re-run of trial %lld exited %d, %s = %s (log: %s)\n",
                  static_cast<long long>(r.id), code, o_.spec.metric.c_str(),
                  r.last ? std::to_string(*r.last).c_str() : "never reported", log.c_str());
      return Status::OK();
    }
    const TrialRecord& rec = study_->Trials()[r.id];
    if (rec.state != TrialState::kRunning && !(rec.state == TrialState::kPaused && code != 0)) {
      return Status::OK();  // paused, stopped or complete by a report: its result stands
    }
    std::string error;
    if (code != 0) {
      error = "exit status " + std::to_string(code) + " (log: " + log + ")";
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
    for (const auto& [pid, r] : running_) ::kill(pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!running_.empty()) {
      int status;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) running_.erase(pid);
      if (pid < 0) break;
      if (std::chrono::steady_clock::now() > deadline) {
        for (const auto& [p, r] : running_) ::kill(p, SIGKILL);
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      }
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (observer_ && !o_.rerun_best) observer_->Closing(/*finished=*/false);
    return 128 + sig;
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

  const ControllerOptions& o_;
  std::unique_ptr<Study> study_;
  std::unique_ptr<Journal> journal_;
  ReportServer server_;
  std::map<pid_t, RunningTrial> running_;
  std::vector<int64_t> relaunch_;
  std::map<int64_t, Trial> deferred_;        // resumed trials whose paused job has not exited yet
  std::unique_ptr<TrialObserver> observer_;  // may be null
};

}  // namespace

Result<int> RunSweep(const ControllerOptions& options) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec)
    return Status::IoError("cannot create sweep directory '" + options.dir + "': " + ec.message());
  auto study = Study::Create(options.spec.study);
  if (!study.ok()) return study.status();
  auto journal = OpenFileJournal(options.dir + "/journal");
  if (!journal.ok()) return journal.status();
  auto records = (*journal)->Records();
  if (!records.ok()) return records.status();
  const uint64_t fingerprint = Fingerprint(options.spec_text);
  auto replay = Replay(*records, fingerprint, **study);
  if (!replay.ok()) return replay.status().WithContext(options.dir + "/journal");
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
  Controller controller(options, std::move(*study), std::move(*journal), std::move(*server));
  if (options.observer) {
    auto observer = options.observer(*records, trials, controller.journal());
    if (!observer.ok()) return observer.status();
    controller.set_observer(std::move(*observer));
  }
  Result<int> result = controller.Run(replay->running);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

}  // namespace cohort::sweep
