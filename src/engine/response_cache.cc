// Response cache slots.
#include "engine/response_cache.h"

namespace cohort {

bool SameAnnouncement(const Announcement& a, const Announcement& b) {
  return a.name == b.name && a.kind == b.kind && a.dtype == b.dtype && a.op == b.op &&
         a.root == b.root && a.prescale == b.prescale && a.postscale == b.postscale &&
         a.compression == b.compression && a.on_device == b.on_device && a.shape == b.shape &&
         a.splits == b.splits && a.group_id == b.group_id && a.group_size == b.group_size &&
         a.set_members == b.set_members && a.set_id == b.set_id;
}

int ResponseCache::Find(const Announcement& a) const {
  auto it = by_name_.find(a.name);
  if (it == by_name_.end() || !SameAnnouncement(*slots_[it->second], a)) return -1;
  return static_cast<int>(it->second);
}

const Announcement* ResponseCache::At(size_t slot) const {
  if (slot >= slots_.size() || !slots_[slot]) return nullptr;
  return &*slots_[slot];
}

void ResponseCache::Insert(const Announcement& a) {
  if (slots_.empty()) return;
  auto it = by_name_.find(a.name);
  if (it != by_name_.end()) {
    slots_[it->second] = a;
    return;
  }
  const size_t slot = next_;
  next_ = (next_ + 1) % slots_.size();
  if (slots_[slot]) by_name_.erase(slots_[slot]->name);
  slots_[slot] = a;
  by_name_[a.name] = slot;
}

}  // namespace cohort
