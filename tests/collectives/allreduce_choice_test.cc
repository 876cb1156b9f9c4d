// Which allreduce algorithm `auto` picks for a topology and message size.
#include <gtest/gtest.h>

#include "collectives/collectives.h"
#include "collectives/hierarchical_allreduce.h"

namespace cohort {
namespace {

// A mesh as rank 0 of `hosts` sees it (no links needed to choose).
Mesh MeshOf(const std::vector<std::vector<int>>& hosts, bool shm) {
  Mesh m;
  m.size = 0;
  for (const auto& host : hosts) m.size += static_cast<int>(host.size());
  m.hosts = hosts;
  m.local_ranks = hosts[0];
  m.local_size = static_cast<int>(hosts[0].size());
  m.cross_size = static_cast<int>(hosts.size());
  m.peers.resize(m.size);
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int r : hosts[h]) m.peers[r].hostname = "host" + std::to_string(h);
  }
  if (shm && m.local_size > 1) m.layout.emplace(m.local_size, 4096, 4, 4096);
  return m;
}

TEST(AllreduceChoice, AutoPicksByTopologyAndSize) {
  CommunicatorOptions o;
  o.small_message_bytes = 64 << 10;
  const size_t large = 1 << 20, small = 1 << 10;
  const Mesh one_host = MeshOf({{0, 1, 2, 3}}, true);
  EXPECT_EQ(ChooseAllreduceAlgorithm(one_host, large, o), AllreduceAlgorithm::kSharedMemory);
  const Mesh two_by_two = MeshOf({{0, 1}, {2, 3}}, true);
  EXPECT_EQ(ChooseAllreduceAlgorithm(two_by_two, large, o), AllreduceAlgorithm::kHierarchical);
  EXPECT_EQ(ChooseAllreduceAlgorithm(two_by_two, small, o), AllreduceAlgorithm::kRecursiveDoubling);
  // Hierarchical also over TCP-only hosts: the intra-host rings run on links.
  EXPECT_EQ(ChooseAllreduceAlgorithm(MeshOf({{0, 1}, {2, 3}}, false), large, o),
            AllreduceAlgorithm::kHierarchical);
  // One rank per host, or hosts of different sizes: the flat ring.
  EXPECT_EQ(ChooseAllreduceAlgorithm(MeshOf({{0}, {1}, {2}}, false), large, o),
            AllreduceAlgorithm::kRing);
  EXPECT_EQ(ChooseAllreduceAlgorithm(MeshOf({{0, 1}, {2}}, true), large, o),
            AllreduceAlgorithm::kRing);
}

TEST(AllreduceChoice, UnevenHostsAreNamed) {
  Status s = CheckHierarchicalLayout(MeshOf({{0, 1}, {2}}, true));
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "hierarchical allreduce needs the same number of ranks on every host, but host host0 "
            "has 2 and host host1 has 1");
  EXPECT_TRUE(CheckHierarchicalLayout(MeshOf({{0, 2}, {1, 3}}, true)).ok());
}

TEST(AllreduceChoice, ParsesHierarchical) {
  EXPECT_EQ(*ParseAllreduceAlgorithm("hierarchical"), AllreduceAlgorithm::kHierarchical);
  Status bad = ParseAllreduceAlgorithm("tree").status();
  EXPECT_NE(bad.message().find("expected auto, shm, ring, recursive_doubling or hierarchical"),
            std::string::npos);
}

}  // namespace
}  // namespace cohort
