// HMAC-SHA256 challenge/response over a Socket (see auth.h for the why).
//
// Protocol, every step a length-prefixed message:
//   server -> client: nonce_s (32 random bytes)
//   client -> server: nonce_c || HMAC(secret, "client" purpose nonce_s nonce_c)
//   server -> client: "OK" || HMAC(secret, "server" purpose nonce_c nonce_s)   or "NO" reason
#include "net/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <utility>

#include "net/socket.h"

namespace cohort {
namespace {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;

std::string RandomBytes(size_t n) {
  std::string bytes(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(n));
  return bytes;
}

std::string Mac(const std::string& secret, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

bool SameBytes(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

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
