// The scheduling loop and this host's executor.
#include "queue/queue_service.h"

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
// queue job, plus what tells the job who it is, and the queue's grace as
// COHORT_GRACE: a `cohort run` in the job then gives its workers the whole
// grace after the SIGTERM it forwards, not its own 2 s default.
bool SetByTheQueue(const std::string& entry) {
  for (const char* variable :
       {"COHORT_JOB_ID", "COHORT_JOB_SLOTS", "COHORT_JOB_RESTARTS", "COHORT_GRACE"}) {
    if (entry.rfind(std::string(variable) + "=", 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> JobEnv(const JobRecord& job, double grace_s) {
  std::vector<std::string> env;
  for (const std::string& entry : job.env) {
    if (!SetByTheQueue(entry)) env.push_back(entry);
  }
  env.push_back("COHORT_JOB_ID=" + std::to_string(job.id));
  env.push_back("COHORT_JOB_SLOTS=" + std::to_string(job.slots));
  env.push_back("COHORT_JOB_RESTARTS=" + std::to_string(job.restarts));
  char grace[32];
  std::snprintf(grace, sizeof(grace), "%g", grace_s);
  env.push_back(std::string("COHORT_GRACE=") + grace);
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
  if (!options.slurm_pool.empty()) {
    auto slurm = SlurmPool::Open(options.slurm_pool, options.slurm_partition);
    if (!slurm.ok()) return slurm.status();
    service->slurm_ = std::move(*slurm);
  }
  service->last_pass_ = service->started_ = WallClock();
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
  assigned_.notify_all();
  if (loop_.joinable()) loop_.join();
}

std::string QueueService::LogPath(uint64_t id) const {
  return options_.log_dir + "/" + std::to_string(id) + ".log";
}

uint64_t QueueService::LogSize(uint64_t id) const {
  std::error_code error;
  uint64_t size = std::filesystem::file_size(LogPath(id), error);
  return error ? 0 : size;
}

std::string QueueService::ExitPath(uint64_t id) const {
  return options_.log_dir + "/" + std::to_string(id) + ".exit";
}

std::string QueueService::RunPath(uint64_t id) const {
  return options_.log_dir + "/" + std::to_string(id) + ".run";
}

std::vector<sched::Host> QueueService::PoolHosts(const std::string& pool, double now) const {
  std::vector<sched::Host> hosts;
  if (slurm_ != nullptr && pool == slurm_->pool()) return {{kSlurmHost, slurm_->slots()}};
  if (pool == kDefaultPool && options_.local_slots > 0) {
    hosts.push_back({kLocalHost, options_.local_slots});
  }
  for (const auto& [name, agent] : agents_) {
    if (agent.pool == pool && AgentAlive(name, now)) hosts.push_back({name, agent.slots});
  }
  return hosts;
}

bool QueueService::AgentAlive(const std::string& name, double now) const {
  auto it = agents_.find(name);
  // An agent not heard of since this server started gets one timeout to call.
  double last_seen = it == agents_.end() ? started_ : it->second.last_seen;
  return now - last_seen <= options_.agent_timeout_s;
}

Result<uint64_t> QueueService::Submit(JobRecord job) {
  if (job.command.empty()) return Status::InvalidArgument("the job has no command");
  if (job.slots < 1) {
    return Status::InvalidArgument("slots must be at least 1, not " + std::to_string(job.slots));
  }
  std::unique_lock<std::mutex> lock(mu_);
  int pool_slots = 0;
  int largest = 0;
  std::vector<sched::Host> hosts = PoolHosts(job.pool, WallClock());
  for (const sched::Host& host : hosts) {
    pool_slots += host.slots;
    largest = std::max(largest, host.slots);
  }
  if (job.slots > pool_slots) {
    return Status::InvalidArgument("the job asks for " + std::to_string(job.slots) +
                                   " slots but pool '" + job.pool + "' has " +
                                   std::to_string(pool_slots) + " slots");
  }
  // A gang spans hosts only through agents (`cohort run -H` over them).
  int agent_slots = 0;
  for (const sched::Host& host : hosts) {
    if (host.name != kLocalHost && host.name != kSlurmHost) agent_slots += host.slots;
  }
  if (job.slots > largest && job.slots > agent_slots) {
    return Status::InvalidArgument(
        "the job asks for " + std::to_string(job.slots) + " slots but the largest host of pool '" +
        job.pool + "' has " + std::to_string(largest) + " and its agents together " +
        std::to_string(agent_slots) + " (a gang spans hosts only through agents)");
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
  if (IsRunning(job.state)) {
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
    if (!IsRunning(job.state)) continue;
    COHORT_RETURN_IF_ERROR(Follow(&job, now));
    if (IsRunning(job.state)) running.push_back({ToSpec(job), job.started, {}});
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
  assigned_.notify_all();
  return Status::OK();
}

Status QueueService::SchedulePool(const std::string& pool, const std::vector<JobRecord>& jobs,
                                  double now) {
  sched::QueueState state;
  state.now = now;
  state.usage = usage_;
  state.quota = options_.quota;
  state.hosts = PoolHosts(pool, now);
  std::map<std::string, int> host_index;
  for (size_t i = 0; i < state.hosts.size(); ++i) host_index[state.hosts[i].name] = int(i);
  std::map<uint64_t, const JobRecord*> by_id;
  for (const JobRecord& job : jobs) {
    if (job.pool != pool) continue;
    by_id[job.id] = &job;
    if (IsWaiting(job.state)) state.pending.push_back(ToSpec(job));
    if (!IsRunning(job.state)) continue;
    sched::RunningJob run;
    run.spec = ToSpec(job);
    run.started = job.started;
    for (const auto& [name, slots] : HostsOf(job)) {
      auto host = host_index.find(name);
      if (host != host_index.end()) run.placement.push_back({host->second, slots});
    }
    run.borrowed = job.borrowed;
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
  config.kind = options_.policy;
  config.grace_s = options_.grace_s;
  sched::Decision decision = sched::Schedule(state, config);
  for (const sched::PreemptDecision& preempt : decision.preemptions) {
    JobRecord job = *by_id.at(preempt.job);
    COHORT_RETURN_IF_ERROR(StopJob(&job, StopReason::kPreempt, preempt.reason, now));
  }
  for (const sched::StartDecision& start : decision.starts) {
    JobRecord job = *by_id.at(start.job);
    std::vector<std::pair<std::string, int>> hosts;
    bool agents_only = true;
    for (const sched::Placement& p : start.placement) {
      hosts.emplace_back(state.hosts[static_cast<size_t>(p.host)].name, p.slots);
      agents_only = agents_only && hosts.back().first != kLocalHost;
    }
    if (hosts.size() > 1 && !agents_only) {
      pending_status_[job.id] = {job.id, 0,
                                 "needs " + std::to_string(job.slots) +
                                     " slots on one host or on agents only (a gang spans "
                                     "hosts only through agents)",
                                 -1};
      continue;
    }
    job.host = hosts.front().first;
    job.borrowed = start.borrowed;
    job.placement = hosts.size() > 1 ? FormatPlacement(hosts) : "";
    COHORT_RETURN_IF_ERROR(Launch(&job, now));
  }
  for (const sched::PendingStatus& status : decision.pending) pending_status_[status.job] = status;
  return Status::OK();
}

std::vector<std::pair<std::string, int>> QueueService::HostsOf(const JobRecord& job) const {
  if (!job.placement.empty()) return ParsePlacement(job.placement);
  return {{job.host, job.slots}};
}

Status QueueService::Launch(JobRecord* job, double now) {
  job->state = JobState::kRunning;
  job->started = now;
  job->finished = 0;
  job->exit_code = -1;
  job->reason.clear();
  job->wrapper_pid = 0;
  job->wrapper_start.clear();
  job->job_pgid = 0;
  job->stop = StopReason::kNone;
  job->stop_since = 0;
  job->slurm_id.clear();
  if (job->host == kSlurmHost) {
    // The intent first: a restart finds a `starting` job's SLURM job by its
    // name (FollowStarting) rather than submitting it again.
    job->state = JobState::kStarting;
    COHORT_RETURN_IF_ERROR(store_->Update(*job));
    auto id = slurm_->Submit(*job, JobEnv(*job, options_.grace_s), LogPath(job->id));
    if (!id.ok()) {
      job->state = JobState::kFailed;
      job->finished = now;
      job->reason = "could not start: " + id.status().message();
      return store_->Update(*job);
    }
    job->state = JobState::kRunning;
    job->slurm_id = *id;
    return store_->Update(*job);
  }
  // An agent's job starts when the agent's next heartbeat collects it.
  if (job->host != kLocalHost) return store_->Update(*job);
  // The intent first, durably, and nothing of an earlier run left to be
  // mistaken for this one's: a restart reconciles a `starting` job through
  // its run file (FollowStarting) rather than starting it again.
  std::error_code ignored;
  std::filesystem::remove(ExitPath(job->id), ignored);
  std::filesystem::remove(RunPath(job->id), ignored);
  job->state = JobState::kStarting;
  COHORT_RETURN_IF_ERROR(store_->Update(*job));
  JobLaunch launch;
  launch.command = job->command;
  launch.env = JobEnv(*job, options_.grace_s);
  launch.cwd = job->cwd;
  launch.log_path = LogPath(job->id);
  launch.exit_path = ExitPath(job->id);
  launch.run_path = RunPath(job->id);
  auto process = StartJob(launch);
  if (!process.ok()) {
    job->state = JobState::kFailed;
    job->finished = now;
    job->reason = "could not start: " + process.status().message();
    job->host.clear();
    return store_->Update(*job);
  }
  job->state = JobState::kRunning;
  job->wrapper_pid = process->wrapper_pid;
  job->wrapper_start = process->wrapper_start;
  job->job_pgid = process->job_pgid;
  return store_->Update(*job);
}

Status QueueService::StopJob(JobRecord* job, StopReason reason, const std::string& why,
                             double now) {
  job->stop = reason;
  job->stop_since = now;
  job->reason = why;
  COHORT_RETURN_IF_ERROR(store_->Update(*job));  // before the signal: a restart knows why
  // An agent's job is signalled through the agent's heartbeat.
  if (job->host == kLocalHost) SignalJob(job->job_pgid, SIGTERM);
  // A job still `starting` has no SLURM id yet: it is signalled once adopted.
  if (job->host == kSlurmHost && !job->slurm_id.empty()) {
    return slurm_->Signal(job->slurm_id, /*kill=*/false);
  }
  return Status::OK();
}

Status QueueService::Follow(JobRecord* job, double now) {
  if (job->state == JobState::kStarting) return FollowStarting(job, now);
  if (job->host == kLocalHost) return FollowLocal(job, now);
  if (job->host == kSlurmHost) return FollowSlurm(job, now);
  std::string lost;
  for (const auto& [name, slots] : HostsOf(*job)) {
    if (lost.empty() && !AgentAlive(name, now)) lost = name;
  }
  if (!lost.empty()) {
    // Requeued to resume elsewhere from its last checkpoint.
    job->stop = StopReason::kPreempt;
    std::string reason = "requeued: agent " + lost + " stopped heartbeating";
    COHORT_RETURN_IF_ERROR(Finish(job, -1, now));
    job->reason = reason;
    return store_->Update(*job);
  }
  if (job->stop == StopReason::kNone && job->max_time > 0 && now - job->started > job->max_time) {
    return StopJob(job, StopReason::kMaxTime, "exceeded --max-time " + FormatSeconds(job->max_time),
                   now);
  }
  return Status::OK();
}

Status QueueService::FollowSlurm(JobRecord* job, double now) {
  if (slurm_ == nullptr) {
    job->stop = StopReason::kLost;
    job->reason = "lost: SLURM job " + job->slurm_id + " of a pool this server no longer runs";
    return Finish(job, -1, now);
  }
  auto code = slurm_->Poll(job->slurm_id);
  if (!code.ok()) return code.status();
  if (code->has_value()) return Finish(job, **code, now);
  if (job->stop != StopReason::kNone) {
    if (now - job->stop_since >= options_.grace_s) return slurm_->Signal(job->slurm_id, true);
    return Status::OK();
  }
  if (job->max_time > 0 && now - job->started > job->max_time) {
    return StopJob(job, StopReason::kMaxTime, "exceeded --max-time " + FormatSeconds(job->max_time),
                   now);
  }
  return Status::OK();
}

Status QueueService::FollowStarting(JobRecord* job, double now) {
  if (job->host == kSlurmHost) {
    if (slurm_ == nullptr) return FollowSlurm(job, now);  // fails it as lost
    auto found = slurm_->Find(*job);
    if (!found.ok()) return found.status();
    if (found->has_value()) {  // submitted by a server that died before recording it
      job->state = JobState::kRunning;
      job->slurm_id = **found;
      COHORT_RETURN_IF_ERROR(store_->Update(*job));
      if (job->stop != StopReason::kNone) {  // stopped meanwhile
        COHORT_RETURN_IF_ERROR(slurm_->Signal(job->slurm_id, /*kill=*/false));
      }
      return FollowSlurm(job, now);
    }
    return Requeue(job, now);
  }
  if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
  RunFile run = ReadRunFile(RunPath(job->id));
  if (run.locked) {
    if (run.wrapper_pid == 0) return Status::OK();  // being started: look again next pass
    // Started by a server that died before recording it: follow it.
    job->state = JobState::kRunning;
    job->wrapper_pid = run.wrapper_pid;
    job->wrapper_start = ProcessStartTime(run.wrapper_pid);
    job->job_pgid = run.job_pgid;
    COHORT_RETURN_IF_ERROR(store_->Update(*job));
    if (job->stop != StopReason::kNone) SignalJob(job->job_pgid, SIGTERM);  // stopped meanwhile
    return FollowLocal(job, now);
  }
  if (run.wrapper_pid != 0) {
    // It ran, and its wrapper is gone without an exit status: it is not
    // started again (at most once), and what is left of it is killed.
    if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
    KillOrphanedJob(run.job_pgid, run.wrapper_pid);
    job->stop = StopReason::kLost;
    job->reason = "lost: its wrapper process " + std::to_string(run.wrapper_pid) +
                  " ended without writing an exit status";
    return Finish(job, -1, now);
  }
  return Requeue(job, now);
}

Status QueueService::Requeue(JobRecord* job, double now) {
  // Never started (the server died before the job could run): it waits
  // again, and the policy starts it.
  job->state = job->restarts > 0 ? JobState::kPreempted : JobState::kPending;
  job->started = 0;
  job->host.clear();
  job->borrowed = false;
  if (job->stop == StopReason::kCancel) {
    job->state = JobState::kCancelled;
    job->finished = now;
  }
  job->stop = StopReason::kNone;
  job->stop_since = 0;
  return store_->Update(*job);
}

Status QueueService::FollowLocal(JobRecord* job, double now) {
  if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
  if (!WrapperAlive(job->wrapper_pid, job->wrapper_start)) {
    // The wrapper may have written the file between the two looks.
    if (auto code = ReadExitFile(ExitPath(job->id))) return Finish(job, *code, now);
    // Whatever of the job outlived its wrapper is the server's no longer.
    KillOrphanedJob(job->job_pgid, job->wrapper_pid);
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
    case StopReason::kCancel:
      job->state = JobState::kCancelled;
      break;
    case StopReason::kMaxTime:
    case StopReason::kLost:
      job->state = JobState::kFailed;
      break;
    case StopReason::kNone:
      job->state = exit_code == 0 ? JobState::kSucceeded : JobState::kFailed;
      job->reason = exit_code == 0 ? "" : "exit status " + std::to_string(exit_code);
      break;
  }
  if (IsFinal(job->state)) job->finished = now;
  if (!IsFinal(job->state)) {  // a final job keeps where it ran
    job->host.clear();
    job->placement.clear();
  }
  job->wrapper_pid = 0;
  job->wrapper_start.clear();
  job->job_pgid = 0;
  job->stop = StopReason::kNone;
  job->stop_since = 0;
  std::error_code ignored;
  std::filesystem::remove(RunPath(job->id), ignored);  // it says nothing of a next run
  return store_->Update(*job);
}

Result<AgentWork> QueueService::Heartbeat(const std::string& agent, const std::string& address,
                                          const std::string& pool, int slots,
                                          const std::vector<uint64_t>& running, double wait_s) {
  std::unique_lock<std::mutex> lock(mu_);
  double now = WallClock();
  auto it = agents_.find(agent);
  bool changed = it == agents_.end() || it->second.pool != pool || it->second.slots != slots ||
                 !AgentAlive(agent, now);
  agents_[agent] = {address.empty() ? agent : address, pool, slots, now};
  if (changed) {  // new capacity: schedule now
    wake_requested_ = true;
    wake_.notify_all();
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (true) {
    auto work = AgentWorkFor(agent, running, WallClock());
    if (!work.ok()) return work.status();
    bool idle = work->start.empty() && work->signal.empty() && work->drop.empty();
    if (!idle || stopping_ || assigned_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return work;
    }
  }
}

Result<AgentWork> QueueService::AgentWorkFor(const std::string& agent,
                                             const std::vector<uint64_t>& running, double now) {
  auto active = store_->Active();
  if (!active.ok()) return active.status();
  std::set<uint64_t> held(running.begin(), running.end());
  std::set<uint64_t> mine;
  AgentWork work;
  for (JobRecord& job : *active) {
    if (job.state != JobState::kRunning || job.host != agent) continue;
    mine.insert(job.id);
    bool runs = held.count(job.id) > 0;
    if (job.stop != StopReason::kNone) {
      if (!runs) {
        // Stopped before the agent started it: it ends as if killed at once.
        COHORT_RETURN_IF_ERROR(Finish(&job, 128 + SIGTERM, now));
        continue;
      }
      work.signal.push_back({job.id, now - job.stop_since >= options_.grace_s ? SIGKILL : SIGTERM});
    } else if (!runs) {
      AgentStart start{job.id,  job.command,     JobEnv(job, options_.grace_s),
                       job.cwd, LogSize(job.id), ""};
      if (!job.placement.empty()) {
        std::vector<std::pair<std::string, int>> hosts;
        for (const auto& [name, slots] : ParsePlacement(job.placement)) {
          auto it = agents_.find(name);
          hosts.emplace_back(it == agents_.end() ? name : it->second.address, slots);
        }
        start.hosts = FormatPlacement(hosts);
      }
      work.start.push_back(std::move(start));
    }
  }
  for (uint64_t id : held) {
    if (mine.count(id) == 0) work.drop.push_back(id);
  }
  return work;
}

nlohmann::json QueueService::AgentsJson() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  double now = WallClock();
  for (const auto& [name, agent] : agents_) {
    out.push_back({{"name", name},
                   {"pool", agent.pool},
                   {"slots", agent.slots},
                   {"last_seen", agent.last_seen},
                   {"alive", AgentAlive(name, now)}});
  }
  return out;
}

Status QueueService::ReportExit(const std::string& agent, uint64_t id, int exit_code) {
  std::unique_lock<std::mutex> lock(mu_);
  auto found = store_->Get(id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::InvalidArgument("no job " + std::to_string(id));
  JobRecord job = std::move(**found);
  if (job.state != JobState::kRunning || job.host != agent) return Status::OK();
  COHORT_RETURN_IF_ERROR(Finish(&job, exit_code, WallClock()));
  wake_requested_ = true;
  lock.unlock();
  wake_.notify_all();
  return Status::OK();
}

Result<uint64_t> QueueService::AppendLog(const std::string& agent, uint64_t id, uint64_t offset,
                                         const std::string& bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = store_->Get(id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::InvalidArgument("no job " + std::to_string(id));
  if ((*found)->state != JobState::kRunning || (*found)->host != agent) {
    return Status::InvalidArgument("job " + std::to_string(id) + " does not run on agent " + agent);
  }
  uint64_t size = LogSize(id);
  if (offset > size) {
    return Status::InvalidArgument("log offset " + std::to_string(offset) + " is past the " +
                                   std::to_string(size) + " bytes held");
  }
  if (offset + bytes.size() <= size) return size;
  std::ofstream out(LogPath(id), std::ios::binary | std::ios::app);
  out.write(bytes.data() + (size - offset),
            static_cast<std::streamsize>(bytes.size() - (size - offset)));
  out.flush();
  if (!out) return Status::IoError("cannot write the job log " + LogPath(id));
  return offset + bytes.size();
}

}  // namespace cohort::queue
