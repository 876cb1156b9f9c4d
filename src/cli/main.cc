// The `cohort` binary: dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/usage_error.h"

namespace {

constexpr char kSynopsis[] = "cohort <command> [options]";

// Commands only the full build has (the minimal one, CMakeLists.txt's
// COHORT_MINIMAL, has no data, tracking or queue).
#ifdef COHORT_MINIMAL
constexpr char kFullBuildCommands[] = "";
#else
constexpr char kFullBuildCommands[] =
    "  data    datasets: cohort data info|log|diff|checkout|verify|ingest\n"
    "  sched   scheduling policy: cohort sched simulate TRACE|--synthetic\n"
    "  server  experiment tracking server (MLflow REST API): cohort server\n"
    "  rerun   print or run a tracked run's command again: cohort rerun RUN_ID\n"
    "  user    users: cohort user add NAME; cohort user grant ...; token: cohort token\n"
    "          create USER\n"
    "  sweep   hyperparameter search: cohort sweep SPEC.yaml\n"
    "  pipeline  data pipelines on the queue: cohort pipeline run|watch|status|log|stop|\n"
    "          provenance SPEC.yaml\n"
    "  submit  queue a job on `cohort server`: cohort submit [--slots N] -- COMMAND\n"
    "  queue   the job queue; cancel ID; logs ID [-f]\n"
    "  agent   run queued jobs on this host: cohort agent --server URL --slots N;\n"
    "          its credential: cohort agent-credential add NAME\n";
#endif

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "\n"
               "commands:\n"
               "  run     start a job:   cohort run -np N [--] COMMAND ARGS...\n"
               "  bench   collective benchmarks (run under `cohort run`):\n"
               "          cohort bench allreduce|reducescatter|allgather|broadcast|alltoall\n"
               "  config  every setting, its value and where it came from: cohort config\n"
               "%s"
               "\n"
               "`cohort <command> --help` describes a command's options.\n",
               kSynopsis, kFullBuildCommands);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return cohort::cli::UsageError("", "no command given", kSynopsis);
  const char* command = argv[1];
  if (std::strcmp(command, "run") == 0) return cohort::cli::RunCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "bench") == 0) return cohort::cli::BenchCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "config") == 0) return cohort::cli::ConfigCommand(argc - 2, argv + 2);
#ifndef COHORT_MINIMAL
  if (std::strcmp(command, "data") == 0) return cohort::cli::DataCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "sched") == 0) return cohort::cli::SchedCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "server") == 0) return cohort::cli::ServerCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "rerun") == 0) return cohort::cli::RerunCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "user") == 0) return cohort::cli::UserCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "token") == 0) return cohort::cli::TokenCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "sweep") == 0) return cohort::cli::SweepCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "pipeline") == 0) {
    return cohort::cli::PipelineCommand(argc - 2, argv + 2);
  }
  if (std::strcmp(command, "submit") == 0) return cohort::cli::SubmitCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "queue") == 0) return cohort::cli::QueueCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "cancel") == 0) return cohort::cli::CancelCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "logs") == 0) return cohort::cli::LogsCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "agent") == 0) return cohort::cli::AgentCommand(argc - 2, argv + 2);
  if (std::strcmp(command, "agent-credential") == 0) {
    return cohort::cli::AgentCredentialCommand(argc - 2, argv + 2);
  }
#endif
  if (std::strcmp(command, "--help") == 0 || std::strcmp(command, "-h") == 0) {
    PrintUsage();
    return 0;
  }
  return cohort::cli::UsageError("", std::string("unknown command '") + command + "'", kSynopsis);
}
