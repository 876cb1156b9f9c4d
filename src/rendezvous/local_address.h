// Which of this host's addresses other hosts of a job can reach: the address
// the launcher's store listens on, and the one each rank advertises for its
// mesh connections.
#ifndef COHORT_RENDEZVOUS_LOCAL_ADDRESS_H_
#define COHORT_RENDEZVOUS_LOCAL_ADDRESS_H_

#include <string>

#include "cohort/status.h"

namespace cohort {

// The local address used to reach `remote_host` (the route's source
// address); 127.0.0.1 for loopback.
Result<std::string> LocalAddressToward(const std::string& remote_host);

// Whether `host` (a name or dotted address) is this machine: it resolves to
// a loopback address or to the address of one of this host's interfaces.
// False when it does not resolve.
bool IsThisHost(const std::string& host);

// Whether `host` resolves to a loopback address (127.x): only processes of
// this host can reach what listens there. False when it does not resolve.
bool ResolvesToLoopback(const std::string& host);

// The IPv4 address of the first interface in `interfaces` (comma-separated,
// e.g. "eth0,br0") that this host has and that is up. The error names the
// interfaces and lists the ones this host has.
Result<std::string> InterfaceAddress(const std::string& interfaces);

// The IPv4 address of the first interface that is up and not loopback.
Result<std::string> FirstNonLoopbackAddress();

// The address a rank advertises to its peers (COHORT_NETWORK_INTERFACE is
// `interfaces`): that interface's when set; else the route's source toward
// the store host. When that is loopback (the store host is this host, e.g.
// a node name mapped to 127.0.1.1) and the job spans several hosts, the
// first non-loopback address instead, since peers elsewhere cannot reach a
// loopback address.
Result<std::string> SelectAdvertiseAddress(const std::string& store_host,
                                           const std::string& interfaces, bool multi_host);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_LOCAL_ADDRESS_H_
