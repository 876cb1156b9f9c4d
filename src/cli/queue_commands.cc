// `cohort submit`, `cohort queue`, `cohort cancel` and `cohort logs`: the job
// queue's client commands, thin over queue::QueueClient.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/terminal_text.h"
#include "cli/usage_error.h"
#include "queue/queue_client.h"

extern char** environ;

namespace cohort::cli {
namespace {

using nlohmann::json;

constexpr int kExitFailure = 1;

// `message` may quote what another user sent (a user name): escaped.
int Fail(const char* command, const std::string& message) {
  std::fprintf(stderr, "cohort %s: %s\n", command, TerminalText(message).c_str());
  return kExitFailure;
}

// "90", "90s", "30m", "2h", "1d" -> seconds.
Result<double> ParseDuration(const std::string& flag, const std::string& text) {
  static const std::pair<char, double> kUnits[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
  for (auto [unit, scale] : kUnits) {
    if (!text.empty() && text.back() == unit) {
      auto value = ParsePositiveSeconds(flag, text.substr(0, text.size() - 1));
      if (!value.ok()) break;
      return *value * scale;
    }
  }
  auto value = ParsePositiveSeconds(flag, text);
  if (!value.ok()) {
    return Status::InvalidArgument(flag + " '" + text +
                                   "' is not a duration (seconds, or a number with s, m, h or d)");
  }
  return value;
}

// Whole-string job id.
bool ParseJobId(const std::string& text) {
  return !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == text.npos;
}

const char kSubmitSynopsis[] = "cohort submit [--slots N] [--pool P] [--priority high|normal|low]";
const char kSubmitHelp[] =
    "                     [--project X] [--max-time T] -- COMMAND [ARG...]\n"
    "\n"
    "Queues COMMAND on the server named by COHORT_SERVER (default\n"
    "http://127.0.0.1:5000) and prints the job's id. The job runs in this\n"
    "directory with this environment, plus COHORT_JOB_ID, COHORT_JOB_SLOTS and\n"
    "COHORT_JOB_RESTARTS.\n"
    "  --slots N      slots the job needs, all at once (default 1)\n"
    "  --pool P       the pool to run in (default 'default')\n"
    "  --priority C   high, normal (default) or low\n"
    "  --project X    the project it is accounted to (default 'default')\n"
    "  --max-time T   stopped after T (seconds, or 30m, 2h, 1d)\n";

const char kQueueSynopsis[] = "cohort queue [--json]";
const char kQueueHelp[] =
    "\n"
    "Lists every job: running ones, waiting ones in queue order with their\n"
    "position, the reason they wait and an estimated start, then the rest.\n"
    "  --json   a JSON list of objects (id, state, slots, priority, user, submitted,\n"
    "           started, finished, reason, position, estimated_start, ...)\n";

const char kCancelSynopsis[] = "cohort cancel ID";
const char kCancelHelp[] =
    "\n"
    "Cancels job ID on the server named by COHORT_SERVER: a waiting job never\n"
    "starts; a running one gets SIGTERM, then SIGKILL after the server's --grace\n"
    "seconds. Only the job's owner may cancel it.\n";
const char kLogsSynopsis[] = "cohort logs ID [-f]";
const char kLogsHelp[] = "  -f   follow until the job ends\n";

std::string Clock(const json& t) {
  if (!t.is_number()) return "-";
  time_t seconds = static_cast<time_t>(t.get<double>());
  struct tm local;
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%H:%M:%S", &local);
  return text;
}

// An estimate as "in 5m", "in 3h": the clock alone hides the day.
std::string FromNow(const json& t) {
  if (!t.is_number()) return "-";
  double seconds = t.get<double>() - static_cast<double>(std::time(nullptr));
  if (seconds < 60) return "soon";
  char text[32];
  if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "in %.0fm", seconds / 60);
  } else if (seconds < 2 * 86400) {
    std::snprintf(text, sizeof(text), "in %.0fh", seconds / 3600);
  } else {
    std::snprintf(text, sizeof(text), "in %.0fd", seconds / 86400);
  }
  return text;
}

// A job's field as the table shows it: whoever submitted the job chose
// it, so control characters are escaped (cli/terminal_text.h).
std::string Text(const json& value) {
  if (value.is_string()) return TerminalText(value.get<std::string>());
  if (value.is_null()) return "-";
  return TerminalText(value.dump());
}

std::string CommandText(const json& command) {
  std::string out;
  for (const auto& arg : command) {
    if (!out.empty()) out += ' ';
    out += arg.is_string() ? arg.get<std::string>() : arg.dump();
  }
  return TerminalText(out, 40);
}

}  // namespace

int SubmitCommand(int argc, char** argv) {
  json body = json::object();
  int i = 0;
  for (; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--") {
      ++i;
      break;
    }
    if (flag == "--help" || flag == "-h") {
      PrintHelp(kSubmitSynopsis, kSubmitHelp);
      return 0;
    }
    if (i + 1 >= argc)
      return UsageError("submit", "unknown flag or missing value: " + flag, kSubmitSynopsis);
    std::string value = argv[++i];
    if (flag == "--slots") {
      auto slots = ParsePositiveInt(flag, value);
      if (!slots.ok()) return UsageError("submit", slots.status().message(), kSubmitSynopsis);
      body["slots"] = *slots;
    } else if (flag == "--max-time") {
      auto seconds = ParseDuration(flag, value);
      if (!seconds.ok()) return UsageError("submit", seconds.status().message(), kSubmitSynopsis);
      body["max_time"] = *seconds;
    } else if (flag == "--pool" || flag == "--priority" || flag == "--project") {
      body[flag.substr(2)] = value;
    } else {
      return UsageError("submit", "unknown flag " + flag, kSubmitSynopsis);
    }
  }
  if (i >= argc) return UsageError("submit", "no command: put it after --", kSubmitSynopsis);
  body["command"] = std::vector<std::string>(argv + i, argv + argc);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  body["env"] = env;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) body["cwd"] = cwd;
  queue::QueueClient client;
  auto answer = queue::AnswerJson(client.Post("jobs", body));
  if (!answer.ok()) return Fail("submit", answer.status().message());
  std::printf("%s\n", Text((*answer)["id"]).c_str());
  return 0;
}

int QueueCommand(int argc, char** argv) {
  bool as_json = false;
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      PrintHelp(kQueueSynopsis, kQueueHelp);
      return 0;
    }
    if (flag != "--json") return UsageError("queue", "unknown flag " + flag, kQueueSynopsis);
    as_json = true;
  }
  queue::QueueClient client;
  auto answer = queue::AnswerJson(client.Get("jobs"));
  if (!answer.ok()) return Fail("queue", answer.status().message());
  const json& jobs = (*answer)["jobs"];
  if (as_json) {
    std::printf("%s\n", TerminalJson(jobs.dump(2)).c_str());
    return 0;
  }
  std::printf("%-6s %-10s %-10s %-7s %5s %4s %-9s %-9s %-40s %s\n", "ID", "STATE", "USER", "PRIO",
              "SLOTS", "POS", "SUBMIT", "START", "COMMAND", "REASON");
  for (const json& job : jobs) {
    bool waiting = !job["position"].is_null();
    std::string start = waiting ? FromNow(job["estimated_start"]) : Clock(job["started"]);
    std::printf("%-6s %-10s %-10s %-7s %5s %4s %-9s %-9s %-40s %s\n", Text(job["id"]).c_str(),
                Text(job["state"]).c_str(), Text(job["user"]).c_str(),
                Text(job["priority"]).c_str(), Text(job["slots"]).c_str(),
                Text(job["position"]).c_str(), Clock(job["submitted"]).c_str(), start.c_str(),
                CommandText(job["command"]).c_str(), Text(job["reason"]).c_str());
  }
  return 0;
}

int CancelCommand(int argc, char** argv) {
  if (argc == 1 && (std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "-h") == 0)) {
    PrintHelp(kCancelSynopsis, kCancelHelp);
    return 0;
  }
  if (argc != 1) return UsageError("cancel", "expected one job id", kCancelSynopsis);
  if (!ParseJobId(argv[0])) {
    return UsageError("cancel", std::string("'") + argv[0] + "' is not a job id", kCancelSynopsis);
  }
  queue::QueueClient client;
  auto answer =
      queue::AnswerJson(client.Post(std::string("jobs/") + argv[0] + "/cancel", json::object()));
  if (!answer.ok()) return Fail("cancel", answer.status().message());
  std::printf("cancelled job %s\n", argv[0]);
  return 0;
}

int LogsCommand(int argc, char** argv) {
  std::string id;
  bool follow = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintHelp(kLogsSynopsis, kLogsHelp);
      return 0;
    }
    if (arg == "-f" || arg == "--follow") {
      follow = true;
    } else if (id.empty() && ParseJobId(arg)) {
      id = arg;
    } else {
      return UsageError("logs", "unexpected argument '" + arg + "'", kLogsSynopsis);
    }
  }
  if (id.empty()) return UsageError("logs", "expected a job id", kLogsSynopsis);
  queue::QueueClient client;
  uint64_t offset = 0;
  while (true) {
    auto answer = client.Get("jobs/" + id + "/log?offset=" + std::to_string(offset));
    if (!answer.ok()) return Fail("logs", answer.status().message());
    if (answer->status != 200) return Fail("logs", answer->ErrorMessage());
    std::fwrite(answer->body.data(), 1, answer->body.size(), stdout);
    std::fflush(stdout);
    offset = answer->next_offset;
    bool ended = answer->job_state == "succeeded" || answer->job_state == "failed" ||
                 answer->job_state == "cancelled";
    if (!follow || (ended && answer->body.empty())) return 0;
    // Polling: the server sends what the log holds; the next bytes come later.
    if (answer->body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace cohort::cli
