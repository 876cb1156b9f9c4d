// Mesh helpers.
#include "net/mesh.h"

#include <unistd.h>

namespace cohort {

Mesh::~Mesh() {
  for (int fd : pidfds) {
    if (fd >= 0) ::close(fd);
  }
}

std::string Mesh::Describe(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers.size())) return "rank " + std::to_string(peer);
  return "rank " + std::to_string(Name(peer)) + " (host " + peers[peer].hostname + ", pid " +
         std::to_string(peers[peer].pid) + ")";
}

}  // namespace cohort
