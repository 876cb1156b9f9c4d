// Writer leases: a random key per writer, put at open, removed at close.
#include "data/lease.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <random>

namespace cohort::data {

Result<std::unique_ptr<WriterLease>> WriterLease::Take(Storage* storage) {
  std::random_device random;
  char id[33];
  std::snprintf(id, sizeof id, "%08x%08x%08x%08x", random(), random(), random(), random());
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  const std::string text = "cohort writer on " + std::string(host) + ", pid " +
                           std::to_string(::getpid()) + ", since " +
                           std::to_string(std::time(nullptr)) + "\n";
  const std::string key = std::string(kLeasePrefix) + "/" + id;
  COHORT_RETURN_IF_ERROR(storage->Put(key, text));
  return std::unique_ptr<WriterLease>(new WriterLease(storage, key));
}

WriterLease::~WriterLease() { (void)storage_->Delete(key_); }

}  // namespace cohort::data
