// `cohort agent`: makes this host part of a `cohort server`'s pool
// (queue/queue_agent.h) until SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "common/settings.h"
#include "queue/queue_agent.h"

namespace cohort::cli {
namespace {

const char kSynopsis[] = "cohort agent [--server URL] [--slots N] [--pool P] [--name NAME]";
const char kHelp[] =
    "                    [--address ADDR] [--work-dir DIR] [--heartbeat S]\n"
    "                    [--credential-file FILE]\n"
    "\n"
    "Runs queued jobs on this host for `cohort server`: heartbeats, starts the jobs the\n"
    "server places here, streams their logs and reports their exit. Its jobs die with\n"
    "it; the server requeues them after its agent timeout. It proves who it is with its\n"
    "credential (cohort agent-credential add NAME on the server's store; required\n"
    "under --auth), else with the queue's token (COHORT_QUEUE_TOKEN, or found on the\n"
    "server's host).\n"
    "  --server URL     the server (default COHORT_SERVER, else COHORT_TRACKING_URI's\n"
    "                   server, else http://127.0.0.1:5000)\n"
    "  --slots N        slots this host offers (default: its core count)\n"
    "  --pool P         the pool it joins (default 'default')\n"
    "  --name NAME      its name (default: the host name)\n"
    "  --address ADDR   how the other hosts of a gang reach this one with ssh\n"
    "                   (default: NAME)\n"
    "  --work-dir DIR   local job logs (default $TMPDIR/cohort-agent-NAME)\n"
    "  --heartbeat S    seconds between heartbeats at most (default 1)\n"
    "  --credential-file FILE  a file holding its credential (default:\n"
    "                   COHORT_AGENT_CREDENTIAL)\n";

int Usage(const std::string& problem) { return UsageError("agent", problem, kSynopsis); }

// The agent's credential: the file's first line, else COHORT_AGENT_CREDENTIAL,
// else "" (the queue's token is sent instead).
Result<std::string> ReadCredential(const std::string& file) {
  if (file.empty()) {
    auto variable = ReadSetting(ProcessEnv(), "COHORT_AGENT_CREDENTIAL");
    if (!variable.ok()) return variable.status();
    return variable->text;
  }
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    return Status::InvalidArgument("--credential-file " + file + " holds no credential");
  }
  return line;
}

}  // namespace

int AgentCommand(int argc, char** argv) {
  queue::AgentOptions options;
  options.slots = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  std::string credential_file;
  std::string server;  // --server; "" for COHORT_SERVER (or its alias)
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      PrintHelp(kSynopsis, kHelp);
      return 0;
    }
    if (i + 1 >= argc) return Usage("unknown flag or missing value: " + flag);
    std::string value = argv[++i];
    if (flag == "--server") {
      server = value;
    } else if (flag == "--slots") {
      auto slots = ParsePositiveInt(flag, value);
      if (!slots.ok()) return Usage(slots.status().message());
      options.slots = *slots;
    } else if (flag == "--pool") {
      options.pool = value;
    } else if (flag == "--name") {
      options.name = value;
    } else if (flag == "--address") {
      options.address = value;
    } else if (flag == "--work-dir") {
      options.work_dir = value;
    } else if (flag == "--credential-file") {
      credential_file = value;
    } else if (flag == "--heartbeat") {
      auto seconds = ParsePositiveSeconds(flag, value);
      if (!seconds.ok()) return Usage(seconds.status().message());
      options.heartbeat_s = *seconds;
    } else {
      return Usage("unknown flag " + flag);
    }
  }
  if (options.name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    options.name = host;
  }
  if (options.work_dir.empty()) {
    options.work_dir =
        (std::filesystem::temp_directory_path() / ("cohort-agent-" + options.name)).string();
  }
  // SIGINT/SIGTERM are taken between heartbeats (the jobs reset the mask).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto credential = ReadCredential(credential_file);
  if (!credential.ok()) {
    std::fprintf(stderr, "cohort agent: %s\n", credential.status().message().c_str());
    return 1;
  }
  queue::QueueClient client =
      server.empty() ? queue::QueueClient() : queue::QueueClient(server, "--server");
  if (!credential->empty()) client.UseCredential(*credential);
  queue::QueueAgent agent(options, &client);
  std::printf("cohort agent %s: %d slots in pool '%s' of %s\n", options.name.c_str(), options.slots,
              options.pool.c_str(), client.server().c_str());
  std::fflush(stdout);
  Status s = agent.Run([&stop] {
    struct timespec none = {0, 0};
    return sigtimedwait(&stop, nullptr, &none) > 0;
  });
  if (!s.ok()) {
    std::fprintf(stderr, "cohort agent: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::cli
