// Planning each rank's process: placement, environment, ssh command line.
#include "launch/worker_plan.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/self_executable.h"
#include "launch/remote_agent.h"
#include "rendezvous/local_address.h"

namespace cohort {

namespace {

using EnvMap = std::map<std::string, std::string>;

EnvMap LauncherEnvironment() {
  EnvMap env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq != nullptr) env.emplace(std::string(*entry, eq - *entry), std::string(eq + 1));
  }
  return env;
}

std::vector<std::string> Entries(const EnvMap& env) {
  std::vector<std::string> entries;
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  return entries;
}

// ssh takes "user@host"; addresses and routes are about the host part.
std::string HostPart(const std::string& host) { return host.substr(host.find('@') + 1); }

bool RunsLocally(const std::string& host) { return host.empty() || IsLocalHost(HostPart(host)); }

// Variables every rank gets on top of its base environment.
EnvMap JobVariables(const LaunchOptions& o) {
  EnvMap vars = o.extra_env;
  if (!o.network_interface.empty()) vars["COHORT_NETWORK_INTERFACE"] = o.network_interface;
  return vars;
}

// What a remote rank's environment adds to what sshd gives it: the
// launcher's COHORT_* variables and those -x names, then the job's.
Result<EnvMap> RemoteBaseEnvironment(const LaunchOptions& o, const EnvMap& launcher) {
  EnvMap env;
  for (const auto& [name, value] : launcher) {
    if (name.rfind("COHORT_", 0) == 0) env[name] = value;
  }
  for (const std::string& entry : o.exported_env) {
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (name.empty() || name.find_first_of(" \t\n\0") != std::string::npos) {
      return Status::InvalidArgument("-x '" + entry + "': expected NAME or NAME=value");
    }
    if (eq != std::string::npos) {
      env[name] = entry.substr(eq + 1);
    } else if (auto it = launcher.find(name); it != launcher.end()) {
      env[name] = it->second;
    } else {
      return Status::InvalidArgument("-x " + name + ": not set in the launcher's environment");
    }
  }
  for (const auto& [name, value] : JobVariables(o)) env[name] = value;
  return env;
}

JobPlacement LocalPlacement(int np) {
  JobPlacement placement;
  for (int r = 0; r < np; ++r) placement.ranks.push_back({"", r, np, 0});
  placement.cross_size = 1;
  return placement;
}

void AddRankVariables(const JobPlacement& p, int rank, const JobAddress& job, EnvMap* env) {
  const RankPlacement& r = p.ranks[rank];
  (*env)["COHORT_RANK"] = std::to_string(rank);
  (*env)["COHORT_SIZE"] = std::to_string(p.ranks.size());
  (*env)["COHORT_LOCAL_RANK"] = std::to_string(r.local_rank);
  (*env)["COHORT_LOCAL_SIZE"] = std::to_string(r.local_size);
  (*env)["COHORT_CROSS_RANK"] = std::to_string(r.cross_rank);
  (*env)["COHORT_CROSS_SIZE"] = std::to_string(p.cross_size);
  (*env)["COHORT_STORE_ADDR"] = job.store_host + ":" + std::to_string(job.store_port);
  (*env)["COHORT_SECRET"] = job.secret;
}

Result<std::string> WorkingDirectory() {
  char path[PATH_MAX];
  if (::getcwd(path, sizeof(path)) == nullptr) {
    return Status::IoError("cannot read the working directory");
  }
  return std::string(path);
}

}  // namespace

Result<std::string> StoreListenAddress(const LaunchOptions& options) {
  std::vector<std::string> remote;
  for (const HostSlots& h : options.hosts) {
    if (!RunsLocally(h.host)) remote.push_back(HostPart(h.host));
  }
  if (remote.empty()) return std::string("127.0.0.1");
  if (!options.network_interface.empty()) return InterfaceAddress(options.network_interface);
  // A remote name that resolves to loopback (this host under another name)
  // says nothing about the route to the others.
  Status last = Status::OK();
  for (const std::string& host : remote) {
    Result<std::string> address = LocalAddressToward(host);
    if (address.ok() && address->rfind("127.", 0) != 0) return address;
    if (!address.ok()) last = address.status();
  }
  if (!last.ok()) return last.WithContext("choosing the store's address");
  return std::string("127.0.0.1");
}

Result<std::vector<WorkerLaunch>> PlanWorkers(const LaunchOptions& o, const JobAddress& job,
                                              const std::string& local_path,
                                              const std::string& ssh_path) {
  JobPlacement placement;
  if (o.hosts.empty()) {
    placement = LocalPlacement(o.np);
  } else {
    Result<JobPlacement> placed = PlaceRanks(o.hosts, o.np);
    if (!placed.ok()) return placed.status();
    placement = std::move(placed).value();
  }
  const EnvMap launcher = LauncherEnvironment();
  EnvMap local_base = launcher;
  for (const auto& [name, value] : JobVariables(o)) local_base[name] = value;
  Result<EnvMap> remote_base = RemoteBaseEnvironment(o, launcher);
  if (!remote_base.ok()) return remote_base.status();
  Result<std::string> cohort_path = o.cohort_path.empty() ? SelfExecutable() : o.cohort_path;
  if (!cohort_path.ok()) return cohort_path.status();
  Result<std::string> cwd = WorkingDirectory();
  if (!cwd.ok()) return cwd.status();

  // Whether a host is this one may take a name lookup: once per host.
  std::map<std::string, bool> here;
  for (const HostSlots& h : o.hosts) here.emplace(h.host, RunsLocally(h.host));
  std::vector<WorkerLaunch> launches;
  for (int rank = 0; rank < o.np; ++rank) {
    const std::string& host = placement.ranks[rank].host;
    WorkerLaunch launch;
    launch.rank = rank;
    if (host.empty() || here.at(host)) {
      EnvMap env = local_base;
      AddRankVariables(placement, rank, job, &env);
      launch.path = local_path;
      launch.argv = o.command;
      launch.env = Entries(env);
    } else {
      EnvMap env = *remote_base;
      AddRankVariables(placement, rank, job, &env);
      RemoteAgentOptions agent;
      agent.host = host;
      agent.rank = rank;
      agent.cwd = *cwd;
      agent.grace_seconds = o.grace_seconds;
      agent.command = o.command;
      launch.path = ssh_path;
      launch.argv = SshArgv(o.ssh, host, RemoteAgentCommandLine(*cohort_path, agent));
      launch.env = Entries(launcher);  // ssh's own: HOME, SSH_AUTH_SOCK, ...
      launch.host = host;
      launch.stdin_data = EncodeEnvBlock(env);
    }
    launches.push_back(std::move(launch));
  }
  return launches;
}

RankLocations WhereRanksRun(const LaunchOptions& options) {
  if (options.hosts.empty()) return {true, false};
  RankLocations where;
  Result<JobPlacement> placed = PlaceRanks(options.hosts, options.np);
  if (!placed.ok()) return where;
  // Ranks fill the hosts in order: the hosts that got any are the first
  // cross_size ones.
  for (int h = 0; h < placed->cross_size; ++h) {
    (RunsLocally(options.hosts[h].host) ? where.here : where.elsewhere) = true;
  }
  return where;
}

}  // namespace cohort
