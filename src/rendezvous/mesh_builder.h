// Builds the peer mesh (net/mesh.h) through the rendezvous store: every rank
// publishes where it listens and which host it is on, then connects to the
// others: shared memory with ranks on the same host, TCP with the rest.
#ifndef COHORT_RENDEZVOUS_MESH_BUILDER_H_
#define COHORT_RENDEZVOUS_MESH_BUILDER_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "net/mesh.h"
#include "rendezvous/store_client.h"

namespace cohort {

struct MeshOptions {
  int rank = 0;
  int size = 1;
  std::string secret;       // job secret; every mesh connection authenticates with it
  bool force_tcp = false;   // COHORT_TRANSPORT=tcp: TCP even between ranks on one host
  std::string listen_host;  // address peers reach this rank at
  double timeout_seconds = 300;
  size_t shm_slot_bytes = 1 << 20;
  int shm_slots = 4;
  size_t shm_ring_bytes = 1 << 20;  // a power of two
  int tcp_streams = 1;              // COHORT_TCP_STREAMS: TCP connections per pair of ranks
  // COHORT_SHM_SINGLE_COPY != off: probe whether the ranks of this host may
  // copy straight between their memories (Mesh::single_copy).
  bool single_copy = true;
  // COHORT_TEST_HOSTS, a testing knob: "0,0,1,1" puts ranks 0-1 and 2-3 on
  // two emulated hosts (TCP between them, shared memory within) although
  // they run on one machine. Empty: real hosts only.
  std::string test_hosts;
};

Result<Mesh> BuildMesh(StoreClient& store, const MeshOptions& options);

// Identifies the memory domain this process is in: hostname, boot id and
// network namespace, so emulated hosts in separate namespaces count as
// separate hosts.
std::string LocalHostKey();

// Parses COHORT_TEST_HOSTS (see MeshOptions::test_hosts) for a job of
// `size` ranks: one host number per rank.
Result<std::vector<int>> ParseTestHosts(const std::string& text, int size);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_MESH_BUILDER_H_
