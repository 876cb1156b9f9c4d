// Job-secret authentication for every cohort connection (rendezvous store and
// peer mesh). Both sides prove they hold the per-job secret with an HMAC-SHA256
// challenge/response over fresh nonces; the secret itself never crosses the wire.
#ifndef COHORT_NET_AUTH_H_
#define COHORT_NET_AUTH_H_

#include <functional>
#include <string>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

class Socket;

// 32 random bytes from the OS CSPRNG, as 64 hex characters.
std::string GenerateSecret();

// Mutual handshake. `purpose` ("store", "mesh") is mixed into the MAC so a
// transcript from one kind of connection cannot be replayed on another.
// A failure returns kUnauthenticated with the reason (the caller logs it and
// closes the socket).
Status AuthenticateClient(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline);
// `on_refused`, when given, runs before the refusal is sent, so by the time
// the client learns it was refused the server has already accounted for it.
Status AuthenticateServer(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline,
                          const std::function<void(const Status&)>& on_refused = nullptr);

}  // namespace cohort

#endif  // COHORT_NET_AUTH_H_
