// What a job started by srun, mpirun or torchrun needs that `cohort run`
// would have provided: a secret the network cannot guess, and the address
// rank 0's store listens on.
//
// The secret is COHORT_SECRET when set. Otherwise it is derived from a file
// only the user can read, COHORT_SECRET_FILE or ~/.config/cohort/secret
// (XDG_CONFIG_HOME honoured; created on first use, mode 0600, missing
// directories 0700; on a multi-host job the home directory must be
// shared, as it is on SLURM clusters, or every host needs the same file),
// combined with the job's store address. When no such file can be used, a
// single-host job falls back to a guessable secret with a warning; a
// multi-host job is refused unless COHORT_ALLOW_INSECURE=1.
#ifndef COHORT_RENDEZVOUS_FOREIGN_JOB_H_
#define COHORT_RENDEZVOUS_FOREIGN_JOB_H_

#include <string>

#include "cohort/status.h"
#include "common/env_config.h"
#include "rendezvous/launcher_env.h"

namespace cohort {

// Fills job->secret when it is empty (see above). Errors name the file or
// the setting and how to fix it.
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
