// Client of the rendezvous store (see store_server.h).
#ifndef COHORT_RENDEZVOUS_STORE_CLIENT_H_
#define COHORT_RENDEZVOUS_STORE_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

class StoreClient {
 public:
  // Connects (retrying until `deadline` while the server is not up yet) and
  // authenticates with the job secret.
  static Result<std::unique_ptr<StoreClient>> Connect(const std::string& host, int port,
                                                      const std::string& secret,
                                                      Deadline deadline);
  virtual ~StoreClient() = default;

  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` is set, or fails with kTimeout at `deadline`.
  virtual Result<std::string> Get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds `delta` to the integer stored at `key` (absent = 0);
  // returns the new value.
  virtual Result<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // Returns once `count` callers have entered the barrier `name`.
  virtual Status Barrier(const std::string& name, int count, Deadline deadline) = 0;
};

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_STORE_CLIENT_H_
