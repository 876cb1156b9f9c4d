// HMAC-SHA256 challenge/response over a Socket (see auth.h for the why).
//
// Protocol, every step a length-prefixed message:
//   server -> client: nonce_s (32 random bytes)
//   client -> server: nonce_c || HMAC(secret, "client" purpose nonce_s nonce_c)
//   server -> client: "OK" || HMAC(secret, "server" purpose nonce_c nonce_s)   or "NO" reason
#include "net/auth.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/logging.h"
#include "common/sha256.h"
#include "net/socket.h"

namespace cohort {
namespace {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;

// From the kernel's CSPRNG: getrandom(2), which blocks only until the pool is
// first initialised early at boot, else /dev/urandom. Neither failing leaves
// no safe way on (nonces and secrets would be predictable), so that ends the
// process with the reason rather than carrying on.
std::string RandomBytes(size_t n) {
  std::string bytes(n, '\0');
  size_t filled = 0;
  while (filled < n) {
    const ssize_t got = getrandom(bytes.data() + filled, n - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  if (filled < n) {
    FILE* urandom = std::fopen("/dev/urandom", "rb");
    if (urandom != nullptr) {
      filled += std::fread(bytes.data() + filled, 1, n - filled, urandom);
      std::fclose(urandom);
    }
  }
  if (filled < n) {
    COHORT_LOG(kError) << "no random bytes from getrandom(2) or /dev/urandom (errno " << errno
                       << "); cannot make a job secret or nonce";
    std::abort();
  }
  return bytes;
}

std::string Mac(const std::string& secret, const std::string& data) {
  const Sha256Digest mac = HmacSha256(secret, data);
  return std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

}  // namespace

bool SameBytes(const std::string& a, const std::string& b) { return ConstantTimeEqual(a, b); }

std::string GenerateSecret() {
  static const char kHex[] = "0123456789abcdef";
  std::string raw = RandomBytes(32);
  std::string hex;
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

ServerHandshake::ServerHandshake(std::string secret, std::string purpose)
    : secret_(std::move(secret)),
      purpose_(std::move(purpose)),
      nonce_s_(RandomBytes(kNonceBytes)) {}

Status ServerHandshake::Check(const std::string& reply, std::string* verdict) const {
  if (reply.size() != kNonceBytes + kMacBytes) {
    *verdict = "NOmalformed handshake";
    return Status::Unauthenticated("malformed handshake reply (" + std::to_string(reply.size()) +
                                   " bytes)");
  }
  const std::string nonce_c = reply.substr(0, kNonceBytes);
  const std::string expected = Mac(secret_, "client" + purpose_ + nonce_s_ + nonce_c);
  if (!SameBytes(reply.substr(kNonceBytes), expected)) {
    *verdict = "NOwrong job secret";
    return Status::Unauthenticated("peer does not hold the job secret (HMAC check failed)");
  }
  *verdict = "OK" + Mac(secret_, "server" + purpose_ + nonce_c + nonce_s_);
  return Status::OK();
}

Status AuthenticateServer(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline, const std::function<void(const Status&)>& on_refused) {
  const ServerHandshake handshake(secret, purpose);
  COHORT_RETURN_IF_ERROR(socket.SendMessage(handshake.challenge(), deadline));
  Result<std::string> reply = socket.RecvMessage(deadline, ServerHandshake::kMaxMessage);
  if (!reply.ok()) {
    Status why = Status::Unauthenticated("no handshake reply: " + reply.status().message());
    if (on_refused) on_refused(why);
    return why;
  }
  std::string verdict;
  Status checked = handshake.Check(*reply, &verdict);
  if (!checked.ok() && on_refused) on_refused(checked);
  Status sent = socket.SendMessage(verdict, deadline);
  return checked.ok() ? sent : checked;
}

Status AuthenticateClient(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline) {
  Result<std::string> nonce_s = socket.RecvMessage(deadline, ServerHandshake::kMaxMessage);
  if (!nonce_s.ok()) return Status::Unauthenticated("no handshake: " + nonce_s.status().message());
  if (nonce_s->size() != kNonceBytes) {
    return Status::Unauthenticated("server sent a malformed challenge");
  }
  const std::string nonce_c = RandomBytes(kNonceBytes);
  COHORT_RETURN_IF_ERROR(
      socket.SendMessage(nonce_c + Mac(secret, "client" + purpose + *nonce_s + nonce_c), deadline));
  Result<std::string> verdict = socket.RecvMessage(deadline, ServerHandshake::kMaxMessage);
  if (!verdict.ok()) {
    return Status::Unauthenticated("server closed the handshake: " + verdict.status().message());
  }
  if (verdict->rfind("NO", 0) == 0) {
    return Status::Unauthenticated("server refused the connection: " + verdict->substr(2));
  }
  const std::string expected = Mac(secret, "server" + purpose + nonce_c + *nonce_s);
  if (verdict->rfind("OK", 0) != 0 || !SameBytes(verdict->substr(2), expected)) {
    return Status::Unauthenticated("server does not hold the job secret (HMAC check failed)");
  }
  return Status::OK();
}

}  // namespace cohort
