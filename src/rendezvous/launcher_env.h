// Where a worker sits in its job, read from the environment its launcher set:
// `cohort run`, SLURM's srun, Open MPI's mpirun or torchrun. Init() calls
// ParseJobEnvironment to learn its rank and how to reach the rendezvous store.
//
// Precedence, first match wins: COHORT_RANK (cohort run); RANK + WORLD_SIZE
// with TORCHELASTIC_RUN_ID (torchrun, even when started by srun);
// OMPI_COMM_WORLD_RANK (mpirun); SLURM_PROCID (srun); RANK + WORLD_SIZE
// (torchrun); none of them: a job of one process (launcher "none").
// Under a foreign launcher there is no `cohort run` store, so rank 0 hosts
// one; its address is COHORT_STORE_ADDR when set, else derived from what the
// launcher provides (see launcher_env.cc). The secret is COHORT_SECRET, or
// empty here under a foreign launcher, where the runtime derives one
// (rendezvous/foreign_job.h).
#ifndef COHORT_RENDEZVOUS_LAUNCHER_ENV_H_
#define COHORT_RENDEZVOUS_LAUNCHER_ENV_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "common/env_config.h"

namespace cohort {

struct JobEnvironment {
  std::string launcher;  // "cohort", "slurm", "mpirun", "torchrun", "none"
  int rank = -1;
  int size = -1;
  // -1 when the launcher does not say.
  int local_rank = -1;
  int local_size = -1;
  int cross_rank = -1;
  int cross_size = -1;
  std::string store_host;
  int store_port = 0;
  // True when no `cohort run` store exists: rank 0 must start a StoreServer
  // listening on store_port (reachable as store_host by the other ranks).
  bool rank0_hosts_store = false;
  // A one-process job without a store address (no launcher, or a launcher
  // that started one process): rank 0 hosts the store on loopback, on a free
  // port, with a fresh random secret; nothing outside the process can join.
  bool private_store = false;
  // Job secret. Empty under a foreign launcher without COHORT_SECRET, and
  // for private_store: the runtime then derives one (foreign_job.h) or makes
  // a random one.
  std::string secret;
};

// Every error is kInvalidArgument and names the variable and its bad value
// (never the secret's value).
Result<JobEnvironment> ParseJobEnvironment(const EnvLookup& env);

// Expands a SLURM host list: "node[01-03,07],gpu5" -> node01 node02 node03
// node07 gpu5. Zero padding of a range's lower bound is kept; a name may hold
// several bracket groups ("r[1-2]n[3-4]" -> r1n3 r1n4 r2n3 r2n4). Errors give
// the position (0-based) of the problem in `list`.
Result<std::vector<std::string>> ExpandSlurmNodeList(const std::string& list);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_LAUNCHER_ENV_H_
