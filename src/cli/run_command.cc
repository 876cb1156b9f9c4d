// `cohort run`: parses the command line and hands the job to
// launch/local_launcher, which does the work.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cohort/status.h"
#include "launch/local_launcher.h"

namespace cohort::cli {

namespace {

constexpr int kExitUsage = 2;

// Settings that are passed to every worker as they are; the runtime checks
// their values at init and names the variable in any error.
struct EnvFlag {
  const char* flag;
  const char* variable;
  const char* help;
};
constexpr EnvFlag kEnvFlags[] = {
    {"--fusion-threshold", "COHORT_FUSION_THRESHOLD", "bytes of small allreduces fused into one (0: off)"},
    {"--fusion-max-tensor", "COHORT_FUSION_MAX_TENSOR", "largest tensor copied into the fusion buffer"},
    {"--cache-capacity", "COHORT_CACHE_CAPACITY", "response-cache slots for repeated steps (0: off)"},
    {"--cycle-time", "COHORT_CYCLE_TIME", "ms an idle engine waits before negotiating again"},
    {"--stall-check-time", "COHORT_STALL_CHECK_TIME", "s before tensors missing on some ranks are reported"},
    {"--stall-shutdown-time", "COHORT_STALL_SHUTDOWN_TIME", "s before they fail on every rank (0: never)"},
    {"--allreduce-algorithm", "COHORT_ALLREDUCE_ALGORITHM", "auto, shm, ring, recursive_doubling or hierarchical"},
    {"--small-message-bytes", "COHORT_SMALL_MESSAGE_BYTES", "size up to which latency-optimal algorithms run"},
    {"--chunk-bytes", "COHORT_CHUNK_BYTES", "pipelining chunk of the link-based algorithms"},
    {"--tcp-streams", "COHORT_TCP_STREAMS", "TCP connections per pair of ranks, bytes striped over them"},
    {"--shm-slot-bytes", "COHORT_SHM_SLOT_BYTES", "chunk of the shared-memory allreduce"},
    {"--log-level", "COHORT_LOG_LEVEL", "debug, info, warning or error"},
};

const EnvFlag* FindEnvFlag(const std::string& name) {
  for (const EnvFlag& f : kEnvFlags) {
    if (name == f.flag) return &f;
  }
  return nullptr;
}

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: cohort run -np N [options] [--] COMMAND [ARGS...]\n"
               "\n"
               "Starts N copies of COMMAND on this host as ranks 0..N-1 of one job, with the\n"
               "rendezvous store's address and the job secret in their environment\n"
               "(COHORT_RANK, COHORT_SIZE, COHORT_LOCAL_RANK, COHORT_STORE_ADDR, ...).\n"
               "Every line a worker prints is relayed with the prefix \"[RANK] \", stdout to\n"
               "stdout and stderr to stderr. When a worker fails, the others get SIGTERM\n"
               "(SIGKILL 2 s later) and cohort run exits with the failed worker's status\n"
               "(128+N when it was killed by signal N). SIGINT, SIGTERM and SIGHUP are\n"
               "forwarded to every worker. Workers read stdin from /dev/null.\n"
               "\n"
               "options:\n"
               "  -np N, -n N          number of workers (required, at least 1)\n"
               "  --timeout-secs S     stop the whole job after S seconds; exit status 124\n"
               "  --timeout S          COHORT_TIMEOUT: seconds any one rendezvous or collective\n"
               "                       wait may take before it fails (default 300)\n"
               "  --transport T        COHORT_TRANSPORT: auto, shm or tcp\n");
  for (const EnvFlag& f : kEnvFlags) {
    std::fprintf(out, "  %-20s %s: %s\n", (std::string(f.flag) + " V").c_str(), f.variable, f.help);
  }
  std::fprintf(out,
               "  -h, --help           print this help\n"
               "\n"
               "exit status: 0 when every worker exits 0; 127 when COMMAND is not found;\n"
               "126 when it cannot be executed; 2 for a usage error.\n");
}

int UsageError(const std::string& problem) {
  std::fprintf(stderr, "cohort run: %s\n\n", problem.c_str());
  PrintUsage(stderr);
  return kExitUsage;
}

struct RunFlags {
  bool help = false;
  LaunchOptions options;
};

// Options come first; the first argument that is not one (or the one after
// "--") starts the command, so the command's own flags are left alone.
Result<RunFlags> ParseFlags(int argc, char** argv) {
  RunFlags flags;
  flags.options.np = 0;
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
               name == "--timeout" || name == "--transport" || FindEnvFlag(name) != nullptr) {
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
    } else if (name == "--timeout") {
      Result<double> seconds = ParsePositiveSeconds(name, value);
      if (!seconds.ok()) return seconds.status();
      flags.options.extra_env["COHORT_TIMEOUT"] = value;
    } else if (name == "--transport") {
      if (value != "auto" && value != "shm" && value != "tcp") {
        return Status::InvalidArgument("--transport '" + value + "' is not auto, shm or tcp");
      }
      flags.options.extra_env["COHORT_TRANSPORT"] = value;
    } else if (const EnvFlag* f = FindEnvFlag(name)) {
      flags.options.extra_env[f->variable] = value;
    } else {
      return Status::InvalidArgument("unknown option '" + arg + "'");
    }
  }
  if (flags.options.np == 0) return Status::InvalidArgument("-np N is required");
  for (; i < argc; ++i) flags.options.command.push_back(argv[i]);
  if (flags.options.command.empty()) return Status::InvalidArgument("no COMMAND given");
  return flags;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  Result<RunFlags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) return UsageError(flags.status().message());
  if (flags->help) {
    PrintUsage(stdout);
    return 0;
  }
  Result<int> exit_code = RunLocalJob(flags->options);
  if (!exit_code.ok()) {
    std::fprintf(stderr, "cohort run: %s\n", exit_code.status().ToString().c_str());
    return 1;
  }
  return *exit_code;
}

}  // namespace cohort::cli
