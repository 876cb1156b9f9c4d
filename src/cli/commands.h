// The `cohort` subcommands. Each lives in its own file and receives the
// arguments after its name; each returns the process exit status.
#ifndef COHORT_CLI_COMMANDS_H_
#define COHORT_CLI_COMMANDS_H_

namespace cohort::cli {

int RunCommand(int argc, char** argv);    // cohort run   (run_command.cc)
int BenchCommand(int argc, char** argv);  // cohort bench (bench_command.cc)
int ConfigCommand(int argc, char** argv);  // cohort config (config_command.cc)
int EngineBenchCommand(int argc, char** argv);  // cohort bench engine (engine_bench.cc)
int DataCommand(int argc, char** argv);   // cohort data  (data_command.cc)
int SchedCommand(int argc, char** argv);  // cohort sched (sched_command.cc)
int ServerCommand(int argc, char** argv); // cohort server (server_command.cc)
int RerunCommand(int argc, char** argv);  // cohort rerun  (rerun_command.cc)
int UserCommand(int argc, char** argv);   // cohort user   (user_command.cc)
int TokenCommand(int argc, char** argv);  // cohort token  (user_command.cc)
int AgentCredentialCommand(int argc, char** argv);  // cohort agent-credential (user_command.cc)
int SweepCommand(int argc, char** argv);  // cohort sweep (sweep_command.cc)
int SubmitCommand(int argc, char** argv);  // cohort submit (queue_commands.cc)
int QueueCommand(int argc, char** argv);   // cohort queue  (queue_commands.cc)
int CancelCommand(int argc, char** argv);  // cohort cancel (queue_commands.cc)
int LogsCommand(int argc, char** argv);    // cohort logs   (queue_commands.cc)
int AgentCommand(int argc, char** argv);   // cohort agent  (agent_command.cc)
// cohort pipeline (pipeline_command.cc)
int PipelineCommand(int argc, char** argv);

}  // namespace cohort::cli

#endif  // COHORT_CLI_COMMANDS_H_
