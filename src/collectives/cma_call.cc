// Publishing, checking and finishing one single-copy call (see cma_call.h).
#include "collectives/cma_call.h"

#include <cstring>
#include <string>

namespace cohort {

CmaCall::CmaCall(Communicator& comm, const char* what)
    : comm_(comm), peers_(comm, what), what_(what) {}

size_t CmaCall::MaxPieces(const Mesh& mesh) {
  return (mesh.layout->slot_bytes() - sizeof(uint64_t)) / sizeof(CmaPiece);
}

Status CmaCall::Start(const std::vector<CmaPiece>& mine, const CallHeader& header) {
  g_ = peers_.first_chunk();
  COHORT_RETURN_IF_ERROR(peers_.WaitSlotFree(g_));
  *peers_.Header(me(), g_) = header;
  uint64_t* table = Table(me());
  table[0] = mine.size();
  if (!mine.empty()) std::memcpy(table + 1, mine.data(), mine.size() * sizeof(CmaPiece));
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

Status CmaCall::Read(int l, void* local, const std::vector<RemoteRange>& remote) {
  int error_number = 0;
  Status s = CmaRead(comm_.mesh().peers[peers_.rank_of(l)].pid, local, remote, &error_number);
  return s.ok() ? s : CopyFailed(l, s, error_number);
}

Status CmaCall::Write(int l, const std::vector<iovec>& local,
                      const std::vector<RemoteRange>& remote) {
  int error_number = 0;
  Status s = CmaWrite(comm_.mesh().peers[peers_.rank_of(l)].pid, local, remote, &error_number);
  return s.ok() ? s : CopyFailed(l, s, error_number);
}

Status CmaCall::Finish() {
  peers_.Publish(ShmCounter::kReduced, g_ + 1);
  COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kReduced, g_ + 1));
  peers_.Publish(ShmCounter::kOut, g_ + 1);
  return Status::OK();
}

}  // namespace cohort
