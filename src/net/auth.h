// Job-secret authentication for every cohort connection (rendezvous store and
// peer mesh). Both sides prove they hold the per-job secret with an HMAC-SHA256
// challenge/response over fresh nonces; the secret itself never crosses the wire.
#ifndef COHORT_NET_AUTH_H_
#define COHORT_NET_AUTH_H_

#include <cstddef>
#include <functional>
#include <string>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

class Socket;

// 32 random bytes from the OS CSPRNG, as 64 hex characters.
std::string GenerateSecret();

// Whether two secrets are equal, in a time that does not depend on where
// they differ (only on their length).
bool SameBytes(const std::string& a, const std::string& b);

// Mutual handshake. `purpose` ("store", "mesh") is mixed into the MAC so a
// transcript from one kind of connection cannot be replayed on another.
// A failure returns kUnauthenticated with the reason (the caller logs it and
// closes the socket).
Status AuthenticateClient(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline);
// The server's side of the handshake as a state machine, for an event loop
// that handshakes many connections at once on one thread (the rendezvous
// store, the mesh builder): send challenge(), then hand the client's reply to
// Check() and send the verdict it returns.
class ServerHandshake {
 public:
  ServerHandshake(std::string secret, std::string purpose);
  // The first message to send: a fresh nonce.
  const std::string& challenge() const { return nonce_s_; }
  // Checks the client's reply and sets `*verdict` to the message to send back
  // (acceptance or refusal). OK when the client proved it holds the secret;
  // else kUnauthenticated naming why.
  Status Check(const std::string& reply, std::string* verdict) const;

  // Largest handshake message either side sends.
  static constexpr size_t kMaxMessage = 1024;

 private:
  std::string secret_;
  std::string purpose_;
  std::string nonce_s_;
};

// `on_refused`, when given, runs before the refusal is sent, so by the time
// the client learns it was refused the server has already accounted for it.
Status AuthenticateServer(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline,
                          const std::function<void(const Status&)>& on_refused = nullptr);

}  // namespace cohort

#endif  // COHORT_NET_AUTH_H_
