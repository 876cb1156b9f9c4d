// Choosing this host's reachable address: routes and interfaces.
#include "rendezvous/local_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "net/socket.h"

namespace cohort {

namespace {

struct InterfaceV4 {
  std::string name;
  std::string address;
  bool up = false;
  bool loopback = false;
};

std::vector<InterfaceV4> ListInterfaces() {
  std::vector<InterfaceV4> list;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return list;
  for (ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
    list.push_back(
        {i->ifa_name, text, (i->ifa_flags & IFF_UP) != 0, (i->ifa_flags & IFF_LOOPBACK) != 0});
  }
  ::freeifaddrs(all);
  return list;
}

bool IsLoopback(const std::string& address) { return address.rfind("127.", 0) == 0; }

}  // namespace

Result<std::string> LocalAddressToward(const std::string& remote_host) {
  Result<std::string> ip = ResolveHost(remote_host);
  if (!ip.ok()) return ip.status();
  if (IsLoopback(*ip)) return std::string("127.0.0.1");
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(9);
  ::inet_pton(AF_INET, ip->c_str(), &addr.sin_addr);
  // connect() on a UDP socket sends nothing; it only picks the route.
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  ::close(fd);
  if (!ok) return Status::IoError("no route to " + remote_host);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return std::string(text);
}

bool IsThisHost(const std::string& host) {
  Result<std::string> ip = ResolveHost(host);
  if (!ip.ok()) return false;
  if (IsLoopback(*ip)) return true;
  for (const InterfaceV4& i : ListInterfaces()) {
    if (i.address == *ip) return true;
  }
  return false;
}

bool ResolvesToLoopback(const std::string& host) {
  Result<std::string> ip = ResolveHost(host);
  return ip.ok() && IsLoopback(*ip);
}

Result<std::string> InterfaceAddress(const std::string& interfaces) {
  const std::vector<InterfaceV4> have = ListInterfaces();
  std::stringstream wanted(interfaces);
  for (std::string name; std::getline(wanted, name, ',');) {
    for (const InterfaceV4& i : have) {
      if (i.name == name && i.up) return i.address;
    }
  }
  std::string listed;
  for (const InterfaceV4& i : have) {
    listed += (listed.empty() ? "" : ", ") + i.name + " " + i.address + (i.up ? "" : " (down)");
  }
  return Status::InvalidArgument(
      "network interface '" + interfaces +
      "': none of them is up with an IPv4 address on this host (it has: " + listed + ")");
}

Result<std::string> FirstNonLoopbackAddress() {
  for (const InterfaceV4& i : ListInterfaces()) {
    if (i.up && !i.loopback && !IsLoopback(i.address)) return i.address;
  }
  return Status::IoError("this host has no IPv4 address other than loopback");
}

Result<std::string> SelectAdvertiseAddress(const std::string& store_host,
                                           const std::string& interfaces, bool multi_host) {
  if (!interfaces.empty()) return InterfaceAddress(interfaces);
  Result<std::string> toward = LocalAddressToward(store_host);
  if (!toward.ok() || !IsLoopback(*toward) || !multi_host) return toward;
  return FirstNonLoopbackAddress();
}

}  // namespace cohort
