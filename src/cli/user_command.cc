// `cohort user add NAME` and `cohort token create USER`: the users and API
// tokens of a tracking store, for `cohort server --auth`. They open the store
// file directly, so they run while no server holds it.
#include <cctype>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "track/errors.h"
#include "track/store.h"

namespace cohort::cli {
namespace {

// Parses "<verb> NAME [--store URI]"; false (after a message) on bad usage.
bool ParseArgs(int argc, char** argv, const char* verb, std::string* name, std::string* store) {
  *store = track::DefaultStoreUri();
  if (argc < 2 || std::string(argv[0]) != verb) return false;
  *name = argv[1];
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--store" && i + 1 < argc) {
      *store = argv[++i];
    } else {
      return false;
    }
  }
  return true;
}

Result<std::unique_ptr<track::TrackingStore>> Open(const std::string& uri, const char* command) {
  auto store = track::OpenStore(uri);
  if (!store.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, track::ErrorMessage(store.status()).c_str());
  }
  return store;
}

}  // namespace

int GrantCommand(int argc, char** argv);

int UserCommand(int argc, char** argv) {
  if (argc > 0 && std::string(argv[0]) == "grant") return GrantCommand(argc, argv);
  std::string name, uri;
  if (!ParseArgs(argc, argv, "add", &name, &uri)) {
    std::fprintf(stderr,
                 "usage: cohort user add NAME [--store URI]   (default %s)\n"
                 "       cohort user grant NAME EXPERIMENT read|edit [--store URI]\n",
                 track::DefaultStoreUri().c_str());
    return 2;
  }
  auto store = Open(uri, "cohort user");
  if (!store.ok()) return 1;
  Status s = (*store)->AddUser(name);
  if (!s.ok()) {
    std::fprintf(stderr, "cohort user: %s\n", track::ErrorMessage(s).c_str());
    return 1;
  }
  std::printf("added user %s\n", name.c_str());
  return 0;
}

// cohort user grant NAME EXPERIMENT read|edit [--store URI]
int GrantCommand(int argc, char** argv) {
  std::string store_uri = track::DefaultStoreUri();
  if (argc == 6 && std::string(argv[4]) == "--store") store_uri = argv[5];
  if (argc != 4 && !(argc == 6 && std::string(argv[4]) == "--store")) {
    std::fprintf(stderr, "usage: cohort user grant NAME EXPERIMENT read|edit [--store URI]\n");
    return 2;
  }
  std::string level = argv[3];
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto store = Open(store_uri, "cohort user");
  if (!store.ok()) return 1;
  auto experiment = (*store)->GetExperimentByName(argv[2]);
  Status s = experiment.ok() ? (*store)->Grant(experiment->experiment_id, argv[1], level)
                             : experiment.status();
  if (!s.ok()) {
    std::fprintf(stderr, "cohort user: %s\n", track::ErrorMessage(s).c_str());
    return 1;
  }
  std::printf("%s may %s experiment %s\n", argv[1], level == "EDIT" ? "edit" : "read", argv[2]);
  return 0;
}

int TokenCommand(int argc, char** argv) {
  std::string user, uri;
  if (!ParseArgs(argc, argv, "create", &user, &uri)) {
    std::fprintf(stderr, "usage: cohort token create USER [--store URI]   (default %s)\n",
                 track::DefaultStoreUri().c_str());
    return 2;
  }
  auto store = Open(uri, "cohort token");
  if (!store.ok()) return 1;
  auto token = (*store)->CreateToken(user);
  if (!token.ok()) {
    std::fprintf(stderr, "cohort token: %s\n", track::ErrorMessage(token.status()).c_str());
    return 1;
  }
  std::printf("%s\n", token->c_str());  // shown once: the store keeps only its hash
  return 0;
}

}  // namespace cohort::cli
