// Every `cohort` command answers a usage error the same way: the problem,
// naming the command and what was wrong, then one hint line, exit status 2
// (cli/usage_error.h). Its whole help is for --help only, on stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

struct Command {
  std::string name;               // "bench engine"; "" for the top level
  std::vector<std::string> args;  // after the name: a command line with the unknown option --bogus
};

// Options that take a value get one, so that the problem is the name.
const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"run", {"-np", "1", "--bogus", "true"}},
      {"data", {"info", "--bogus"}},
      {"sweep", {"spec.yaml", "--bogus"}},
      {"sched", {"simulate", "--synthetic", "--bogus", "1"}},
      {"submit", {"--bogus", "1", "--", "true"}},
      {"queue", {"--bogus"}},
      {"cancel", {"--bogus"}},
      {"logs", {"--bogus"}},
      {"bench", {"allreduce", "--bogus", "1"}},
      {"bench engine", {"--bogus", "1"}},
      {"server", {"--bogus", "1"}},
      {"agent", {"--bogus", "1"}},
      {"user", {"add", "bob", "--bogus"}},
      {"token", {"create", "bob", "--bogus"}},
      {"agent-credential", {"add", "a1", "--bogus"}},
      {"rerun", {"--bogus"}},
      {"", {"--bogus"}},
  };
  return commands;
}

std::string Prefix(const Command& c) { return c.name.empty() ? "cohort" : "cohort " + c.name; }

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// `cohort NAME... ARGS...`.
Finished RunCommand(const Command& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv = Split(c.name, ' ');
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCohort(argv, 30);
}

TEST(UsageError, UnknownOptionIsTheProblemAndOneHint) {
  for (const Command& c : Commands()) {
    SCOPED_TRACE(Prefix(c));
    Finished f = RunCommand(c, c.args);
    EXPECT_EQ(f.exit_code, 2) << f.err;
    EXPECT_EQ(f.out, "");
    const std::vector<std::string> lines = Split(f.err, '\n');
    ASSERT_EQ(lines.size(), 2u) << f.err;
    EXPECT_EQ(lines[0].rfind(Prefix(c) + ": ", 0), 0u) << f.err;
    EXPECT_NE(lines[0].find("--bogus"), std::string::npos) << f.err;
    EXPECT_EQ(lines[1].rfind("usage: ", 0), 0u) << f.err;
    const std::string hint =
        "  (" + Prefix(c) + " --help lists the " + (c.name.empty() ? "commands" : "options") + ")";
    EXPECT_TRUE(lines[1].size() > hint.size() &&
                lines[1].compare(lines[1].size() - hint.size(), hint.size(), hint) == 0)
        << f.err;
  }
}

// The hint's synopsis is the help's own first usage line (cohort run's help
// line is longer than a terminal's, so its hint has a shorter one).
TEST(UsageError, HelpIsOnStdoutAndStartsWithTheHintsSynopsis) {
  for (const Command& c : Commands()) {
    SCOPED_TRACE(Prefix(c));
    Finished help = RunCommand(c, {"--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_EQ(help.err, "");
    const std::vector<std::string> lines = Split(help.out, '\n');
    ASSERT_GT(lines.size(), 1u) << help.out;
    const std::string hint = Split(RunCommand(c, c.args).err, '\n').at(1);
    const std::string synopsis = hint.substr(0, hint.find("  ("));
    if (c.name == "run") {
      EXPECT_EQ(synopsis, "usage: cohort run -np N [options] [--] COMMAND [ARGS...]");
      EXPECT_EQ(lines[0].rfind("usage: cohort run -np N ", 0), 0u) << help.out;
    } else {
      EXPECT_EQ(lines[0], synopsis) << help.out;
    }
  }
}

}  // namespace
}  // namespace cohort::testing
