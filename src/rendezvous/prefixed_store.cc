// Scoping a rank's store keys to one join of the job (see prefixed_store.h).
#include "rendezvous/prefixed_store.h"

namespace cohort {

Result<std::unique_ptr<StoreClient>> ScopeToThisJoin(std::unique_ptr<StoreClient> base, int rank,
                                                     std::string* prefix) {
  Result<int64_t> join = base->Add("joins/" + std::to_string(rank), 1);
  if (!join.ok())
    return join.status().WithContext("counting rank " + std::to_string(rank) + "'s joins");
  const std::string scope = "join" + std::to_string(*join) + "/";
  if (prefix != nullptr) *prefix = scope;
  return std::unique_ptr<StoreClient>(new PrefixedStore(std::move(base), scope));
}

}  // namespace cohort
