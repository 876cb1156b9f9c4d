// Communicator failure handling.
#include "collectives/communicator.h"

#include <poll.h>

#include "common/logging.h"

namespace cohort {
namespace {

// Store keys under which a rank publishes why it gave up: "abort/<rank>" =
// "<code number>\t<message>".
std::string AbortKey(int rank) { return "abort/" + std::to_string(rank); }

}  // namespace

Communicator::Communicator(Mesh mesh, std::unique_ptr<StoreClient> store,
                           CommunicatorOptions options)
    : mesh_(std::move(mesh)), store_(std::move(store)), options_(options) {}

Communicator::Communicator(Communicator& parent, const std::vector<int>& members)
    : parent_(&parent), members_(members), options_(parent.options()) {
  const Mesh& all = parent.mesh();
  mesh_.size = static_cast<int>(members.size());
  for (int r = 0; r < mesh_.size; ++r) {
    if (members[r] == all.rank) mesh_.rank = r;
    mesh_.peers.push_back(all.peers[members[r]]);
    mesh_.names.push_back(all.Name(members[r]));
  }
}

Communicator::~Communicator() = default;

Status Communicator::Fail(const Status& status) {
  if (!failure_.ok()) return failure_;
  {
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    failure_ = interrupt_.ok() ? status : interrupt_;
  }
  if (parent_ != nullptr) return parent_->Fail(failure_);  // it owns the links and the store
  COHORT_LOG(kDebug) << "rank " << rank() << " failing: " << failure_.ToString();
  if (store_ != nullptr) {
    (void)store_->Set(AbortKey(rank()), std::to_string(static_cast<int>(failure_.code())) + "\t" +
                                            failure_.message());
  }
  if (mesh_.layout.has_value()) {
    mesh_.layout->control(mesh_.segments[mesh_.local_rank].data())->aborted.store(1);
  }
  for (auto& link : mesh_.links) {
    if (link != nullptr) link->Close();
  }
  return failure_;
}

void Communicator::Interrupt(const Status& status) {
  if (parent_ != nullptr) return parent_->Interrupt(status);
  {
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    if (!interrupt_.ok()) return;
    interrupt_ = status;
  }
  if (mesh_.layout.has_value()) {
    mesh_.layout->control(mesh_.segments[mesh_.local_rank].data())->aborted.store(1);
  }
  for (auto& link : mesh_.links) {
    if (link != nullptr) link->Close();
  }
}

Status Communicator::PeerError(int peer, const Status& cause, const std::string& during,
                               double reason_wait_seconds) {
  if (parent_ != nullptr) {
    return parent_->PeerError(members_[peer], cause, during, reason_wait_seconds);
  }
  {
    // Our own Interrupt closed the link: the cause is here, not at the peer.
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    if (!interrupt_.ok()) return interrupt_;
  }
  if (store_ != nullptr) {
    // A peer that gave up deliberately published its reason before closing
    // its links, so a short wait is enough; a crashed peer published nothing.
    Result<std::string> reason =
        store_->Get(AbortKey(peer), Deadline::AfterSeconds(reason_wait_seconds));
    if (reason.ok()) {
      size_t tab = reason->find('\t');
      auto code = static_cast<Status::Code>(std::stoi(reason->substr(0, tab)));
      if (code == Status::Code::kPeerFailure || code == Status::Code::kTimeout) {
        return Status(code, reason->substr(tab + 1));  // already names the root cause
      }
      return Status(code,
                    during + ": " + mesh_.Describe(peer) + " failed: " + reason->substr(tab + 1));
    }
  }
  return Status::PeerFailure(during + ": lost " + mesh_.Describe(peer) + ": " + cause.message());
}

Status Communicator::CheckPeerAlive(int peer, const std::string& during) {
  if (parent_ != nullptr) return parent_->CheckPeerAlive(peer < 0 ? peer : members_[peer], during);
  if (!mesh_.layout.has_value() || peer < 0) return Status::OK();
  const int l = mesh_.peers[peer].local_rank;
  if (mesh_.peers[peer].host_key != mesh_.peers[rank()].host_key || l == mesh_.local_rank) {
    return Status::OK();  // liveness of remote peers shows on their sockets
  }
  if (mesh_.layout->control(mesh_.segments[l].data())->aborted.load()) {
    return PeerError(peer, Status::PeerFailure("it gave up"), during);
  }
  pollfd p{mesh_.pidfds[l], POLLIN, 0};
  if (p.fd >= 0 && ::poll(&p, 1, 0) > 0) {
    // Elastic jobs go on as soon as this error is known: no wait for a reason.
    return PeerError(peer, Status::PeerFailure("the process exited"), during, 0);
  }
  return Status::OK();
}

Status Communicator::TimeoutError(int peer, const std::string& during) const {
  if (parent_ != nullptr) return parent_->TimeoutError(peer < 0 ? peer : members_[peer], during);
  return Status::Timeout(during + ": no progress for " +
                         std::to_string(static_cast<int>(options_.timeout_seconds)) +
                         " s (COHORT_TIMEOUT) waiting for " + mesh_.Describe(peer));
}

}  // namespace cohort
