// The `cohort` subcommands. Each lives in its own file and receives the
// arguments after its name; each returns the process exit status.
#ifndef COHORT_CLI_COMMANDS_H_
#define COHORT_CLI_COMMANDS_H_

namespace cohort::cli {

int RunCommand(int argc, char** argv);    // cohort run   (run_command.cc)
int BenchCommand(int argc, char** argv);  // cohort bench (bench_command.cc)
int EngineBenchCommand(int argc, char** argv);  // cohort bench engine (engine_bench.cc)
int DataCommand(int argc, char** argv);   // cohort data  (data_command.cc)
int SweepCommand(int argc, char** argv);  // cohort sweep (sweep_command.cc)

}  // namespace cohort::cli

#endif  // COHORT_CLI_COMMANDS_H_
