// `cohort rerun RUN_ID`: prints (or with --exec runs) the command a tracked
// run was started with, at the git commit it was started from, read from
// the run's provenance tags (python/cohort/track.py writes them).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "track/errors.h"
#include "track/store.h"
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
               "             else %s)\n"
               "  --exec     run that command instead of printing it\n",
               kSynopsis, track::DefaultStoreUri().c_str());
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The command line, or an error naming the missing provenance tag.
Result<std::string> CommandFor(const std::map<std::string, std::string>& tags,
                               const std::string& run_id) {
  auto tag = [&](const char* key) {
    auto it = tags.find(key);
    return it == tags.end() ? std::string() : it->second;
  };
  std::string command = tag("cohort.command");
  if (command.empty()) {
    return Status::InvalidArgument("run " + run_id +
                                   " has no recorded command (tag cohort.command): it was not "
                                   "started by cohort.track");
  }
  std::string out;
  if (!tag("cohort.cwd").empty()) out += "cd " + ShellQuote(tag("cohort.cwd")) + " && ";
  if (!tag("mlflow.source.git.commit").empty()) {
    out += "git checkout --detach " + tag("mlflow.source.git.commit") + " && ";
  }
  std::string world = tag("cohort.world_size");
  if (!world.empty() && world != "1") out += "cohort run -np " + world + " -- ";
  return out + command;
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
    const char* env = std::getenv("COHORT_TRACKING_URI");
    uri = env && *env ? env : track::DefaultStoreUri();
  }
  auto transport = track::OpenTransport(uri);
  if (!transport.ok()) {
    std::fprintf(stderr, "cohort rerun: %s\n", track::ErrorMessage(transport.status()).c_str());
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
  auto command = CommandFor(tags, run_id);
  if (!command.ok()) {
    std::fprintf(stderr, "cohort rerun: %s\n", command.status().message().c_str());
    return 1;
  }
  if (!exec) {
    std::printf("%s\n", command->c_str());
    return 0;
  }
  transport->reset();  // an embedded store stays free for the rerun to record into
  std::fflush(stdout);
  int status = std::system(command->c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace cohort::cli
