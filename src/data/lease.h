// Writer leases: how a writer announces that it may be writing objects no
// ref reaches yet, so `cohort data gc` leaves them alone. A lease is the
// object leases/<random id>, put when a Writer opens (its modification time
// is the storage's clock, like every object's) and removed when the Writer
// is destroyed. A writer that dies leaves its lease behind; gc treats leases
// older than its expiry as dead.
#ifndef COHORT_DATA_LEASE_H_
#define COHORT_DATA_LEASE_H_

#include <memory>
#include <string>

#include "cohort/status.h"
#include "data/storage.h"

namespace cohort::data {

inline constexpr char kLeasePrefix[] = "leases";

class WriterLease {
 public:
  // Puts a new lease (text: host, pid and local time, for people reading it).
  static Result<std::unique_ptr<WriterLease>> Take(Storage* storage);
  ~WriterLease();  // removes the lease; a failure leaves it to expire

  const std::string& key() const { return key_; }

 private:
  WriterLease(Storage* storage, std::string key) : storage_(storage), key_(std::move(key)) {}
  Storage* storage_;
  std::string key_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_LEASE_H_
