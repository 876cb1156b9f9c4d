// The peer mesh: one Link to every other rank of the job, plus the mapped
// shared-memory segments of the ranks on this host. Built once at init by
// rendezvous/mesh_builder.cc and owned by the runtime.
#ifndef COHORT_NET_MESH_H_
#define COHORT_NET_MESH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/host_segment.h"
#include "net/link.h"
#include "net/shm_segment.h"

namespace cohort {

struct PeerInfo {
  std::string hostname;  // for messages
  std::string host_key;  // equal for ranks that share memory (same host, same network namespace)
  std::string address;   // where its mesh listener is
  int pid = 0;
  int local_rank = 0;  // index among ranks with the same host_key
};

struct Mesh {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::vector<PeerInfo> peers;               // indexed by rank, self included
  std::vector<std::unique_ptr<Link>> links;  // indexed by rank; null for self
  std::vector<int> local_ranks;              // global ranks on this host, ascending
  // How messages name each rank: its rank in the whole job. Empty means the
  // identity; a process set's mesh numbers its members 0..n-1 but names
  // them by their job ranks.
  std::vector<int> names;
  // Global ranks of every host, ascending; hosts ordered by their lowest
  // rank (so hosts[cross_rank] == local_ranks).
  std::vector<std::vector<int>> hosts;

  // Present when the ranks on this host talk through shared memory.
  std::optional<HostSegmentLayout> layout;
  std::vector<ShmSegment> segments;  // indexed by local rank; ours is segments[local_rank]
  std::vector<int> pidfds;  // indexed by local rank; -1 for self; readable once that process exits
  // Every rank of this host may copy straight from and into the others'
  // memory (net/cma.h): the single-copy collectives can run. When not,
  // `single_copy_note` says why (for the log and the query).
  bool single_copy = false;
  std::string single_copy_note;

  Mesh() = default;
  Mesh(Mesh&&) = default;
  Mesh& operator=(Mesh&&) = default;
  ~Mesh();

  bool all_local_shm() const { return layout.has_value() && local_size == size; }
  // The job rank of `peer`.
  int Name(int peer) const {
    return peer >= 0 && peer < static_cast<int>(names.size()) ? names[peer] : peer;
  }
  // "rank 3 (host node7, pid 1234)", with the job rank.
  std::string Describe(int peer) const;
};

}  // namespace cohort

#endif  // COHORT_NET_MESH_H_
