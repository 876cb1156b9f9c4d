// PrefixedStore: a StoreClient whose every key lives under a fixed prefix.
// The runtime joins each time under "join<N>/", N counting this rank's joins
// of the job, so a job that shuts down and initializes again (Horovod's
// re-init, a test suite's restarts) never reads the keys of its previous
// mesh: stale shared-memory names, peer addresses, abort reasons.
#ifndef COHORT_RENDEZVOUS_PREFIXED_STORE_H_
#define COHORT_RENDEZVOUS_PREFIXED_STORE_H_

#include <memory>
#include <string>

#include "rendezvous/store_client.h"

namespace cohort {

class PrefixedStore : public StoreClient {
 public:
  PrefixedStore(std::unique_ptr<StoreClient> base, std::string prefix)
      : base_(std::move(base)), prefix_(std::move(prefix)) {}

  Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(prefix_ + key, value);
  }
  Result<std::string> Get(const std::string& key, Deadline deadline) override {
    return base_->Get(prefix_ + key, deadline);
  }
  Result<int64_t> Add(const std::string& key, int64_t delta) override {
    return base_->Add(prefix_ + key, delta);
  }
  Status Barrier(const std::string& name, int count, Deadline deadline) override {
    return base_->Barrier(prefix_ + name, count, deadline);
  }

 private:
  std::unique_ptr<StoreClient> base_;
  const std::string prefix_;
};

// Counts this rank's joins in `base` ("joins/<rank>") and returns a store
// scoped to this join. Every rank of a job joins equally often, so the ranks
// of one generation share one prefix, written to *prefix when not null (for
// further connections of this join).
Result<std::unique_ptr<StoreClient>> ScopeToThisJoin(std::unique_ptr<StoreClient> base, int rank,
                                                     std::string* prefix = nullptr);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_PREFIXED_STORE_H_
