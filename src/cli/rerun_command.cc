// `cohort rerun RUN_ID`: prints (or with --exec runs) the command a tracked
// run was started with, at the git commit it was started from, read from
// the run's provenance tags (python/cohort/track.py writes them). No
// recorded value reaches a shell: --exec runs an argv, and the printed line
// quotes every value.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "common/env_config.h"
#include "common/self_executable.h"
#include "launch/process_util.h"
#include "launch/shell_words.h"
#include "track/store.h"
#include "track/tracking_uri.h"
#include "track/transport.h"

namespace cohort::cli {
namespace {

constexpr char kSynopsis[] = "cohort rerun RUN_ID [--uri URI] [--exec]";

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "\n"
               "  Prints the shell command that runs RUN_ID again: in its working\n"
               "  directory, at its git commit, with its command line (under\n"
               "  `cohort run -np N` when it had N > 1 ranks).\n"
               "  --uri URI  the tracking store or server (default $COHORT_TRACKING_URI,\n"
               "             else $MLFLOW_TRACKING_URI, else $COHORT_SERVER, else\n"
               "             %s)\n"
               "  --exec     run that command instead of printing it\n",
               kSynopsis, track::DefaultStoreUri().c_str());
}

// How to run a tracked run again. Recorded values are data: they become
// argv elements and a working directory, never text a shell reads.
struct Rerun {
  std::string cwd;                // empty: the current directory
  std::string commit;             // empty: no checkout
  std::vector<std::string> argv;  // the command, under `cohort run -np N --` when N > 1
};

// `text` with control characters shown as \xNN: recorded values are
// printed, and must not drive the terminal (escape sequences).
std::string Visible(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// The position of the first control character of `text` but tabs and
// newlines (which a quoted word may hold); npos when there is none.
size_t ControlCharacter(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) return i;
  }
  return std::string::npos;
}

// The plan from the run's provenance tags, or an error naming the tag that
// is missing or holds what a shell would do more with than read, or what
// would drive the terminal it is printed on.
Result<Rerun> PlanRerun(const std::map<std::string, std::string>& tags, const std::string& run_id) {
  auto tag = [&](const char* key) {
    auto it = tags.find(key);
    return it == tags.end() ? std::string() : it->second;
  };
  auto refused = [&](const std::string& why) {
    return Status::InvalidArgument("run " + run_id + ": " + why);
  };
  const std::string command = tag("cohort.command");
  if (command.empty()) {
    return Status::InvalidArgument("run " + run_id +
                                   " has no recorded command (tag cohort.command): it was not "
                                   "started by cohort.track");
  }
  Rerun plan;
  plan.cwd = tag("cohort.cwd");
  plan.commit = tag("mlflow.source.git.commit");
  // A hash, as `git rev-parse HEAD` prints it: nothing git could take for
  // an option or a revision expression.
  if (!plan.commit.empty() &&
      (plan.commit.size() < 7 || plan.commit.size() > 64 ||
       plan.commit.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)) {
    return refused("the recorded git commit '" + Visible(plan.commit) +
                   "' (tag mlflow.source.git.commit) is not a commit hash");
  }
  for (const char* key : {"cohort.cwd", "cohort.command"}) {
    const size_t at = ControlCharacter(tag(key));
    if (at != std::string::npos) {
      return refused(std::string("the recorded ") +
                     (key == std::string("cohort.cwd") ? "directory" : "command") + " (tag " + key +
                     ") holds a control character (" + Visible(tag(key).substr(at, 1)) +
                     ") at position " + std::to_string(at));
    }
  }
  Result<std::vector<std::string>> words = SplitShellWords(command);
  if (!words.ok()) {
    return refused("the recorded command (tag cohort.command) is not a plain command line: " +
                   words.status().message() + " (cohort rerun runs it without a shell)");
  }
  const std::string world = tag("cohort.world_size");
  if (!world.empty() &&
      (world.size() > 9 || world.find_first_not_of("0123456789") != std::string::npos ||
       std::stoi(world) < 1)) {
    return refused("the recorded world size '" + Visible(world) +
                   "' (tag cohort.world_size) is not a positive integer");
  }
  if (!world.empty() && world != "1") plan.argv = {"cohort", "run", "-np", world, "--"};
  plan.argv.insert(plan.argv.end(), words->begin(), words->end());
  return plan;
}

// The plan as one shell command line, every value quoted.
std::string ShellLine(const Rerun& plan) {
  std::string line;
  if (!plan.cwd.empty()) line += "cd " + QuoteShellWord(plan.cwd) + " && ";
  if (!plan.commit.empty()) line += "git checkout --detach " + plan.commit + " && ";
  return line + JoinShellWords(plan.argv);
}

// Runs argv (looked up in PATH) in the current directory and waits; its
// exit status, 128+N when killed by signal N.
Result<int> RunAndWait(const std::vector<std::string>& argv) {
  std::vector<char*> args = NullTerminated(argv);
  pid_t pid = -1;
  const int error = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (error != 0) return Status::IoError("cannot run " + argv[0] + ": " + std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError(std::string("waitpid: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Carries the plan out: enters the directory, checks the commit out, then
// becomes the command (exec). Returns only on failure, with the exit status.
int Execute(Rerun plan) {
  if (!plan.cwd.empty() && chdir(plan.cwd.c_str()) != 0) {
    std::fprintf(stderr, "cohort rerun: cannot enter the recorded directory %s: %s\n",
                 plan.cwd.c_str(), std::strerror(errno));
    return 1;
  }
  if (!plan.commit.empty()) {
    Result<int> checkout = RunAndWait({"git", "checkout", "--detach", plan.commit});
    if (!checkout.ok() || *checkout != 0) {
      std::fprintf(stderr, "cohort rerun: git checkout --detach %s failed (%s)\n",
                   plan.commit.c_str(),
                   checkout.ok() ? ("exit status " + std::to_string(*checkout)).c_str()
                                 : checkout.status().message().c_str());
      return checkout.ok() ? *checkout : 1;
    }
  }
  if (plan.argv[0] == "cohort") plan.argv[0] = CohortBinary();
  std::vector<char*> args = NullTerminated(plan.argv);
  std::fflush(stdout);
  execvp(args[0], args.data());
  const int error = errno;
  std::fprintf(stderr, "cohort rerun: cannot run %s: %s\n", plan.argv[0].c_str(),
               std::strerror(error));
  return error == ENOENT ? 127 : 126;
}

}  // namespace

int RerunCommand(int argc, char** argv) {
  std::string run_id, uri;
  bool exec = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage();
      return 0;
    } else if (arg == "--exec") {
      exec = true;
    } else if (arg == "--uri" && i + 1 < argc) {
      uri = argv[++i];
    } else if (run_id.empty() && !arg.empty() && arg[0] != '-') {
      run_id = arg;
    } else {
      return UsageError("rerun", "unexpected argument '" + arg + "'", kSynopsis);
    }
  }
  if (run_id.empty()) return UsageError("rerun", "missing RUN_ID", kSynopsis);
  if (uri.empty()) {
    Result<http::AddressChoice> chosen = track::TrackingUriFromEnv(ProcessEnv());
    if (!chosen.ok()) {
      std::fprintf(stderr, "cohort rerun: %s\n", chosen.status().message().c_str());
      return 1;
    }
    http::WarnOfDisagreement(ProcessEnv());
    uri = chosen->value.empty() ? track::DefaultStoreUri() : chosen->value;
  }
  auto transport = track::OpenTransport(uri);
  if (!transport.ok()) {
    std::fprintf(stderr, "cohort rerun: %s\n", transport.status().message().c_str());
    return 1;
  }
  auto run = (*transport)->Call("GET", "runs/get", {{"run_id", run_id}});
  if (!run.ok()) {
    std::fprintf(stderr, "cohort rerun: %s\n", run.status().message().c_str());
    return 1;
  }
  std::map<std::string, std::string> tags;
  for (const auto& t : (*run)["run"]["data"].value("tags", nlohmann::json::array())) {
    tags[t.value("key", "")] = t.value("value", "");
  }
  Result<Rerun> plan = PlanRerun(tags, run_id);
  if (!plan.ok()) {
    std::fprintf(stderr, "cohort rerun: %s\n", plan.status().message().c_str());
    return 1;
  }
  if (!exec) {
    std::printf("%s\n", ShellLine(*plan).c_str());
    return 0;
  }
  transport->reset();  // an embedded store stays free for the rerun to record into
  return Execute(std::move(*plan));
}

}  // namespace cohort::cli
