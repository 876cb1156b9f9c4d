// Secret and store address for jobs under foreign launchers (foreign_job.h).
#include "rendezvous/foreign_job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "common/settings.h"
#include "net/auth.h"
#include "net/socket.h"
#include "rendezvous/local_address.h"

namespace cohort {
namespace {

// A secret file shorter than this is surely not one we wrote.
constexpr size_t kMinSecretChars = 32;

std::string Errno() { return std::strerror(errno); }

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Creates `path` holding a fresh secret, unless it exists. Writes a private
// temporary file first and links it into place, so a rank never reads a
// half-written secret and exactly one creator wins a race.
Status CreateSecretFile(const std::string& path) {
  // Missing directories on the way (e.g. ~/.config) are made private.
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) continue;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IoError("cannot create " + dir + ": " + Errno());
    }
  }
  const std::string temp =
      path + ".tmp." + std::to_string(::getpid()) + "." + GenerateSecret().substr(0, 8);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot create " + temp + ": " + Errno());
  const std::string secret = GenerateSecret() + "\n";
  const bool written =
      ::write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size()) &&
      ::fsync(fd) == 0;
  ::close(fd);
  Status result = Status::OK();
  if (!written) {
    result = Status::IoError("cannot write " + temp + ": " + Errno());
  } else if (::link(temp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    result = Status::IoError("cannot create " + path + ": " + Errno());
  }
  ::unlink(temp.c_str());
  return result;
}

bool MultiHost(const JobEnvironment& job) {
  if (job.cross_size > 1) return true;
  if (job.local_size > 0) return job.local_size < job.size;
  return job.size > 1;  // the launcher does not say: assume the worst
}

// COHORT_SECRET_FILE, else $XDG_CONFIG_HOME/cohort/secret, else
// $HOME/.config/cohort/secret; empty when none of them is set.
std::string SecretFilePath(const EnvLookup& env) {
  if (std::optional<std::string> file = EnvString(env, "COHORT_SECRET_FILE")) return *file;
  if (std::optional<std::string> config = EnvString(env, "XDG_CONFIG_HOME")) {
    return *config + "/cohort/secret";
  }
  if (std::optional<std::string> home = EnvString(env, "HOME")) {
    return *home + "/.config/cohort/secret";
  }
  return "";
}

}  // namespace

Result<std::string> ReadOrCreateSecretFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::IoError("cannot read " + path + ": " + Errno());
    COHORT_RETURN_IF_ERROR(CreateSecretFile(path));
    if (::stat(path.c_str(), &st) != 0) {
      return Status::IoError("cannot read " + path + ": " + Errno());
    }
  }
  if (st.st_uid != ::geteuid()) {
    return Status::InvalidArgument(path + " belongs to another user (uid " +
                                   std::to_string(st.st_uid) + ")");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::InvalidArgument(path + " may be read by others (mode " + Octal(st.st_mode) +
                                   "): `chmod 600 " + path + "`");
  }
  std::ifstream in(path);
  std::string secret;
  std::getline(in, secret);
  if (secret.size() < kMinSecretChars) {
    return Status::InvalidArgument(path + " holds no secret (fewer than " +
                                   std::to_string(kMinSecretChars) +
                                   " characters on its first line)");
  }
  return secret;
}

Status ProtectForeignJob(const EnvLookup& env, JobEnvironment* job) {
  if (!job->secret.empty()) return Status::OK();
  const std::string path = SecretFilePath(env);
  Result<std::string> file_secret =
      path.empty()
          ? Status::InvalidArgument("none of COHORT_SECRET_FILE, XDG_CONFIG_HOME and HOME is set")
          : ReadOrCreateSecretFile(path);
  if (file_secret.ok()) {
    // Distinct per job, so one job's ranks cannot be mistaken for another's.
    job->secret = *file_secret + "/" + job->launcher + "/" + job->store_host + ":" +
                  std::to_string(job->store_port);
    return Status::OK();
  }
  Result<SettingValue> insecure = ReadSetting(env, "COHORT_ALLOW_INSECURE");
  if (!insecure.ok()) return insecure.status();
  // No secret but a guessable one, so nothing may listen beyond loopback. On
  // one host every rank is here: the store the launcher's variables place
  // (MASTER_ADDR, the first node) moves to loopback, and so does the mesh,
  // whose addresses follow the route toward the store. Every rank decides
  // alike from the same variables.
  const bool multi_host = MultiHost(*job);
  const bool address_given = EnvString(env, "COHORT_STORE_ADDR").has_value();
  if (!multi_host && !address_given) job->store_host = "127.0.0.1";
  const std::string where = job->store_host + ":" + std::to_string(job->store_port);
  const std::string interfaces = EnvString(env, "COHORT_NETWORK_INTERFACE").value_or("");
  std::string beyond;  // why the job would listen beyond loopback; empty: it would not
  if (multi_host) {
    beyond = "it spans several hosts, so its store and ranks listen beyond loopback";
  } else if (!interfaces.empty()) {
    beyond = "its ranks listen on network interface " + interfaces +
             " (COHORT_NETWORK_INTERFACE), beyond loopback";
  } else if (!ResolvesToLoopback(job->store_host)) {
    beyond = "its store's address, " + where + " (COHORT_STORE_ADDR), is beyond loopback";
  }
  const std::string why = "COHORT_SECRET is not set and the secret file cannot be used: " +
                          file_secret.status().message();
  if (!beyond.empty() && insecure->text != "1") {
    return Status::InvalidArgument(
        "this " + job->launcher + " job has no secret (" + why + "), and " + beyond +
        ". Export the same random COHORT_SECRET to every rank (e.g. `export "
        "COHORT_SECRET=$(openssl rand -hex 32)`), or set COHORT_ALLOW_INSECURE=1 to let anyone "
        "who can reach its ports join the job");
  }
  COHORT_LOG(kWarning) << "this " << job->launcher << " job has no secret (" << why << "): "
                       << (beyond.empty() ? "its store and ranks listen on loopback only, "
                                            "where any local user can join it"
                                          : "COHORT_ALLOW_INSECURE=1 lets anyone who can reach "
                                            "its ports join it")
                       << "; export COHORT_SECRET=<random hex> to every rank (e.g. `export "
                          "COHORT_SECRET=$(openssl rand -hex 32)`)";
  job->secret = "cohort-unprotected-job@" + where;
  return Status::OK();
}

std::string StoreBindAddress(const JobEnvironment& job) {
  Result<std::string> ip = ResolveHost(job.store_host);
  if (ip.ok() && IsThisHost(*ip)) return *ip;
  return "0.0.0.0";
}

}  // namespace cohort
