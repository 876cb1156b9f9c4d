// The scheduling loop and this host's executor.
#include "queue/queue_service.h"

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "queue/job_process.h"

namespace cohort::queue {
namespace {

std::string FormatSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%gs", s);
  return text;
}

// The job's environment: the submitter's, without variables of an earlier
// queue job, plus what tells the job who it is.
std::vector<std::string> JobEnv(const JobRecord& job) {
  std::vector<std::string> env;
  for (const std::string& entry : job.env) {
    if (entry.rfind("COHORT_JOB_", 0) != 0) env.push_back(entry);
  }
  env.push_back("COHORT_JOB_ID=" + std::to_string(job.id));
  env.push_back("COHORT_JOB_SLOTS=" + std::to_string(job.slots));
  env.push_back("COHORT_JOB_RESTARTS=" + std::to_string(job.restarts));
  return env;
}

}  // namespace

double WallClock() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<QueueService>> QueueService::Start(const QueueOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(options.log_dir, error);
  if (error) {
    return Status::IoError("cannot create the queue's log directory " + options.log_dir + ": " +
                           error.message());
  }
  auto store = QueueStore::Open(options.db_path);
  if (!store.ok()) return store.status().WithContext("queue database " + options.db_path);
  std::unique_ptr<QueueService> service(new QueueService(options, std::move(*store)));
  service->last_pass_ = WallClock();
  // The first pass follows the running jobs a previous server started.
  COHORT_RETURN_IF_ERROR(service->Pass(WallClock()));
  service->loop_ = std::thread([s = service.get()] { s->Loop(); });
  return service;
}

QueueService::~QueueService() { Stop(); }

void QueueService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (loop_.joinable()) loop_.join();
}

std::string QueueService::LogPath(uint64_t id) const {
  return options_.log_dir + "/" + std::to_string(id) + ".log";
}

std::string QueueService::ExitPath(uint64_t id) const {
  return options_.log_dir + "/" + std::to_string(id) + ".exit";
}

int QueueService::PoolSlots(const std::string& pool) const {
  return pool == kDefaultPool ? options_.local_slots : 0;
}

Result<uint64_t> QueueService::Submit(JobRecord job) {
  if (job.command.empty()) return Status::InvalidArgument("the job has no command");
  if (job.slots < 1) {
    return Status::InvalidArgument("slots must be at least 1, not " + std::to_string(job.slots));
  }
  std::unique_lock<std::mutex> lock(mu_);
  int pool_slots = PoolSlots(job.pool);
  if (job.slots > pool_slots) {
    return Status::InvalidArgument("the job asks for " + std::to_string(job.slots) +
                                   " slots but pool '" + job.pool + "' has " +
                                   std::to_string(pool_slots) + " slots");
  }
  job.state = JobState::kPending;
  job.submitted = WallClock();
  auto id = store_->Insert(job);
  if (!id.ok()) return id.status();
  wake_requested_ = true;
  lock.unlock();
  wake_.notify_all();
  return id;
}

Result<std::optional<JobRecord>> QueueService::Get(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->Get(id);
}

Result<std::vector<JobRecord>> QueueService::List() {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->List();
}

std::optional<sched::PendingStatus> QueueService::PendingStatusOf(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_status_.find(id);
  if (it == pending_status_.end()) return std::nullopt;
  return it->second;
}

Status QueueService::Cancel(uint64_t id, const std::string& by) {
  std::unique_lock<std::mutex> lock(mu_);
  auto found = store_->Get(id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::InvalidArgument("no job " + std::to_string(id));
  JobRecord job = std::move(**found);
  if (IsFinal(job.state)) {
    return Status::InvalidArgument("job " + std::to_string(id) + " already " +
                                   StateName(job.state));
  }
  std::string why = "cancelled by " + (by.empty() ? std::string("anonymous") : by);
  if (job.state == JobState::kRunning) {
    if (job.stop == StopReason::kCancel) return Status::OK();
    COHORT_RETURN_IF_ERROR(StopJob(&job, StopReason::kCancel, why, WallClock()));
  } else {
    job.state = JobState::kCancelled;
    job.finished = WallClock();
    job.reason = why;
    COHORT_RETURN_IF_ERROR(store_->Update(job));
    pending_status_.erase(id);
  }
  wake_requested_ = true;
  lock.unlock();
  wake_.notify_all();
  return Status::OK();
}

void QueueService::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::duration<double>(options_.pass_interval_s),
                   [this] { return stopping_ || wake_requested_; });
    if (stopping_) break;
    wake_requested_ = false;
    lock.unlock();
    Status s = Pass(WallClock());
    if (!s.ok()) std::fprintf(stderr, "cohort server: queue pass: %s\n", s.ToString().c_str());
    lock.lock();
  }
}

Status QueueService::Pass(double now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto active = store_->Active();
  if (!active.ok()) return active.status();
  std::vector<sched::RunningJob> running;
  for (JobRecord& job : *active) {
    if (job.state != JobState::kRunning) continue;
    if (job.host == kLocalHost) COHORT_RETURN_IF_ERROR(Follow(&job, now));
    if (job.state == JobState::kRunning) running.push_back({ToSpec(job), job.started, {}});
  }
  sched::AdvanceUsage(running, std::max(0.0, now - last_pass_), options_.usage_half_life_s,
                      &usage_);
  last_pass_ = now;
  std::set<std::string> pools;
  for (const JobRecord& job : *active) {
    if (IsWaiting(job.state)) pools.insert(job.pool);
  }
  pending_status_.clear();
  for (const std::string& pool : pools) COHORT_RETURN_IF_ERROR(SchedulePool(pool, *active, now));
  return Status::OK();
}

Status QueueService::SchedulePool(const std::string& pool, const std::vector<JobRecord>& jobs,
                                  double now) {
  sched::QueueState state;
  state.now = now;
  state.usage = usage_;
  if (PoolSlots(pool) > 0) state.hosts.push_back({kLocalHost, PoolSlots(pool)});
  std::map<uint64_t, const JobRecord*> by_id;
  for (const JobRecord& job : jobs) {
    if (job.pool != pool) continue;
    by_id[job.id] = &job;
    if (IsWaiting(job.state)) state.pending.push_back(ToSpec(job));
    if (job.state != JobState::kRunning) continue;
    sched::RunningJob run;
    run.spec = ToSpec(job);
    run.started = job.started;
    run.placement = {{0, job.slots}};
    run.terminating = job.stop != StopReason::kNone;
    run.terminating_since = job.stop_since;
    state.running.push_back(std::move(run));
  }
  if (state.hosts.empty()) {
    for (const sched::JobSpec& spec : state.pending) {
      pending_status_[spec.id] = {spec.id, 0, "pool '" + pool + "' has no hosts", -1};
    }
    return Status::OK();
  }
  sched::PolicyConfig config;
  config.grace_s = options_.grace_s;
  sched::Decision decision = sched::Schedule(state, config);
  for (const sched::PreemptDecision& preempt : decision.preemptions) {
    JobRecord job = *by_id.at(preempt.job);
    COHORT_RETURN_IF_ERROR(StopJob(&job, StopReason::kPreempt, preempt.reason, now));
  }
  for (const sched::StartDecision& start : decision.starts) {
    JobRecord job = *by_id.at(start.job);
    COHORT_RETURN_IF_ERROR(Launch(&job, start.placement, now));
  }
  for (const sched::PendingStatus& status : decision.pending) pending_status_[status.job] = status;
  return Status::OK();
}

Status QueueService::Launch(JobRecord* job, const std::vector<sched::Placement>&, double now) {
  JobLaunch launch;
  launch.command = job->command;
  launch.env = JobEnv(*job);
  launch.cwd = job->cwd;
  launch.log_path = LogPath(job->id);
  launch.exit_path = ExitPath(job->id);
  auto process = StartJob(launch);
  if (!process.ok()) {
    job->state = JobState::kFailed;
    job->finished = now;
    job->reason = "could not start: " + process.status().message();
    return store_->Update(*job);
  }
  job->state = JobState::kRunning;
  job->started = now;
  job->finished = 0;
  job->exit_code = -1;
  job->reason.clear();
  job->host = kLocalHost;
  job->wrapper_pid = process->wrapper_pid;
  job->wrapper_start = process->wrapper_start;
  job->job_pgid = process->job_pgid;
  job->stop = StopReason::kNone;
  job->stop_since = 0;
  return store_->Update(*job);
}

Status QueueService::StopJob(JobRecord* job, StopReason reason, const std::string& why,
                             double now) {
  job->stop = reason;
  job->stop_since = now;
  job->reason = why;
  COHORT_RETURN_IF_ERROR(store_->Update(*job));  // before the signal: a restart knows why
  SignalJob(job->job_pgid, SIGTERM);
  return Status::OK();
}

Status QueueService::Follow(JobRecord* job, double now) {
  if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
  if (!WrapperAlive(job->wrapper_pid, job->wrapper_start)) {
    // The wrapper may have written the file between the two looks.
    if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
    job->stop = StopReason::kLost;
    job->reason = "lost: its wrapper process " + std::to_string(job->wrapper_pid) +
                  " ended without writing an exit status";
    return Finish(job, -1, now);
  }
  if (job->stop != StopReason::kNone) {
    if (now - job->stop_since >= options_.grace_s) SignalJob(job->job_pgid, SIGKILL);
    return Status::OK();
  }
  if (job->max_time > 0 && now - job->started > job->max_time) {
    return StopJob(job, StopReason::kMaxTime, "exceeded --max-time " + FormatSeconds(job->max_time),
                   now);
  }
  return Status::OK();
}

Status QueueService::Finish(JobRecord* job, int exit_code, double now) {
  job->exit_code = exit_code;
  switch (job->stop) {
    case StopReason::kPreempt:
      // Back in the queue; it resumes from its last checkpoint.
      job->state = JobState::kPreempted;
      job->restarts += 1;
      job->started = 0;
      break;
    case StopReason::kCancel: job->state = JobState::kCancelled; break;
    case StopReason::kMaxTime:
    case StopReason::kLost: job->state = JobState::kFailed; break;
    case StopReason::kNone:
      job->state = exit_code == 0 ? JobState::kSucceeded : JobState::kFailed;
      job->reason = exit_code == 0 ? "" : "exit status " + std::to_string(exit_code);
      break;
  }
  if (IsFinal(job->state)) job->finished = now;
  job->host.clear();
  job->wrapper_pid = 0;
  job->wrapper_start.clear();
  job->job_pgid = 0;
  job->stop = StopReason::kNone;
  job->stop_since = 0;
  return store_->Update(*job);
}

}  // namespace cohort::queue
