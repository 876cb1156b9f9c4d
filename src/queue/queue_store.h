// QueueStore: the queue's jobs in a SQLite file of their own (by default
// queue.db beside the tracking store's file; `cohort server --queue-db`).
// Not in the tracking store's file: a store file is owned by one connection
// (track/sqlite_db.h locks it), and the queue's connection is another.
#ifndef COHORT_QUEUE_QUEUE_STORE_H_
#define COHORT_QUEUE_QUEUE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "queue/job_record.h"
#include "track/sqlite_db.h"

namespace cohort::queue {

class QueueStore {
 public:
  // Opens (creating) `path` and the queue's tables.
  static Result<std::unique_ptr<QueueStore>> Open(const std::string& path);

  // Records a new job; returns its id (ids grow, never reused).
  Result<uint64_t> Insert(const JobRecord& job);
  // nullopt when there is no job `id`.
  Result<std::optional<JobRecord>> Get(uint64_t id);
  // Every job, by id.
  Result<std::vector<JobRecord>> List();
  // Jobs that are pending, starting, running or preempted, by id.
  Result<std::vector<JobRecord>> Active();
  // Writes every field of `job` but its id and what was submitted.
  Status Update(const JobRecord& job);

 private:
  explicit QueueStore(std::unique_ptr<track::SqliteDb> db) : db_(std::move(db)) {}
  Result<std::vector<JobRecord>> Select(const std::string& where);

  std::unique_ptr<track::SqliteDb> db_;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_STORE_H_
