// `cohort user add NAME`, `cohort user grant ...`, `cohort token create USER`
// and `cohort agent-credential add|revoke|list`: the users, their grants and
// API tokens, and the agents' credentials of a tracking store, for `cohort
// server --auth` and its job queue (docs/security.md). They open the store
// directly, so they run while no server holds it.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "queue/queue_api.h"
#include "track/store.h"

namespace cohort::cli {
namespace {

constexpr char kUserSynopsis[] = "cohort user add NAME [--store URI]";
constexpr char kTokenSynopsis[] = "cohort token create USER [--store URI]";
constexpr char kCredentialSynopsis[] = "cohort agent-credential add|revoke NAME [--store URI]";

void PrintUserHelp() {
  std::printf(
      "usage: %s\n"
      "       cohort user grant NAME EXPERIMENT read|edit [--store URI]\n"
      "       cohort user grant NAME --queue-project PROJECT read|submit|none [--store URI]\n"
      "\n"
      "Adds a user of the tracking store, lets one read or edit an experiment, or\n"
      "lets one see (read) or also submit to (submit) a job queue project ('*': every\n"
      "project; none takes the grant back), for `cohort server --auth` (tokens:\n"
      "cohort token create USER).\n"
      "  --store URI   the store (default %s)\n",
      kUserSynopsis, track::DefaultStoreUri().c_str());
}

void PrintCredentialHelp() {
  std::printf(
      "usage: %s\n"
      "       cohort agent-credential list [--store URI]\n"
      "\n"
      "Creates (and prints, this once: the store keeps only its hash) or revokes the\n"
      "credential with which `cohort agent --name NAME` proves it is agent NAME to the\n"
      "job queue of `cohort server` (--credential-file or COHORT_AGENT_CREDENTIAL).\n"
      "  --store URI   the store (default %s)\n",
      kCredentialSynopsis, track::DefaultStoreUri().c_str());
}

void PrintTokenHelp() {
  std::printf(
      "usage: %s\n"
      "\n"
      "Creates an API token of USER for `cohort server --auth` and prints it: the\n"
      "store keeps only its hash, so it is shown this once.\n"
      "  --store URI   the store (default %s)\n",
      kTokenSynopsis, track::DefaultStoreUri().c_str());
}

bool IsHelp(int argc, char** argv) {
  return argc > 0 && (std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h");
}

// Parses the arguments after the verb: `count` positional ones (`names`
// says which, for the error) and an optional --store URI. Returns the
// problem, or "" when they fit.
std::string ParseArgs(int argc, char** argv, size_t count, const std::string& names,
                      std::vector<std::string>* args, std::string* store) {
  *store = track::DefaultStoreUri();
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--store") {
      if (i + 1 >= argc) return "--store needs a URI";
      *store = argv[++i];
    } else if (args->size() < count && !arg.empty() && arg[0] != '-') {
      args->push_back(arg);
    } else {
      return "unexpected argument '" + arg + "'";
    }
  }
  if (args->size() < count) return "expected " + names;
  return "";
}

// Parses "VERB NOUN [--store URI]" into *name and *store: the problem, or ""
// when they fit. `verbs` lists the command's verbs, for the error.
std::string ParseVerbAndName(int argc, char** argv, const std::string& verb, const char* verbs,
                             const char* noun, std::string* name, std::string* store) {
  if (argc == 0) return std::string("missing command (") + verbs + ")";
  if (argv[0] != verb) return "unknown command '" + std::string(argv[0]) + "' (" + verbs + ")";
  std::vector<std::string> args;
  std::string problem = ParseArgs(argc - 1, argv + 1, 1, verb + " " + noun, &args, store);
  if (problem.empty()) *name = args[0];
  return problem;
}

Result<std::unique_ptr<track::TrackingStore>> Open(const std::string& uri, const char* command) {
  auto store = track::OpenStore(uri);
  if (!store.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, store.status().message().c_str());
  }
  return store;
}

}  // namespace

int GrantCommand(int argc, char** argv);

int UserCommand(int argc, char** argv) {
  if (IsHelp(argc, argv)) {
    PrintUserHelp();
    return 0;
  }
  if (argc > 0 && std::string(argv[0]) == "grant") return GrantCommand(argc - 1, argv + 1);
  std::string name, uri;
  std::string problem = ParseVerbAndName(argc, argv, "add", "add or grant", "NAME", &name, &uri);
  if (!problem.empty()) return UsageError("user", problem, kUserSynopsis);
  auto store = Open(uri, "cohort user");
  if (!store.ok()) return 1;
  Status s = (*store)->AddUser(name);
  if (!s.ok()) {
    std::fprintf(stderr, "cohort user: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("added user %s\n", name.c_str());
  return 0;
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// cohort user grant NAME --queue-project PROJECT read|submit|none [--store URI]
int GrantQueueCommand(const std::string& project, int argc, char** argv) {
  std::vector<std::string> args;
  std::string store_uri;
  std::string problem = ParseArgs(argc, argv, 2,
                                  "grant NAME --queue-project PROJECT "
                                  "read|submit|none",
                                  &args, &store_uri);
  if (!problem.empty()) return UsageError("user", problem, kUserSynopsis);
  auto store = Open(store_uri, "cohort user");
  if (!store.ok()) return 1;
  const std::string level = Upper(args[1]);
  Status s = (*store)->GrantQueue(project, args[0], level);
  if (!s.ok()) {
    std::fprintf(stderr, "cohort user: %s\n", s.message().c_str());
    return 1;
  }
  if (level == "NONE") {
    std::printf("%s may no longer use queue project %s\n", args[0].c_str(), project.c_str());
  } else {
    std::printf("%s may %s queue project %s\n", args[0].c_str(),
                level == "SUBMIT" ? "submit to" : "read", project.c_str());
  }
  return 0;
}

// cohort user grant NAME EXPERIMENT read|edit [--store URI], or the queue's
// grant when --queue-project is given.
int GrantCommand(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) != "--queue-project") {
      rest.push_back(argv[i]);
      continue;
    }
    if (i + 1 >= argc) return UsageError("user", "--queue-project needs a project", kUserSynopsis);
    const std::string project = argv[++i];
    for (++i; i < argc; ++i) rest.push_back(argv[i]);
    return GrantQueueCommand(project, static_cast<int>(rest.size()), rest.data());
  }
  std::vector<std::string> args;
  std::string store_uri;
  std::string problem =
      ParseArgs(argc, argv, 3, "grant NAME EXPERIMENT read|edit", &args, &store_uri);
  if (!problem.empty()) return UsageError("user", problem, kUserSynopsis);
  std::string level = Upper(args[2]);
  auto store = Open(store_uri, "cohort user");
  if (!store.ok()) return 1;
  auto experiment = (*store)->GetExperimentByName(args[1]);
  Status s = experiment.ok() ? (*store)->Grant(experiment->experiment_id, args[0], level)
                             : experiment.status();
  if (!s.ok()) {
    std::fprintf(stderr, "cohort user: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("%s may %s experiment %s\n", args[0].c_str(), level == "EDIT" ? "edit" : "read",
              args[1].c_str());
  return 0;
}

int TokenCommand(int argc, char** argv) {
  if (IsHelp(argc, argv)) {
    PrintTokenHelp();
    return 0;
  }
  std::string user, uri;
  std::string problem = ParseVerbAndName(argc, argv, "create", "create", "USER", &user, &uri);
  if (!problem.empty()) return UsageError("token", problem, kTokenSynopsis);
  auto store = Open(uri, "cohort token");
  if (!store.ok()) return 1;
  auto token = (*store)->CreateToken(user);
  if (!token.ok()) {
    std::fprintf(stderr, "cohort token: %s\n", token.status().message().c_str());
    return 1;
  }
  std::printf("%s\n", token->c_str());  // shown once: the store keeps only its hash
  return 0;
}

// cohort agent-credential add|revoke NAME | list [--store URI]
int AgentCredentialCommand(int argc, char** argv) {
  if (IsHelp(argc, argv)) {
    PrintCredentialHelp();
    return 0;
  }
  const std::string verb = argc > 0 ? argv[0] : "";
  if (verb != "add" && verb != "revoke" && verb != "list") {
    return UsageError("agent-credential",
                      verb.empty() ? "missing command (add, revoke or list)"
                                   : "unknown command '" + verb + "' (add, revoke or list)",
                      kCredentialSynopsis);
  }
  std::vector<std::string> args;
  std::string uri;
  std::string problem =
      ParseArgs(argc - 1, argv + 1, verb == "list" ? 0 : 1, verb + " NAME", &args, &uri);
  if (!problem.empty()) return UsageError("agent-credential", problem, kCredentialSynopsis);
  if (verb == "add" && !queue::ValidAgentName(args[0])) {
    return UsageError("agent-credential",
                      "'" + args[0] +
                          "' is not an agent name (letters, digits, '.', '_', '-'; at most 64; "
                          "not 'local')",
                      kCredentialSynopsis);
  }
  auto store = Open(uri, "cohort agent-credential");
  if (!store.ok()) return 1;
  Status s;
  if (verb == "add") {
    auto secret = (*store)->CreateAgentCredential(args[0]);
    if (secret.ok()) std::printf("%s\n", secret->c_str());  // shown once
    s = secret.status();
  } else if (verb == "revoke") {
    s = (*store)->RevokeAgentCredential(args[0]);
    if (s.ok()) std::printf("revoked the credential of agent %s\n", args[0].c_str());
  } else {
    auto names = (*store)->AgentCredentials();
    if (names.ok()) {
      for (const std::string& name : *names) std::printf("%s\n", name.c_str());
    }
    s = names.status();
  }
  if (!s.ok()) {
    std::fprintf(stderr, "cohort agent-credential: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::cli
