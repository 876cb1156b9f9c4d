// Publishing, checking and finishing one single-copy call (see cma_call.h).
#include "collectives/cma_call.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace cohort {

CmaCall::CmaCall(Communicator& comm, const char* what)
    : comm_(comm), peers_(comm, what), what_(what) {}

static_assert(sizeof(CmaPiece) % 8 == 0 && sizeof(SharedRef) % 8 == 0, "tables of words");

size_t CmaCall::MaxPieces(const Mesh& mesh) {
  // Each piece may add two regions (its send and its recv buffer).
  return (mesh.layout->slot_bytes() - 2 * sizeof(uint64_t)) /
         (sizeof(CmaPiece) + 2 * sizeof(SharedRef));
}

// The regions of this process that hold `mine`, each once.
static std::vector<SharedRef> RegionsOf(SharedBuffers& buffers, const std::vector<CmaPiece>& mine,
                                        size_t esize) {
  std::vector<SharedRef> refs;
  for (const CmaPiece& p : mine) {
    for (uint64_t addr : {p.send, p.recv}) {
      const SharedRef r = buffers.Find(reinterpret_cast<const void*>(addr), p.count * esize);
      const bool known =
          std::any_of(refs.begin(), refs.end(), [&](const SharedRef& k) { return k.id == r.id; });
      if (r.id != 0 && !known) refs.push_back(r);
    }
  }
  return refs;
}

Status CmaCall::Start(const std::vector<CmaPiece>& mine, size_t esize, const CallHeader& header) {
  g_ = peers_.first_chunk();
  COHORT_RETURN_IF_ERROR(peers_.WaitSlotFree(g_));
  *peers_.Header(me(), g_) = header;
  uint64_t* table = Table(me());
  table[0] = mine.size();
  if (!mine.empty()) std::memcpy(table + 1, mine.data(), mine.size() * sizeof(CmaPiece));
  const std::vector<SharedRef> refs = RegionsOf(comm_.shared_buffers(), mine, esize);
  uint64_t* regions = Regions(me());
  regions[0] = refs.size();
  if (!refs.empty()) std::memcpy(regions + 1, refs.data(), refs.size() * sizeof(SharedRef));
  peers_.Publish(ShmCounter::kIn, g_ + 1);
  COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kIn, g_ + 1));
  COHORT_RETURN_IF_ERROR(peers_.CheckHeaders(g_, header));
  for (int l = 0; l < size(); ++l) {
    if (Table(l)[0] != mine.size()) {  // equal headers imply equal tables; a broken invariant
      return comm_.Fail(Status::Internal(
          std::string(what_) + ": " + comm_.mesh().Describe(peers_.rank_of(l)) + " published " +
          std::to_string(Table(l)[0]) + " buffers, this rank " + std::to_string(mine.size())));
    }
  }
  return Status::OK();
}

Status CmaCall::CopyFailed(int l, const Status& status, int error_number) {
  const int peer = peers_.rank_of(l);
  if (CmaPeerGone(error_number)) {
    return comm_.Fail(comm_.PeerError(peer, Status::PeerFailure("the process exited"), what_, 0));
  }
  // A peer that gave up or exited between its last counter and our copy.
  Status alive = comm_.CheckPeerAlive(peer, what_);
  if (!alive.ok()) return comm_.Fail(alive);
  return comm_.Fail(Status::IoError(std::string(what_) + ": copying with " +
                                    comm_.mesh().Describe(peer) + ": " + status.message()));
}

unsigned char* CmaCall::Direct(int l, uint64_t addr, size_t bytes) {
  const uint64_t* regions = Regions(l);
  const auto* refs = reinterpret_cast<const SharedRef*>(regions + 1);
  for (uint64_t i = 0; i < regions[0]; ++i) {
    const SharedRef& r = refs[i];
    if (!r.Covers(addr, bytes)) continue;
    unsigned char* mapped =
        comm_.shared_buffers().MapPeer(comm_.mesh().peers[peers_.rank_of(l)].pid, r);
    return mapped == nullptr ? nullptr : mapped + (addr - r.base);
  }
  return nullptr;
}

// Both directions walk the remote ranges and the local bytes side by side:
// each range copies with memcpy where Direct maps it, and otherwise joins
// the ranges handed to CMA (in order, so the local bytes line up).
Status CmaCall::Read(int l, void* local, const std::vector<RemoteRange>& remote) {
  auto* at = static_cast<unsigned char*>(local);
  unsigned char* cma_local = at;
  std::vector<RemoteRange> cma;
  for (const RemoteRange& r : remote) {
    if (unsigned char* p = Direct(l, r.addr, r.bytes)) {
      COHORT_RETURN_IF_ERROR(ReadCma(l, cma_local, &cma));
      std::memcpy(at, p, r.bytes);
      cma_local = at + r.bytes;
    } else {
      cma.push_back(r);
    }
    at += r.bytes;
  }
  return ReadCma(l, cma_local, &cma);
}

Status CmaCall::Write(int l, const std::vector<iovec>& local,
                      const std::vector<RemoteRange>& remote) {
  // Lay the local buffers out as (pointer, bytes) pairs one range at a time.
  std::vector<iovec> cma_local;
  std::vector<RemoteRange> cma;
  size_t li = 0, loff = 0;
  for (const RemoteRange& r : remote) {
    unsigned char* p = Direct(l, r.addr, r.bytes);
    if (p == nullptr) cma.push_back(r);
    for (size_t done = 0; done < r.bytes;) {
      const size_t n = std::min(r.bytes - done, local[li].iov_len - loff);
      unsigned char* src = static_cast<unsigned char*>(local[li].iov_base) + loff;
      if (p != nullptr) {
        std::memcpy(p + done, src, n);
      } else {
        cma_local.push_back({src, n});
      }
      done += n;
      loff += n;
      if (loff == local[li].iov_len) ++li, loff = 0;
    }
  }
  if (cma.empty()) return Status::OK();
  int error_number = 0;
  Status s = CmaWrite(comm_.mesh().peers[peers_.rank_of(l)].pid, cma_local, cma, &error_number);
  return s.ok() ? s : CopyFailed(l, s, error_number);
}

Status CmaCall::ReadCma(int l, void* local, std::vector<RemoteRange>* remote) {
  if (remote->empty()) return Status::OK();
  int error_number = 0;
  Status s = CmaRead(comm_.mesh().peers[peers_.rank_of(l)].pid, local, *remote, &error_number);
  remote->clear();
  return s.ok() ? s : CopyFailed(l, s, error_number);
}

Status CmaCall::Finish() {
  peers_.Publish(ShmCounter::kReduced, g_ + 1);
  COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kReduced, g_ + 1));
  peers_.Publish(ShmCounter::kOut, g_ + 1);
  return Status::OK();
}

}  // namespace cohort
