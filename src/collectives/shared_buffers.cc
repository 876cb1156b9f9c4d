// The registry of this rank's shared buffers and of the peers' it mapped
// (see shared_buffers.h).
#include "collectives/shared_buffers.h"

#include <algorithm>

namespace cohort {

void SharedBuffers::Add(const SharedAllocation& a) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto base = reinterpret_cast<uintptr_t>(a.base);
  mine_[base] = SharedRef{a.id, base, a.size, a.fd};
}

void SharedBuffers::Remove(const void* user) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto p = reinterpret_cast<uintptr_t>(user);
  auto it = mine_.upper_bound(p);
  if (it == mine_.begin()) return;
  --it;
  if (p < it->second.base + it->second.size) mine_.erase(it);
}

SharedRef SharedBuffers::Find(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = mine_.upper_bound(at);
  if (it == mine_.begin()) return SharedRef{};
  --it;
  return it->second.Covers(at, bytes) ? it->second : SharedRef{};
}

unsigned char* SharedBuffers::MapPeer(int pid, const SharedRef& ref) {
  std::lock_guard<std::mutex> lock(mu_);
  ++uses_;
  for (PeerRegion& p : peers_) {
    if (p.pid == pid && p.region.id() == ref.id && p.region.size() == ref.size) {
      p.last_use = uses_;
      return p.region.data();
    }
  }
  if (refused_.count(pid) != 0) return nullptr;
  Result<SharedRegion> region =
      SharedRegion::OpenPeer(pid, static_cast<int>(ref.fd), ref.id, ref.size);
  if (!region.ok()) {
    if (region.status().IsUnavailable()) refused_.insert(pid);
    return nullptr;
  }
  if (peers_.size() >= kMaxPeerRegions) {
    peers_.erase(std::min_element(
        peers_.begin(), peers_.end(),
        [](const PeerRegion& a, const PeerRegion& b) { return a.last_use < b.last_use; }));
  }
  peers_.push_back(PeerRegion{pid, std::move(*region), uses_});
  return peers_.back().region.data();
}

}  // namespace cohort
