// `cohort server`: the experiment-tracking server (MLflow REST API, artifact
// proxy, dashboard files) until SIGINT or SIGTERM. Parses flags and starts a
// server::TrackingServer; everything else lives in src/server.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "common/self_executable.h"
#include "http/server/request_guard.h"
#include "queue/queue_access.h"
#include "queue/queue_api.h"
#include "queue/queue_service.h"
#include "queue/queue_token.h"
#include "server/tracking_server.h"
#include "track/sqlite_store.h"
#include "track/store.h"

namespace cohort::cli {
namespace {

constexpr char kSynopsis[] = "cohort server [--store URI] [--host HOST] [--port PORT]";

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "                     [--artifacts LOCATION] [--web-dir DIR] [--auth]\n"
               "                     [--allowed-hosts NAME,...]\n"
               "                     [--slots N] [--queue-db PATH] [--grace S]\n"
               "                     [--agent-timeout S] [--slurm-pool NAME]\n"
               "                     [--slurm-partition P] [--quota P=N,...]\n"
               "                     [--policy NAME]\n"
               "\n"
               "  --store URI          sqlite:PATH (default %s)\n"
               "  --host HOST          address to listen on (default 127.0.0.1)\n"
               "  --port PORT          port (default 5000; 0 picks a free one)\n"
               "  --artifacts LOCATION directory or s3://bucket/prefix for the artifact\n"
               "                       proxy (/api/2.0/mlflow-artifacts); default:\n"
               "                       artifacts/ beside a SQLite store's file\n"
               "  --web-dir DIR        the dashboard's built files (default: web/ beside\n"
               "                       the cohort binary, when it exists)\n"
               "  --auth               API requests need 'Authorization: Bearer TOKEN' of a\n"
               "                       user of the store (cohort user add / token create)\n"
               "  --allowed-hosts N,.. host names requests may use besides IP addresses,\n"
               "                       localhost and --host ('.example.org': the domain and\n"
               "                       its subdomains; '*': any); others get 403\n"
               "  --slots N            run the job queue (off by default), with N slots of\n"
               "                       this host in its pool 'default' (0: jobs run on\n"
               "                       agents only). Without --auth it needs the token it\n"
               "                       writes to queue-token beside its database\n"
               "  --queue-db PATH      SQLite file of the job queue (default: queue.db\n"
               "                       beside the store's file); job logs go to\n"
               "                       queue-logs/ beside it\n"
               "  --grace S            seconds between SIGTERM and SIGKILL when a job is\n"
               "                       cancelled, preempted or over --max-time (default 60);\n"
               "                       jobs get it as COHORT_GRACE (cohort run's --grace)\n"
               "  --agent-timeout S    an agent silent this long has its jobs requeued\n"
               "                       (default 10)\n"
               "  --slurm-pool NAME    run the job queue; jobs of pool NAME go to SLURM with\n"
               "                       sbatch (the cluster of SLURM_CONF), followed with\n"
               "                       squeue\n"
               "  --slurm-partition P  the SLURM partition (default: SLURM's default)\n"
               "  --quota P=N,...      slots guaranteed to each project; others borrow\n"
               "                       idle ones and are preempted to give them back\n"
               "  --policy NAME        the queue's scheduling policy: %s\n"
               "                       (default cohort; docs/queue.md)\n",
               kSynopsis, track::DefaultStoreUri().c_str(), sched::PolicyList().c_str());
}

// The build's dashboard output: <dir of the cohort binary>/web.
std::string DefaultWebDir() {
  Result<std::string> self = SelfExecutable();
  if (!self.ok()) return "";
  std::filesystem::path web = std::filesystem::path(*self).parent_path() / "web";
  return std::filesystem::is_directory(web) ? web.string() : "";
}

bool ParsePort(const std::string& text, int* port) {
  if (text.empty() || text.size() > 5 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *port = std::stoi(text);
  return *port <= 65535;
}

int BadValue(const Status& status) { return UsageError("server", status.message(), kSynopsis); }

// The queue's database: --queue-db, else queue.db beside the tracking
// store's SQLite file (the store's own file is locked by its connection).
Result<std::string> QueueDbPath(const std::string& queue_db, const std::string& store_uri) {
  if (!queue_db.empty()) return queue_db;
  const std::string sqlite = "sqlite:";
  if (store_uri.rfind(sqlite, 0) == 0) {
    const std::filesystem::path store = track::ExpandHome(store_uri.substr(sqlite.size()));
    return (store.parent_path() / "queue.db").string();
  }
  return Status::InvalidArgument("the job queue needs --queue-db PATH when --store " +
                                 track::RedactStoreUri(store_uri) + " is not a SQLite file");
}

// The queue's token without --auth: created (or read) before anything
// starts, so a bad token file stops the server at once.
Result<std::string> PrepareQueueToken(const std::string& db_path) {
  std::error_code error;
  std::filesystem::path dir = std::filesystem::path(db_path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, error);
  return queue::LoadOrCreateQueueToken(queue::QueueTokenPath(db_path));
}

}  // namespace

int ServerCommand(int argc, char** argv) {
  server::TrackingServerOptions options;
  options.web_dir = DefaultWebDir();
  queue::QueueOptions queue_options;
  std::string queue_db;
  bool slots_given = false;
  std::string queue_only_flag;  // a flag that means nothing without a queue
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      PrintUsage();
      return 0;
    }
    if (flag == "--auth") {
      options.auth = true;
      continue;
    }
    if (i + 1 >= argc) {
      return UsageError("server", "unknown flag or missing value: " + flag, kSynopsis);
    }
    std::string value = argv[++i];
    if (flag == "--store") {
      options.store_uri = value;
    } else if (flag == "--host") {
      options.host = value;
    } else if (flag == "--port") {
      if (!ParsePort(value, &options.port)) {
        return UsageError("server", "--port '" + value + "' is not a port number (0-65535)",
                          kSynopsis);
      }
    } else if (flag == "--artifacts") {
      options.artifacts = value;
    } else if (flag == "--allowed-hosts") {
      auto hosts = http::ParseAllowedHosts(value);
      if (!hosts.ok()) return BadValue(hosts.status());
      options.allowed_hosts = std::move(*hosts);
    } else if (flag == "--web-dir") {
      options.web_dir = value;
    } else if (flag == "--queue-db") {
      queue_db = value;
      queue_only_flag = flag;
    } else if (flag == "--slots") {
      auto slots = ParseNonNegativeInt(flag, value);
      if (!slots.ok()) return BadValue(slots.status());
      queue_options.local_slots = *slots;
      slots_given = true;
    } else if (flag == "--grace") {
      auto grace = ParsePositiveSeconds(flag, value);
      if (!grace.ok()) return BadValue(grace.status());
      queue_options.grace_s = *grace;
      queue_only_flag = flag;
    } else if (flag == "--policy") {
      auto policy = sched::ParsePolicyName(value);
      if (!policy.ok()) return BadValue(policy.status().WithContext("--policy"));
      queue_options.policy = *policy;
      queue_only_flag = flag;
    } else if (flag == "--slurm-pool") {
      queue_options.slurm_pool = value;
    } else if (flag == "--quota") {
      Status s = ParseQuota(value, &queue_options.quota);
      if (!s.ok()) return BadValue(s);
      queue_only_flag = flag;
    } else if (flag == "--slurm-partition") {
      queue_options.slurm_partition = value;
      queue_only_flag = flag;
    } else if (flag == "--agent-timeout") {
      auto timeout = ParsePositiveSeconds(flag, value);
      if (!timeout.ok()) return BadValue(timeout.status());
      queue_options.agent_timeout_s = *timeout;
      queue_only_flag = flag;
    } else {
      return UsageError("server", "unknown flag " + flag, kSynopsis);
    }
  }
  // The queue runs commands: only when asked for (docs/security.md).
  const bool queue_on = slots_given || !queue_options.slurm_pool.empty();
  if (!queue_on && !queue_only_flag.empty()) {
    return UsageError("server",
                      queue_only_flag + " needs the job queue: add --slots N or --slurm-pool NAME",
                      kSynopsis);
  }
  std::string store_uri = options.store_uri.empty() ? track::DefaultStoreUri() : options.store_uri;
  queue::QueueAccessOptions access_options;
  access_options.auth = options.auth;
  if (queue_on) {
    auto db_path = QueueDbPath(queue_db, store_uri);
    if (!db_path.ok()) return BadValue(db_path.status());
    queue_options.db_path = *db_path;
    queue_options.log_dir = (std::filesystem::path(*db_path).parent_path() / "queue-logs").string();
    if (!options.auth) {
      auto token = PrepareQueueToken(*db_path);
      if (!token.ok()) {
        std::fprintf(stderr, "cohort server: %s\n", token.status().message().c_str());
        return 1;
      }
      access_options.token = *token;
      access_options.token_path = queue::QueueTokenPath(*db_path);
    }
  }
  // Block the stop signals before any thread starts, so only sigwait sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // The tracking store opens first, so a second server on the same store is
  // refused for that (not for the queue's file); the queue starts after and
  // its endpoints answer once it has. They check their callers themselves
  // (queue/queue_access.h).
  queue::QueueApi queue_api(queue_on);
  options.services.push_back(&queue_api);
  auto server = server::TrackingServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "cohort server: %s\n", server.status().message().c_str());
    return 1;
  }
  std::unique_ptr<queue::QueueAccess> queue_access;
  std::unique_ptr<queue::QueueService> queue;
  std::string record;  // where local clients find the queue's token
  if (queue_on) {
    auto started = queue::QueueService::Start(queue_options);
    if (!started.ok()) {
      std::fprintf(stderr, "cohort server: %s\n", started.status().ToString().c_str());
      (*server)->Stop();
      return 1;
    }
    queue = std::move(*started);
    queue_access = std::make_unique<queue::QueueAccess>(access_options, (*server)->store());
    queue_api.Attach(queue.get(), queue_access.get());
    if (!options.auth) {
      auto published = queue::PublishQueueToken(options.host, (*server)->port(),
                                                access_options.token, access_options.token_path);
      if (published.ok()) {
        record = *published;
      } else {
        std::fprintf(stderr, "cohort server: clients will need COHORT_QUEUE_TOKEN: %s\n",
                     published.status().message().c_str());
      }
    }
  }
  std::printf("cohort server: listening on http://%s:%d (store %s)\n", options.host.c_str(),
              (*server)->port(), track::RedactStoreUri(store_uri).c_str());
  if (queue_on && options.auth) {
    std::printf(
        "cohort server: job queue on: users submit to the queue projects granted them "
        "(cohort user grant NAME --queue-project P submit)\n");
  } else if (queue_on) {
    std::printf(
        "cohort server: job queue on: its token is in %s (cohort commands on this host "
        "find it; elsewhere set COHORT_QUEUE_TOKEN)\n",
        access_options.token_path.c_str());
  }
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  (*server)->Stop();
  if (queue) queue->Stop();  // the jobs it started keep running; a restart follows them again
  if (!record.empty()) std::filesystem::remove(record);
  return 0;
}

}  // namespace cohort::cli
