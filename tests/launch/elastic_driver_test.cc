// Tests of what the elastic driver reads from a host discovery script.
#include "launch/elastic_driver.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(DiscoveredHosts, LinesWithAndWithoutSlotsAndRepeatsAdd) {
  Result<std::vector<HostSlots>> hosts = ParseDiscoveredHosts("node1:4\n\n  node2 \nnode1:2\r\n");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[0].host, "node1");
  EXPECT_EQ((*hosts)[0].slots, 6);
  EXPECT_EQ((*hosts)[1].host, "node2");
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_TRUE(ParseDiscoveredHosts("")->empty());
}

TEST(DiscoveredHosts, ABadLineIsNamed) {
  Result<std::vector<HostSlots>> hosts = ParseDiscoveredHosts("a:1\nb,c\n");
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().message().rfind(
                "host discovery output line 2 'b,c': expected host or host:slots", 0),
            0u)
      << hosts.status().message();
}

}  // namespace
}  // namespace cohort
