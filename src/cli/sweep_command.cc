// `cohort sweep SPEC.yaml`: parses the command line and the spec and hands
// the sweep to sweep/controller, which does the work.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "common/env_config.h"
#include "common/settings.h"
#include "http/url.h"
#include "sched/job.h"
#include "sweep/controller.h"
#include "sweep/queue/queued_trials.h"
#include "sweep/tracking/store_journal.h"
#include "sweep/tracking/tracked_sweep.h"
#include "track/tracking_uri.h"

namespace cohort::cli {

namespace {

constexpr char kSynopsis[] = "cohort sweep SPEC.yaml [options]";

void PrintUsage() {
  std::fprintf(
      stdout,
      "usage: %s\n"
      "\n"
      "Runs the hyperparameter sweep SPEC.yaml describes (docs/sweeps.md): each trial\n"
      "is a `cohort run -np WORKERS` job, on this host or, with --queue, a job of a\n"
      "`cohort server` queue. Started again after a stop or a crash, it continues\n"
      "from its journal without re-running finished trials.\n"
      "\n"
      "options:\n"
      "  --dir DIR             the sweep's state (default: sweeps/NAME)\n"
      "  --extend N            allow N trials more than the spec's budget\n"
      "  --rerun-best          run the best finished trial's values once more\n"
      "  --stop                stop the sweep's running controller (it can continue later)\n"
      "  --trial-timeout S     seconds one trial's job may run (default: no limit)\n"
      "  --queue URL           submit each trial to the job queue of the `cohort server`\n"
      "                        at URL (COHORT_SERVER alone does not); default: this host\n"
      "  --priority C          the trials' priority in the queue: high, normal or\n"
      "                        low (default low)\n"
      "  --project X           the trials' project in the queue (default: the sweep's name)\n"
      "  --tracking URI        record the sweep and each trial as runs in this tracking\n"
      "                        store (http://HOST:PORT or sqlite:PATH; default:\n"
      "                        $COHORT_TRACKING_URI, $MLFLOW_TRACKING_URI or\n"
      "                        $COHORT_SERVER, else not recorded); with a server,\n"
      "                        the sweep's journal is kept there, not in DIR/journal\n"
      "  -h, --help            print this help\n",
      kSynopsis);
}

int UsageError(const std::string& problem) { return cli::UsageError("sweep", problem, kSynopsis); }

int StopController(const std::string& dir) {
  std::ifstream in(dir + "/controller.pid");
  int pid = 0;
  if (!(in >> pid) || pid <= 0) {
    std::fprintf(stderr, "cohort sweep: no controller pid in '%s/controller.pid'\n", dir.c_str());
    return 1;
  }
  if (::kill(pid, SIGTERM) != 0) {
    std::fprintf(stderr, "cohort sweep: the controller (pid %d) is not running\n", pid);
    return 1;
  }
  std::printf("cohort sweep: asked the controller (pid %d) to stop\n", pid);
  return 0;
}

}  // namespace

int SweepCommand(int argc, char** argv) {
  sweep::ControllerOptions options;
  std::string spec_path;
  std::string tracking;
  sweep::QueuedTrialsOptions queue;
  bool stop = false;
  bool priority_given = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      PrintUsage();
      return 0;
    } else if (arg == "--dir") {
      if (!value(&options.dir)) return UsageError("--dir needs a value");
    } else if (arg == "--extend") {
      if (!value(&v)) return UsageError("--extend needs a value");
      Result<int> n = ParsePositiveInt("--extend", v);
      if (!n.ok()) return UsageError(n.status().message());
      options.extend = *n;
    } else if (arg == "--trial-timeout") {
      if (!value(&v)) return UsageError("--trial-timeout needs a value");
      Result<double> s = ParsePositiveSeconds("--trial-timeout", v);
      if (!s.ok()) return UsageError(s.status().message());
      options.trial_timeout = *s;
    } else if (arg == "--tracking") {
      if (!value(&tracking)) return UsageError("--tracking needs a value");
      if (tracking.empty())
        return UsageError("--tracking needs a URI (http://HOST:PORT or sqlite:PATH)");
    } else if (arg == "--queue") {
      if (!value(&queue.server) || queue.server.empty())
        return UsageError("--queue needs the URL of a `cohort server` (http://HOST:PORT)");
    } else if (arg == "--priority") {
      if (!value(&queue.priority)) return UsageError("--priority needs a value");
      Result<sched::PriorityClass> priority = sched::ParsePriority(queue.priority);
      if (!priority.ok()) return UsageError("--priority: " + priority.status().message());
      priority_given = true;
    } else if (arg == "--project") {
      if (!value(&queue.project) || queue.project.empty())
        return UsageError("--project needs a name");
    } else if (arg == "--rerun-best") {
      options.rerun_best = true;
    } else if (arg == "--stop") {
      stop = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("unknown option '" + arg + "'");
    } else if (spec_path.empty()) {
      spec_path = arg;
    } else {
      return UsageError("one spec at a time (got '" + spec_path + "' and '" + arg + "')");
    }
  }
  if (spec_path.empty()) return UsageError("missing SPEC.yaml");
  if (queue.server.empty() && (priority_given || !queue.project.empty()))
    return UsageError("--priority and --project are for trials in a queue: add --queue URL");
  std::ifstream in(spec_path);
  if (!in) {
    std::fprintf(stderr, "cohort sweep: cannot read spec '%s'\n", spec_path.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  options.spec_text = text.str();
  Result<sweep::SweepSpec> spec = sweep::ParseSpec(options.spec_text, spec_path);
  if (!spec.ok()) {
    std::fprintf(stderr, "cohort sweep: %s\n", spec.status().message().c_str());
    return 1;
  }
  options.spec = std::move(*spec);
  if (options.dir.empty()) options.dir = "sweeps/" + options.spec.name;
  if (stop) return StopController(options.dir);
  // A local SQLite store is held by one process, and one run at a time: a
  // sweep keeps a run open per trial, so it needs a server in front of it.
  constexpr char kSqliteAdvice[] =
      "a local SQLite store holds one run at a time and a sweep keeps one open per trial: "
      "serve it with `cohort server --store %s` and give --tracking http://HOST:PORT";
  if (tracking.rfind("sqlite:", 0) == 0) {
    std::fprintf(stderr, "cohort sweep: --tracking %s: ", tracking.c_str());
    std::fprintf(stderr, kSqliteAdvice, tracking.c_str());
    std::fprintf(stderr, "\n");
    return kExitUsage;
  }
  if (tracking.empty()) {
    Result<http::AddressChoice> chosen = track::TrackingUriFromEnv(ProcessEnv());
    if (!chosen.ok()) {
      std::fprintf(stderr, "cohort sweep: %s\n", chosen.status().message().c_str());
      return kExitUsage;
    }
    http::WarnOfDisagreement(ProcessEnv());
    tracking = chosen->value;
    if (tracking.rfind("sqlite:", 0) == 0) {  // meant for the trials' own runs: not recorded
      std::fprintf(stderr,
                   "cohort sweep: not recording the trials in %s=%s: ", chosen->variable.c_str(),
                   tracking.c_str());
      std::fprintf(stderr, kSqliteAdvice, tracking.c_str());
      std::fprintf(stderr, "\n");
      tracking.clear();
    }
  }
  if (!tracking.empty()) options.observer = sweep::TrackingObserver(options.spec, tracking);
  if (http::IsHttpUrl(tracking)) {
    // The journal goes to the store too (docs/sweeps.md "The journal"): the
    // sweep is keyed by its name in the experiment of that name.
    sweep::StoreJournalOptions journal;
    journal.uri = tracking;
    journal.experiment = options.spec.name;
    journal.sweep = options.spec.name;
    journal.file_journal = options.dir + "/journal";
    // Parsed and bounded (0 or more seconds) by its row in the settings table.
    Result<SettingValue> deadline =
        ReadSetting(ProcessEnv(), setting::kSweepJournalDeadlineSeconds);
    if (!deadline.ok()) {
      std::fprintf(stderr, "cohort sweep: %s\n", deadline.status().message().c_str());
      return kExitUsage;
    }
    journal.append_deadline_s = deadline->number;
    options.journal_name = "the journal of sweep '" + journal.sweep + "' in " + tracking;
    options.journal = [journal] { return sweep::OpenStoreJournal(journal); };
  }
  if (!queue.server.empty()) {
    if (queue.project.empty()) queue.project = options.spec.name;
    queue.workers = options.spec.workers;
    queue.command = options.spec.command;
    queue.trial_timeout = options.trial_timeout;
    options.executor = [queue] { return sweep::QueuedTrialExecutor(queue); };
  }
  Result<int> status = sweep::RunSweep(options);
  if (!status.ok()) {
    std::fprintf(stderr, "cohort sweep: %s\n", status.status().message().c_str());
    return 1;
  }
  return *status;
}

}  // namespace cohort::cli
