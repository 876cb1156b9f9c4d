// SlurmPool: a pool whose capacity is a SLURM cluster's. The queue's policy
// decides when a job starts (as for any pool: one host of all the
// partition's CPUs, SLURM then places the gang); starting is `sbatch -n
// SLOTS`, following is `squeue` while SLURM holds the job and `scontrol show
// job` for its exit code once it ended (sacct needs slurmdbd, which a
// minimal cluster lacks), stopping is `scancel`. The commands find the
// cluster as they always do (SLURM_CONF or /etc/slurm/slurm.conf).
#ifndef COHORT_QUEUE_SLURM_POOL_H_
#define COHORT_QUEUE_SLURM_POOL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "queue/job_record.h"

namespace cohort::queue {

class SlurmPool {
 public:
  // Asks `sinfo` for the partition's CPUs ("" = the default partition).
  static Result<std::unique_ptr<SlurmPool>> Open(std::string pool, std::string partition);

  const std::string& pool() const { return pool_; }
  int slots() const { return slots_; }

  // sbatch: the job's command in its directory with `env`, stdout and stderr
  // appended to `log_path`, named JobName(job). Returns SLURM's job id.
  Result<std::string> Submit(const JobRecord& job, const std::vector<std::string>& env,
                             const std::string& log_path);
  // "cohort-ID-RESTARTS": one name per run of a job, so that a server that
  // died between sbatch and recording its answer finds the job by it.
  static std::string JobName(const JobRecord& job);
  // SLURM's id of this run of `job` (squeue --states=all --name), nullopt
  // when SLURM has none: never submitted, or forgotten (MinJobAge).
  Result<std::optional<std::string>> Find(const JobRecord& job);
  // nullopt while SLURM holds the job; its exit status (128+N for signal N)
  // once it ended.
  Result<std::optional<int>> Poll(const std::string& slurm_id);
  // scancel: SIGTERM to the batch script and its steps, or the job killed.
  Status Signal(const std::string& slurm_id, bool kill);

 private:
  SlurmPool(std::string pool, std::string partition, int slots)
      : pool_(std::move(pool)), partition_(std::move(partition)), slots_(slots) {}

  std::string pool_;
  std::string partition_;
  int slots_;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_SLURM_POOL_H_
