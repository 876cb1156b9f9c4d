// What a job started by srun, mpirun or torchrun needs that `cohort run`
// would have provided: a secret the network cannot guess, and the address
// rank 0's store listens on.
//
// The secret is COHORT_SECRET when set. Otherwise it is derived from a file
// only the user can read, COHORT_SECRET_FILE or ~/.config/cohort/secret
// (XDG_CONFIG_HOME honoured; created on first use, mode 0600, missing
// directories 0700; on a multi-host job the home directory must be
// shared, as it is on SLURM clusters, or every host needs the same file),
// combined with the job's store address. When no such file can be used,
// the job gets a guessable secret, so nothing of it may listen beyond
// loopback: a single-host job's store moves to 127.0.0.1 (unless
// COHORT_STORE_ADDR placed it) and it runs with a warning; a job that would
// listen elsewhere (several hosts, COHORT_NETWORK_INTERFACE, a routable
// COHORT_STORE_ADDR) is refused, saying how to give it a secret, unless
// COHORT_ALLOW_INSECURE=1.
#ifndef COHORT_RENDEZVOUS_FOREIGN_JOB_H_
#define COHORT_RENDEZVOUS_FOREIGN_JOB_H_

#include <string>

#include "cohort/status.h"
#include "common/env_config.h"
#include "rendezvous/launcher_env.h"

namespace cohort {

// Fills job->secret when it is empty, and moves the store to loopback when
// that secret is guessable (see above). Errors name the file or the setting
// and how to fix it.
Status ProtectForeignJob(const EnvLookup& env, JobEnvironment* job);

// Reads the secret in `path`, creating it (and missing directories, mode
// 0700) when missing. Several ranks may race to create it; all read the same one.
// Refused when another user owns it or others may read it.
Result<std::string> ReadOrCreateSecretFile(const std::string& path);

// Where rank 0's store listens: the address store_host resolves to when it
// is one of this host's (so the store is reachable only the way the job
// reaches it), else every interface (0.0.0.0).
std::string StoreBindAddress(const JobEnvironment& job);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_FOREIGN_JOB_H_
