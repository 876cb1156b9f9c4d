// The rendezvous key-value store server. `cohort run` starts one per job (or
// rank 0 does, under launchers that do not run one); workers use it to find
// each other while building the mesh.
//
// Keys are set once and read many times; Get waits until the key exists.
// Every connection must pass the job-secret handshake (net/auth.h); one that
// does not is refused and the reason logged.
#ifndef COHORT_RENDEZVOUS_STORE_SERVER_H_
#define COHORT_RENDEZVOUS_STORE_SERVER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

class StoreServer {
 public:
  // Listens on bind_host:port; port 0 picks a free port (see port()).
  static Result<std::unique_ptr<StoreServer>> Start(const std::string& bind_host, int port,
                                                    const std::string& secret);
  virtual ~StoreServer() = default;

  virtual int port() const = 0;
  // Closes the listener and every client connection; idempotent.
  virtual void Stop() = 0;
  // Waits until no authenticated client is connected, or `deadline`. A rank
  // that hosts the store calls this before stopping it, so ranks still
  // running can read why a peer failed.
  virtual void WaitUntilIdle(Deadline deadline) = 0;
  // Number of connections refused by the handshake so far (for tests).
  virtual int refused_connections() const = 0;
  // The keys that start with `prefix`, with their values, in the order they
  // were first set. `cohort run` reads the ranks' failure records (abort/<rank>)
  // this way to name the rank that failed first.
  virtual std::vector<std::pair<std::string, std::string>> Published(
      const std::string& prefix) const = 0;
};

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_STORE_SERVER_H_
