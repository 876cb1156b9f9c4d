// The elastic driver: discovery, worker starts, rounds (see elastic_driver.h).
#include "launch/elastic_driver.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "common/deadline.h"
#include "launch/job_supervisor.h"
#include "launch/process_util.h"
#include "rendezvous/elastic_round.h"
#include "rendezvous/local_address.h"
#include "rendezvous/store_client.h"
#include "rendezvous/store_protocol.h"
#include "rendezvous/store_server.h"

namespace cohort {

namespace {

// A discovery script that prints nothing for this long is killed.
constexpr double kDiscoveryTimeoutSeconds = 10;
constexpr int kTickMs = 20;

void Say(const std::string& message) { WriteAll(STDERR_FILENO, "cohort run: " + message + "\n"); }

std::string FormatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", seconds);
  return buf;
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Runs `script` with /bin/sh and returns its stdout; the script's stderr is
// the launcher's. The launcher's blocked signals are unblocked in the child.
Result<std::string> RunDiscoveryScript(const std::string& script) {
  Result<Pipe> out = MakePipe();
  if (!out.ok()) return out.status();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out->write.get(), STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGCHLD);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const std::vector<std::string> args = {"/bin/sh", "-c", script};
  std::vector<char*> argv = NullTerminated(args);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  out->write.Close();
  if (error != 0) return Status::IoError("cannot run /bin/sh: " + ErrnoText(error));
  std::string output;
  const Deadline deadline = Deadline::AfterSeconds(kDiscoveryTimeoutSeconds);
  char buf[4096];
  bool timed_out = false;
  for (;;) {
    pollfd fd{out->read.get(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, deadline.RemainingMs());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    const ssize_t n = ::read(out->read.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::Timeout("the host discovery script '" + script + "' did not finish within " +
                           FormatSeconds(kDiscoveryTimeoutSeconds) + " s");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::IoError("the host discovery script '" + script + "' " + DescribeExit(status));
  }
  return output;
}

struct ElasticWorker {
  int id = 0;
  std::string host;
  bool alive = true;
  bool joined_once = false;  // has joined some round: past its start-up
};

class ElasticDriver : public JobSupervisor {
 public:
  ElasticDriver(const LaunchOptions& options, const ElasticOptions& elastic)
      : options_(options), elastic_(elastic) {}

  Result<std::string> StoreAddress(const LaunchOptions& options) override;
  Status Begin(JobControl& job, const StoreServer& store, const JobAddress& address,
               const std::string& local_path) override;
  bool OnExit(JobControl& job, int id, int status) override;
  void Tick(JobControl& job) override;
  int TickMs() const override { return kTickMs; }

 private:
  void Discover(JobControl& job);
  bool Reachable(const std::string& host);
  Status StartWorker(JobControl& job, const std::string& host);
  int Alive() const;
  int AliveOn(const std::string& host) const;
  ElasticWorker* Find(int id);
  std::vector<const ElasticWorker*> RankOrder() const;
  void WatchRound(JobControl& job);
  void PublishRound(JobControl& job);
  bool BelowMinimum(JobControl& job);
  void StopNewcomers(JobControl& job);
  Status SetKey(const std::string& key, const std::string& value);

  const LaunchOptions& options_;
  const ElasticOptions& elastic_;
  const StoreServer* store_ = nullptr;
  std::unique_ptr<StoreClient> client_;
  JobAddress address_;
  std::string local_path_, ssh_path_;
  std::vector<HostSlots> hosts_;        // as last discovered
  std::map<std::string, int> failed_;   // slots retired per host
  std::set<std::string> unreachable_;   // hosts the store's address does not reach
  std::vector<ElasticWorker> workers_;  // in start order
  std::optional<Deadline> next_discovery_;
  std::string change_;  // why the next round is needed; empty: none
  int64_t round_ = 0;
  std::vector<int> members_;                               // of round_, in rank order
  std::vector<int> training_;                              // members of the last round told to go
  bool go_ = false;                                        // round_ was told to go
  Deadline round_deadline_ = Deadline::AfterSeconds(0);    // for members past their start-up
  Deadline startup_deadline_ = Deadline::AfterSeconds(0);  // for newcomers
  int resets_ = 0;
  bool finished_ = false;  // a worker exited 0: no more rounds
  std::optional<Deadline> below_min_deadline_;
};

Status ElasticDriver::SetKey(const std::string& key, const std::string& value) {
  Status s = client_->Set(key, value);
  return s.ok() ? s : s.WithContext("elastic driver setting " + key);
}

// The first discovery decides where the store listens, as a host list does
// for a plain job (StoreListenAddress): --network-interface's address, else
// this host's source address toward the first remote host listed, else
// loopback. Without that, remote workers were told 127.0.0.1 and waited
// there for a store that was not theirs.
Result<std::string> ElasticDriver::StoreAddress(const LaunchOptions& options) {
  Result<std::string> output = RunDiscoveryScript(elastic_.discovery_script);
  if (!output.ok()) return output.status();
  Result<std::vector<HostSlots>> hosts = ParseDiscoveredHosts(*output);
  if (!hosts.ok()) return hosts.status().WithContext(elastic_.discovery_script);
  hosts_ = std::move(hosts).value();
  if (!options.network_interface.empty()) return InterfaceAddress(options.network_interface);
  LaunchOptions discovered = options;
  discovered.hosts = hosts_;
  return StoreListenAddress(discovered);
}

Status ElasticDriver::Begin(JobControl& job, const StoreServer& store, const JobAddress& address,
                            const std::string& local_path) {
  store_ = &store;
  address_ = address;
  local_path_ = local_path;
  Result<std::unique_ptr<StoreClient>> client = StoreClient::Connect(
      address.store_host, address.store_port, address.secret, Deadline::AfterSeconds(10));
  if (!client.ok()) return client.status().WithContext("elastic driver joining its own store");
  client_ = std::move(client).value();
  next_discovery_ = Deadline::AfterSeconds(elastic_.discovery_interval_seconds);
  change_ = "start";
  Discover(job);
  return Status::OK();
}

int ElasticDriver::Alive() const {
  int n = 0;
  for (const ElasticWorker& w : workers_) n += w.alive ? 1 : 0;
  return n;
}

int ElasticDriver::AliveOn(const std::string& host) const {
  int n = 0;
  for (const ElasticWorker& w : workers_) n += (w.alive && w.host == host) ? 1 : 0;
  return n;
}

ElasticWorker* ElasticDriver::Find(int id) {
  for (ElasticWorker& w : workers_) {
    if (w.id == id) return &w;
  }
  return nullptr;
}

// Whether workers on `host` can reach the store. A store on loopback (every
// host listed at the start was this one) is not reachable from another host
// found later: that is said once, and the host gets no workers.
bool ElasticDriver::Reachable(const std::string& host) {
  if (unreachable_.count(host) > 0) return false;
  if (address_.store_host.rfind("127.", 0) != 0 || IsLocalHost(host.substr(host.find('@') + 1))) {
    return true;
  }
  Say("host " + host + " is another host, but the job's store listens on " + address_.store_host +
      " (every host the discovery script listed at the start was this one); starting no "
      "workers there: give --network-interface for the store to listen where hosts found "
      "later reach it");
  unreachable_.insert(host);
  return false;
}

Status ElasticDriver::StartWorker(JobControl& job, const std::string& host) {
  const int id = static_cast<int>(workers_.size());
  LaunchOptions one = options_;
  one.np = 1;
  one.hosts = {{host, 1}};
  one.extra_env["COHORT_ELASTIC_WORKER"] = std::to_string(id);
  one.extra_env["COHORT_ELASTIC_TIMEOUT"] = FormatSeconds(elastic_.elastic_timeout_seconds);
  if (ssh_path_.empty() && !IsLocalHost(host.substr(host.find('@') + 1))) {
    std::optional<std::string> ssh = FindExecutable(options_.ssh.command.at(0));
    if (!ssh)
      return Status::InvalidArgument("ssh client not found: '" + options_.ssh.command[0] + "'");
    ssh_path_ = *ssh;
  }
  Result<std::vector<WorkerLaunch>> launch = PlanWorkers(one, address_, local_path_, ssh_path_);
  if (!launch.ok()) return launch.status();
  launch->at(0).rank = id;
  workers_.push_back({id, host, true});
  return job.AddWorker(launch->at(0));
}

// Starts a worker on every free slot (up to --max-np) and stops those whose
// host left the list.
void ElasticDriver::Discover(JobControl& job) {
  std::map<std::string, int> slots;
  for (const HostSlots& h : hosts_) slots[h.host] = h.slots;
  for (auto it = workers_.rbegin(); it != workers_.rend(); ++it) {
    ElasticWorker& w = *it;
    if (!w.alive) continue;
    const int allowed = slots.count(w.host) ? slots[w.host] - failed_[w.host] : 0;
    if (AliveOn(w.host) > allowed) {
      Say("host " + w.host + " has fewer slots now; stopping worker " + std::to_string(w.id));
      w.alive = false;  // its exit is expected
      job.Signal(w.id, SIGTERM);
      change_ = "host " + w.host + " shrank";
    }
  }
  for (const HostSlots& h : hosts_) {
    if (!Reachable(h.host)) continue;
    while (Alive() < elastic_.max_np && AliveOn(h.host) < h.slots - failed_[h.host]) {
      Status started = StartWorker(job, h.host);
      if (!started.ok()) {
        job.Stop("starting a worker on " + h.host + ": " + started.ToString(), 1);
        return;
      }
      if (change_.empty()) change_ = "a worker started on " + h.host;
    }
  }
}

// Hosts in the order of their earliest worker, workers by start within a
// host: the earliest survivor is rank 0, so the state it broadcasts is one
// that was trained, never a newcomer's.
std::vector<const ElasticWorker*> ElasticDriver::RankOrder() const {
  std::vector<std::string> hosts;
  for (const ElasticWorker& w : workers_) {
    if (w.alive && std::find(hosts.begin(), hosts.end(), w.host) == hosts.end())
      hosts.push_back(w.host);
  }
  std::vector<const ElasticWorker*> order;
  for (const std::string& host : hosts) {
    for (const ElasticWorker& w : workers_) {
      if (w.alive && w.host == host) order.push_back(&w);
    }
  }
  return order;
}

void ElasticDriver::PublishRound(JobControl& job) {
  if (round_ > 0) {
    ++resets_;
    if (elastic_.reset_limit >= 0 && resets_ > elastic_.reset_limit) {
      job.Stop("the job's workers changed " + std::to_string(resets_) +
                   " times, more than --reset-limit " + std::to_string(elastic_.reset_limit) +
                   " (last: " + change_ + ")",
               1);
      return;
    }
  }
  // Members still waiting on the old round move on to the new one.
  if (round_ > 0 && !go_) (void)SetKey(ElasticRoundKey(round_, "go"), "superseded");
  std::vector<ElasticMember> members;
  members_.clear();
  std::string ids;
  for (const ElasticWorker* w : RankOrder()) {
    members.push_back({std::to_string(w->id), w->host});
    members_.push_back(w->id);
    if (!ids.empty()) ids += ' ';
    ids += std::to_string(w->id);
  }
  ++round_;
  Status s = SetKey(ElasticRoundKey(round_, "members"), FormatElasticMembers(members));
  Result<int64_t> published = client_->Add(kElasticRoundKey, 1);
  if (s.ok() && !published.ok()) s = published.status();
  if (!s.ok()) {
    job.Stop(s.ToString(), 1);
    return;
  }
  Say("elastic round " + std::to_string(round_) + " (" + change_ +
      "): " + std::to_string(members.size()) + " workers, ranks 0.. are workers " + ids);
  go_ = false;
  round_deadline_ = Deadline::AfterSeconds(elastic_.elastic_timeout_seconds);
  startup_deadline_ =
      Deadline::AfterSeconds(std::max(elastic_.elastic_timeout_seconds, kElasticStartupSeconds));
  change_.clear();
}

// Says go once every member joined; removes members that do not join in
// time; notices members that left the round (their second join).
void ElasticDriver::WatchRound(JobControl& job) {
  std::map<std::string, int64_t> joins;
  const std::string prefix = ElasticRoundKey(round_, "joined/");
  for (const auto& [key, value] : store_->Published(prefix)) {
    joins[key.substr(prefix.size())] = store_protocol::DecodeI64(value, 0);
  }
  std::vector<int> missing;
  for (int id : members_) {
    const auto it = joins.find(std::to_string(id));
    ElasticWorker* w = Find(id);
    if (it == joins.end()) {
      missing.push_back(id);
    } else if (!w->joined_once) {
      w->joined_once = true;
    } else if (it->second > 1 && change_.empty()) {
      change_ = "worker " + std::to_string(id) + " left round " + std::to_string(round_);
    }
  }
  if (go_) return;
  if (missing.empty()) {
    go_ = true;
    training_ = members_;
    Status s = SetKey(ElasticRoundKey(round_, "go"), "go");
    if (!s.ok()) job.Stop(s.ToString(), 1);
    return;
  }
  for (int id : missing) {
    ElasticWorker* w = Find(id);
    if (!w->alive || !(w->joined_once ? round_deadline_ : startup_deadline_).Expired()) continue;
    const double waited = w->joined_once
                              ? elastic_.elastic_timeout_seconds
                              : std::max(elastic_.elastic_timeout_seconds, kElasticStartupSeconds);
    Say("worker " + std::to_string(id) + " on " + w->host + " did not join elastic round " +
        std::to_string(round_) + " within " + FormatSeconds(waited) +
        " s (--elastic-timeout); removing it");
    w->alive = false;  // once: its exit retires the slot and starts the next round
    ++failed_[w->host];
    change_ = "worker " + std::to_string(id) + " hung";
    job.Signal(id, SIGKILL);
  }
}

bool ElasticDriver::BelowMinimum(JobControl& job) {
  const int alive = Alive();
  if (alive >= elastic_.min_np) {
    below_min_deadline_.reset();
    return false;
  }
  if (!below_min_deadline_) {
    below_min_deadline_ = Deadline::AfterSeconds(elastic_.elastic_timeout_seconds);
  } else if (below_min_deadline_->Expired()) {
    job.Stop(std::to_string(alive) + " worker" + (alive == 1 ? "" : "s") +
                 " left, below --min-np " + std::to_string(elastic_.min_np) +
                 ", and no more slots were discovered within " +
                 FormatSeconds(elastic_.elastic_timeout_seconds) + " s (--elastic-timeout)",
             1);
  }
  return true;
}

void ElasticDriver::Tick(JobControl& job) {
  if (finished_) return;
  if (next_discovery_ && next_discovery_->Expired()) {
    Result<std::string> output = RunDiscoveryScript(elastic_.discovery_script);
    Result<std::vector<HostSlots>> hosts = output.ok()
                                               ? ParseDiscoveredHosts(*output)
                                               : Result<std::vector<HostSlots>>(output.status());
    if (hosts.ok()) {
      hosts_ = std::move(hosts).value();
      Discover(job);
    } else {
      Say(hosts.status().ToString() + "; keeping the hosts found before");
    }
    next_discovery_ = Deadline::AfterSeconds(elastic_.discovery_interval_seconds);
  }
  if (round_ > 0) WatchRound(job);
  if (BelowMinimum(job)) return;
  if (!change_.empty()) PublishRound(job);
}

// Training ended while workers waited to join it: they have nothing to join.
void ElasticDriver::StopNewcomers(JobControl& job) {
  for (ElasticWorker& w : workers_) {
    if (!w.alive || std::find(training_.begin(), training_.end(), w.id) != training_.end()) {
      continue;
    }
    Say("the job's training ended; stopping worker " + std::to_string(w.id) +
        ", which was waiting to join it");
    w.alive = false;  // its exit is expected
    job.Signal(w.id, SIGTERM);
  }
}

bool ElasticDriver::OnExit(JobControl& job, int id, int status) {
  ElasticWorker* w = Find(id);
  if (w == nullptr) return false;
  const bool expected = !w->alive;  // stopped by Discover, or removed as hung
  w->alive = false;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (!finished_) StopNewcomers(job);
    finished_ = true;  // training ended: the others finish too
    return true;
  }
  // A failure after the end is the job's failure, unless the driver stopped it.
  if (finished_) return expected;
  if (Alive() == 0) {
    // Nothing is left to wait for a new slot with.
    job.Stop("worker " + std::to_string(id) + " on " + w->host + " " + DescribeExit(status) +
                 "; no worker of the elastic job is left",
             1);
    return true;
  }
  if (!expected) {
    ++failed_[w->host];
    Say("worker " + std::to_string(id) + " on " + w->host + " " + DescribeExit(status) +
        "; going on with " + std::to_string(Alive()) + " worker" + (Alive() == 1 ? "" : "s"));
    change_ = "worker " + std::to_string(id) + " " + DescribeExit(status);
  }
  return true;
}

}  // namespace

Result<std::vector<HostSlots>> ParseDiscoveredHosts(const std::string& output) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(output);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    line = line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
    Result<std::vector<HostSlots>> parsed = ParseHostList(line);
    if (!parsed.ok() || parsed->size() != 1) {
      return Status::InvalidArgument(
          "host discovery output line " + std::to_string(number) + " '" + line +
          "': expected host or host:slots" +
          (parsed.ok() ? std::string() : " (" + parsed.status().message() + ")"));
    }
    const HostSlots& h = parsed->front();
    auto same = std::find_if(hosts.begin(), hosts.end(),
                             [&](const HostSlots& o) { return o.host == h.host; });
    if (same == hosts.end()) {
      hosts.push_back(h);
    } else {
      same->slots += h.slots;
    }
  }
  return hosts;
}

Result<int> RunElasticJob(const LaunchOptions& options, const ElasticOptions& elastic) {
  if (elastic.min_np < 1 || elastic.max_np < elastic.min_np) {
    return Status::InvalidArgument("--min-np " + std::to_string(elastic.min_np) + " and --max-np " +
                                   std::to_string(elastic.max_np) + ": need 1 <= min <= max");
  }
  if (elastic.discovery_script.empty()) {
    return Status::InvalidArgument("an elastic job needs --host-discovery-script");
  }
  ElasticDriver driver(options, elastic);
  return RunJob(options, &driver);
}

}  // namespace cohort
