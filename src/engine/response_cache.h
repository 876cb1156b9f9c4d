// ResponseCache: announcements that negotiated successfully before, kept in
// numbered slots identical on every rank. When a step submits the same
// tensors as before, a rank announces each by setting its slot's bit instead
// of sending the whole description, so a repeated step's negotiation message
// shrinks to a bit vector of `capacity` bits.
//
// Invariant: every rank inserts the same announcements in the same order (at
// the same point of each cycle), so slot numbers mean the same everywhere.
#ifndef COHORT_ENGINE_RESPONSE_CACHE_H_
#define COHORT_ENGINE_RESPONSE_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/request.h"

namespace cohort {

bool SameAnnouncement(const Announcement& a, const Announcement& b);

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : slots_(capacity) {}

  size_t capacity() const { return slots_.size(); }
  // The slot holding exactly `a`, or -1.
  int Find(const Announcement& a) const;
  // The announcement in `slot`, or null when the slot is empty or out of range.
  const Announcement* At(size_t slot) const;
  // Remembers `a`. A name already cached keeps its slot; a new one takes the
  // next slot round-robin, evicting what was there.
  void Insert(const Announcement& a);

 private:
  std::vector<std::optional<Announcement>> slots_;
  std::unordered_map<std::string, size_t> by_name_;
  size_t next_ = 0;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_RESPONSE_CACHE_H_
