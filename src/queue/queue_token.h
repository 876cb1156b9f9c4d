// The job queue's token, for a `cohort server` without --auth
// (docs/security.md). The queue runs commands as the server's user, so
// without users and their tokens it needs a secret of its own: the server
// generates it once and keeps it, readable by its user only, beside the
// queue's database; and, as Jupyter does with its runtime files, it leaves
// a record of itself (address, pid, token) in the user's runtime directory,
// through which the cohort commands of that user on that host find the
// token of the server they talk to.
#ifndef COHORT_QUEUE_QUEUE_TOKEN_H_
#define COHORT_QUEUE_QUEUE_TOKEN_H_

#include <string>

#include "cohort/status.h"

namespace cohort::queue {

// The header a client sends the token in; `Authorization: Bearer TOKEN`
// works too (curl), where no user token takes that header.
inline constexpr char kQueueTokenHeader[] = "X-Cohort-Queue-Token";

// The token file of a queue whose database is `db_path`: queue-token in the
// same directory.
std::string QueueTokenPath(const std::string& db_path);

// The token at `path`, created (a new secret, mode 0600) when absent. A
// file that others may read or write, or that holds no token, is refused.
Result<std::string> LoadOrCreateQueueToken(const std::string& path);

// Where this user's servers leave their records: $XDG_RUNTIME_DIR/cohort,
// else ~/.cohort/run.
std::string QueueRuntimeDir();

// Leaves the record of this process, a server listening on host:port with
// `token` (whose file is `token_path`), in QueueRuntimeDir() (0600, written
// whole), removing the records of servers that are gone. Returns the
// record's path.
Result<std::string> PublishQueueToken(const std::string& host, int port, const std::string& token,
                                      const std::string& token_path);

// The token a client sends to `server_url`: COHORT_QUEUE_TOKEN when set,
// else the token of the live server of this user listening there (by its
// record), else "".
std::string FindQueueToken(const std::string& server_url);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_TOKEN_H_
