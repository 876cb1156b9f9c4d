// `cohort run`: parses the command line and hands the job to
// launch/local_launcher, which does the work. `cohort run --remote-agent` is
// the launcher's own helper on remote hosts (launch/remote_agent.h).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "cohort/status.h"
#include "common/settings.h"
#include "launch/elastic_driver.h"
#include "launch/local_launcher.h"
#include "launch/remote_agent.h"

namespace cohort::cli {

namespace {

// The usage line a usage error repeats: the help's own first line is longer
// than one terminal line.
constexpr char kSynopsis[] = "cohort run -np N [options] [--] COMMAND [ARGS...]";

// Multi-host settings: flag, variable. -x accumulates and has no variable.
constexpr std::pair<const char*, const char*> kHostFlags[] = {
    {"-H", "COHORT_HOSTS"},
    {"--host", "COHORT_HOSTS"},
    {"--hostfile", "COHORT_HOSTFILE"},
    {"--ssh-port", "COHORT_SSH_PORT"},
    {"--ssh-identity-file", "COHORT_SSH_IDENTITY_FILE"},
    {"--ssh-command", "COHORT_SSH_COMMAND"},
    {"--ssh-connect-timeout", "COHORT_SSH_CONNECT_TIMEOUT"},
    {"--network-interface", "COHORT_NETWORK_INTERFACE"},
    {"-x", "-x"},
};
constexpr const char* kHostVariables[] = {"COHORT_HOSTS",
                                          "COHORT_HOSTFILE",
                                          "COHORT_SSH_PORT",
                                          "COHORT_SSH_COMMAND",
                                          "COHORT_SSH_IDENTITY_FILE",
                                          "COHORT_SSH_CONNECT_TIMEOUT",
                                          "COHORT_NETWORK_INTERFACE"};

bool IsHostFlag(const std::string& name) {
  for (const auto& [flag, variable] : kHostFlags) {
    if (name == flag) return true;
  }
  return false;
}

std::string HostFlagVariable(const std::string& name) {
  for (const auto& [flag, variable] : kHostFlags) {
    if (name == flag) return variable;
  }
  return "";
}

// Fills the multi-host part of `options` from the settings (variable ->
// value), naming the flag or variable in errors.
Status ApplyHostSettings(const std::map<std::string, std::string>& settings,
                         LaunchOptions* options) {
  auto get = [&](const char* variable) -> std::string {
    auto it = settings.find(variable);
    return it == settings.end() ? "" : it->second;
  };
  const std::string hosts = get("COHORT_HOSTS"), hostfile = get("COHORT_HOSTFILE");
  if (!hosts.empty() && !hostfile.empty()) {
    return Status::InvalidArgument(
        "give -H (COHORT_HOSTS) or --hostfile (COHORT_HOSTFILE), not both");
  }
  if (!hosts.empty() || !hostfile.empty()) {
    Result<std::vector<HostSlots>> list =
        hosts.empty() ? ParseHostfile(hostfile) : ParseHostList(hosts);
    if (!list.ok()) return list.status();
    options->hosts = std::move(list).value();
    Result<JobPlacement> placed = PlaceRanks(options->hosts, options->np);
    if (!placed.ok()) return placed.status();
  }
  if (const std::string port = get("COHORT_SSH_PORT"); !port.empty()) {
    Result<int> value = ParsePositiveInt("--ssh-port", port);
    if (!value.ok()) return value.status();
    if (*value > 65535) return Status::InvalidArgument("--ssh-port '" + port + "' is above 65535");
    options->ssh.port = *value;
  }
  if (const std::string timeout = get("COHORT_SSH_CONNECT_TIMEOUT"); !timeout.empty()) {
    Result<double> value = ParsePositiveSeconds("--ssh-connect-timeout", timeout);
    if (!value.ok()) return value.status();
    options->ssh.connect_timeout_seconds = *value;
  }
  if (const std::string command = get("COHORT_SSH_COMMAND"); !command.empty()) {
    Result<std::vector<std::string>> words = ParseSshCommand(command);
    if (!words.ok()) return words.status().WithContext("--ssh-command");
    options->ssh.command = std::move(words).value();
  }
  options->ssh.identity_file = get("COHORT_SSH_IDENTITY_FILE");
  options->network_interface = get("COHORT_NETWORK_INTERFACE");
  return Status::OK();
}

void PrintUsage() {
  std::fprintf(stdout,
               "usage: cohort run -np N [-H HOST:SLOTS,... | --hostfile FILE] [options] [--] "
               "COMMAND [ARGS...]\n"
               "\n"
               "Starts N copies of COMMAND as ranks 0..N-1 of one job: on this host, or with\n"
               "-H/--hostfile across hosts over ssh. Each gets the rendezvous store's address\n"
               "and the job secret in its environment (COHORT_RANK, COHORT_SIZE,\n"
               "COHORT_LOCAL_RANK, COHORT_STORE_ADDR, ...). Workers may instead be started by\n"
               "srun (SLURM), mpirun (Open MPI) or torchrun, without cohort run; see\n"
               "docs/multi-host.md.\n"
               "Every line a worker prints is relayed with the prefix \"[RANK] \", stdout to\n"
               "stdout and stderr to stderr. When a worker fails, the others get SIGTERM\n"
               "(SIGKILL --grace seconds later) and cohort run exits with the failed worker's\n"
               "status (128+N when it was killed by signal N). SIGINT, SIGTERM and SIGHUP are\n"
               "forwarded to every worker, which have --grace seconds to save before SIGKILL.\n"
               "Workers read stdin from /dev/null.\n"
               "\n"
               "options:\n"
               "  -np N, -n N          number of workers (required, 1 to 16384, within ulimit -u)\n"
               "  --timeout-secs S     stop the whole job after S seconds; exit status 124\n");
  // The runtime settings' flags, from the settings table (common/settings.h).
  for (const SettingSpec& s : AllSettings()) {
    if (s.flag == nullptr || IsHostFlag(s.flag)) continue;  // listed with the hosts below
    const std::string default_text = s.default_text[0] == '\0' ? "unset" : s.default_text;
    std::fprintf(stdout, "  %-20s %s: %s (default %s)\n", (std::string(s.flag) + " V").c_str(),
                 s.variable, s.help, default_text.c_str());
  }
  std::fprintf(stdout,
               "  -h, --help           print this help\n"
               "\n"
               "elastic jobs (horovodrun's flags; workers join and leave without a restart,\n"
               "see cohort.torch.elastic; -np is then optional):\n"
               "  --host-discovery-script S  prints the current \"host:slots\" lines; run\n"
               "                       every second, a worker is started per free slot\n"
               "  --min-np N           fail when fewer workers are left (default -np or 1)\n"
               "  --max-np N           start at most N workers (default -np if given)\n"
               "  --reset-limit K      fail when the workers changed more than K times\n"
               "Output lines are then prefixed with the worker's id (its start order).\n"
               "\n"
               "hosts (ranks fill each host's slots in order; without hosts, all run here):\n"
               "  -H, --host LIST      COHORT_HOSTS: host1:2,host2:2 (no :N means 1 slot;\n"
               "                       a name of this host runs without ssh)\n"
               "  --hostfile FILE      COHORT_HOSTFILE: lines \"host slots=N\", # comments\n"
               "  --ssh-port P         COHORT_SSH_PORT: port of the hosts' sshd\n"
               "  --ssh-identity-file F  COHORT_SSH_IDENTITY_FILE: private key for ssh -i\n"
               "  --ssh-command CMD    COHORT_SSH_COMMAND: client and options (default ssh),\n"
               "                       e.g. \"ssh -F cluster/ssh_config\"\n"
               "  --ssh-connect-timeout S  COHORT_SSH_CONNECT_TIMEOUT: seconds (default 10)\n"
               "  --network-interface IF  COHORT_NETWORK_INTERFACE: interface(s) whose address\n"
               "                       the store and the mesh use (eth0 or eth0,ib0)\n"
               "  -x NAME[=VALUE]      pass NAME to remote workers (COHORT_* always are)\n"
               "Remote workers run in this working directory, through `cohort run\n"
               "--remote-agent` at this binary's path on each host; the job secret reaches\n"
               "them over ssh's stdin, never a command line. See docs/multi-host.md.\n"
               "\n"
               "exit status: 0 when every worker exits 0; 127 when COMMAND is not found;\n"
               "126 when it cannot be executed; 2 for a usage error.\n");
}

struct RunFlags {
  bool help = false;
  LaunchOptions options;
  std::optional<ElasticOptions> elastic;  // given --host-discovery-script
};

bool IsElasticFlag(const std::string& name) {
  return name == "--min-np" || name == "--max-np" || name == "--host-discovery-script" ||
         name == "--elastic-timeout" || name == "--reset-limit";
}

// Fills the elastic flags into `elastic` (flag -> value), naming the flag in errors.
Status ApplyElasticFlags(const std::map<std::string, std::string>& flags, int np,
                         ElasticOptions* elastic) {
  if (!flags.count("--host-discovery-script")) {
    return Status::InvalidArgument(flags.begin()->first +
                                   " needs --host-discovery-script (an elastic job)");
  }
  elastic->discovery_script = flags.at("--host-discovery-script");
  elastic->min_np = np > 0 ? np : 1;
  if (np > 0) elastic->max_np = np;
  for (const char* name : {"--min-np", "--max-np", "--reset-limit"}) {
    if (!flags.count(name)) continue;
    Result<int> n = std::string(name) == "--reset-limit" ? ParseNonNegativeInt(name, flags.at(name))
                                                         : ParsePositiveInt(name, flags.at(name));
    if (!n.ok()) return n.status();
    (std::string(name) == "--min-np"   ? elastic->min_np
     : std::string(name) == "--max-np" ? elastic->max_np
                                       : elastic->reset_limit) = *n;
  }
  if (flags.count("--max-np") == 0 && elastic->max_np < elastic->min_np) {
    elastic->max_np = kMaxRanks;
  }
  if (flags.count("--elastic-timeout")) {
    Result<double> s = ParsePositiveSeconds("--elastic-timeout", flags.at("--elastic-timeout"));
    if (!s.ok()) return s.status();
    elastic->elastic_timeout_seconds = *s;
  }
  if (elastic->max_np < elastic->min_np) {
    return Status::InvalidArgument("--max-np " + std::to_string(elastic->max_np) +
                                   " is below --min-np " + std::to_string(elastic->min_np));
  }
  return Status::OK();
}

// Options come first; the first argument that is not one (or the one after
// "--") starts the command, so the command's own flags are left alone.
Result<RunFlags> ParseFlags(int argc, char** argv) {
  RunFlags flags;
  flags.options.np = 0;
  // Host settings from the environment, overridden by flags.
  std::map<std::string, std::string> host_settings;
  std::map<std::string, std::string> elastic_flags;
  for (const char* variable : kHostVariables) {
    if (const char* value = ProcessEnv()(variable)) host_settings[variable] = value;
  }
  std::optional<double> grace_flag;
  int i = 0;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
      return flags;
    }
    std::string name = arg;
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (name == "-np" || name == "--np" || name == "-n" || name == "--timeout-secs" ||
               IsHostFlag(name) || IsElasticFlag(name) || FindSettingByFlag(name) != nullptr) {
      if (i + 1 >= argc) return Status::InvalidArgument(name + " needs a value");
      value = argv[++i];
    }
    if (name == "-np" || name == "--np" || name == "-n") {
      Result<int> np = ParsePositiveInt(name, value);
      if (!np.ok()) return np.status();
      flags.options.np = *np;
    } else if (name == "--timeout-secs") {
      Result<double> seconds = ParsePositiveSeconds(name, value);
      if (!seconds.ok()) return seconds.status();
      flags.options.timeout_seconds = *seconds;
    } else if (IsElasticFlag(name)) {
      elastic_flags[name] = value;
    } else if (IsHostFlag(name)) {
      host_settings[HostFlagVariable(name)] = value;
      if (name == "-x") flags.options.exported_env.push_back(value);
    } else if (name == "--grace") {
      // The launcher's own setting: not a worker's.
      Result<SettingValue> grace = ParseSetting(*FindSettingByFlag(name), value, name);
      if (!grace.ok()) return grace.status();
      grace_flag = grace->number;
    } else if (const SettingSpec* setting = FindSettingByFlag(name)) {
      // Checked here with the runtime's own parser: a bad value is a usage
      // error before any worker starts.
      Result<SettingValue> checked = ParseSetting(*setting, value, name);
      if (!checked.ok()) return checked.status();
      flags.options.extra_env[setting->variable] = value;
    } else {
      return Status::InvalidArgument("unknown option '" + arg + "'");
    }
  }
  if (!elastic_flags.empty()) {
    ElasticOptions elastic;
    COHORT_RETURN_IF_ERROR(ApplyElasticFlags(elastic_flags, flags.options.np, &elastic));
    if (host_settings.count("COHORT_HOSTS") || host_settings.count("COHORT_HOSTFILE")) {
      return Status::InvalidArgument(
          "an elastic job takes its hosts from --host-discovery-script, not -H or --hostfile");
    }
    flags.options.np = elastic.min_np;
    flags.elastic = elastic;
  }
  if (grace_flag) {
    flags.options.grace_seconds = *grace_flag;
  } else {
    // COHORT_GRACE: how a queued job gets the queue's grace.
    Result<SettingValue> grace = ReadSetting(ProcessEnv(), "COHORT_GRACE");
    if (!grace.ok()) return grace.status();
    flags.options.grace_seconds = grace->number;
  }
  if (flags.options.np == 0) return Status::InvalidArgument("-np N is required");
  COHORT_RETURN_IF_ERROR(CheckJobFits(flags.options.np));
  COHORT_RETURN_IF_ERROR(ApplyHostSettings(host_settings, &flags.options));
  for (; i < argc; ++i) flags.options.command.push_back(argv[i]);
  if (flags.options.command.empty()) return Status::InvalidArgument("no COMMAND given");
  return flags;
}

// `cohort run --remote-agent --host H --rank R --cwd DIR --grace-secs S --
// COMMAND...`, as ssh_launcher.cc writes it; not meant to be typed.
Result<RemoteAgentOptions> ParseAgentFlags(int argc, char** argv) {
  RemoteAgentOptions agent;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) return Status::InvalidArgument(name + " needs a value");
    const std::string value = argv[++i];
    if (name == "--host") {
      agent.host = value;
    } else if (name == "--rank") {
      Result<int> rank = ParseNonNegativeInt(name, value);
      if (!rank.ok()) return rank.status();
      agent.rank = *rank;
    } else if (name == "--cwd") {
      agent.cwd = value;
    } else if (name == "--grace-secs") {
      Result<double> grace = ParseNonNegativeNumber(name, value);
      if (!grace.ok()) return grace.status();
      agent.grace_seconds = *grace;
    } else {
      return Status::InvalidArgument("unknown --remote-agent option '" + name + "'");
    }
  }
  for (; i < argc; ++i) agent.command.push_back(argv[i]);
  return agent;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  if (argc > 0 && std::string(argv[0]) == "--remote-agent") {
    Result<RemoteAgentOptions> agent = ParseAgentFlags(argc, argv);
    if (!agent.ok()) {
      std::fprintf(stderr, "cohort run --remote-agent: %s\n", agent.status().message().c_str());
      return kExitUsage;
    }
    return RunRemoteAgent(*agent);
  }
  Result<RunFlags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) return UsageError("run", flags.status().message(), kSynopsis);
  if (flags->help) {
    PrintUsage();
    return 0;
  }
  Result<int> exit_code =
      flags->elastic ? RunElasticJob(flags->options, *flags->elastic) : RunJob(flags->options);
  if (!exit_code.ok()) {
    std::fprintf(stderr, "cohort run: %s\n", exit_code.status().ToString().c_str());
    return 1;
  }
  return *exit_code;
}

}  // namespace cohort::cli
