// Builds the peer mesh (net/mesh.h) through the rendezvous store: every rank
// publishes where it listens and which host it is on, then connects to the
// others: shared memory with ranks on the same host, TCP with the rest.
#ifndef COHORT_RENDEZVOUS_MESH_BUILDER_H_
#define COHORT_RENDEZVOUS_MESH_BUILDER_H_

#include <string>

#include "cohort/status.h"
#include "net/mesh.h"
#include "rendezvous/store_client.h"

namespace cohort {

struct MeshOptions {
  int rank = 0;
  int size = 1;
  std::string secret;           // job secret; every mesh connection authenticates with it
  bool force_tcp = false;       // COHORT_TRANSPORT=tcp: TCP even between ranks on one host
  std::string listen_host;      // address peers reach this rank at
  double timeout_seconds = 300;
  size_t shm_slot_bytes = 1 << 20;
  int shm_slots = 4;
  size_t shm_ring_bytes = 1 << 20;  // a power of two
};

Result<Mesh> BuildMesh(StoreClient& store, const MeshOptions& options);

// Identifies the memory domain this process is in: hostname, boot id and
// network namespace, so emulated hosts in separate namespaces count as
// separate hosts.
std::string LocalHostKey();

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_MESH_BUILDER_H_
