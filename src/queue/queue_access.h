// QueueAccess: who may call the job queue's endpoints, in one place
// (docs/security.md). The queue runs commands, so every call needs a
// secret:
//
//   without --auth   the queue's token (queue/queue_token.h): its holder is
//                    trusted as the server's user would be (any job, any
//                    agent name; the user is the X-Cohort-User it claims);
//   with --auth      a user's token (`cohort token create`): a user submits
//                    to the queue projects granted SUBMIT
//                    (`cohort user grant NAME --queue-project P submit`),
//                    and sees and reads the logs of their own jobs and those
//                    of the projects granted READ or SUBMIT;
//   either way       an agent's credential (`cohort agent-credential add
//                    NAME`) acts as agent NAME on its own endpoints only.
//
// A user's token is refused on agent endpoints and an agent's credential on
// the others, so one cannot stand in for the other.
#ifndef COHORT_QUEUE_QUEUE_ACCESS_H_
#define COHORT_QUEUE_QUEUE_ACCESS_H_

#include <map>
#include <optional>
#include <string>

#include "http/server/http_server.h"
#include "queue/job_record.h"
#include "track/store.h"

namespace cohort::queue {

struct QueueCaller {
  enum class Kind { kUser, kAgent };
  Kind kind = Kind::kUser;
  std::string name;  // the user, or the agent
  // Without --auth, the queue token's holder: every job, every agent.
  bool trusted = false;
};

struct QueueAccessOptions {
  bool auth = false;       // users, their tokens and grants (cohort server --auth)
  std::string token;       // without --auth: the queue's token
  std::string token_path;  // where it lives, for the 401's hint
};

class QueueAccess {
 public:
  // `store` holds the users, tokens, grants and agent credentials.
  QueueAccess(QueueAccessOptions options, track::TrackingStore* store)
      : options_(std::move(options)), store_(store) {}

  // Who sent `request` (to an agent endpoint or another), or the 401 to
  // answer.
  std::optional<http::ServerResponse> Identify(const http::ServerRequest& request,
                                               bool agent_endpoint, QueueCaller* caller) const;
  // nullopt when allowed; else the 403 (or 500) to answer.
  std::optional<http::ServerResponse> MayUseJobs(const QueueCaller& caller) const;
  std::optional<http::ServerResponse> MaySubmit(const QueueCaller& caller,
                                                const std::string& project) const;
  std::optional<http::ServerResponse> MayRead(const QueueCaller& caller,
                                              const JobRecord& job) const;
  std::optional<http::ServerResponse> MayActAs(const QueueCaller& caller,
                                               const std::string& agent) const;
  // MayRead for a list: the caller's level per project is looked up once
  // and kept in `levels`.
  bool CanRead(const QueueCaller& caller, const JobRecord& job,
               std::map<std::string, std::string>* levels) const;

 private:
  std::string TokenHint() const;

  const QueueAccessOptions options_;
  track::TrackingStore* store_;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_ACCESS_H_
