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

#include "net/socket.h"

namespace cohort {
namespace {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxHandshakeMessage = 1024;

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

bool SameBytes(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

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

Status AuthenticateServer(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline,
                          const std::function<void(const Status&)>& on_refused) {
  auto refuse = [&](const Status& why, const std::string& reply) {
    if (on_refused) on_refused(why);
    (void)socket.SendMessage("NO" + reply, deadline);
    return why;
  };
  const std::string nonce_s = RandomBytes(kNonceBytes);
  COHORT_RETURN_IF_ERROR(socket.SendMessage(nonce_s, deadline));
  Result<std::string> reply = socket.RecvMessage(deadline, kMaxHandshakeMessage);
  if (!reply.ok()) {
    Status why = Status::Unauthenticated("no handshake reply: " + reply.status().message());
    if (on_refused) on_refused(why);
    return why;
  }
  if (reply->size() != kNonceBytes + kMacBytes) {
    return refuse(Status::Unauthenticated("malformed handshake reply (" +
                                          std::to_string(reply->size()) + " bytes)"),
                  "malformed handshake");
  }
  const std::string nonce_c = reply->substr(0, kNonceBytes);
  const std::string expected = Mac(secret, "client" + purpose + nonce_s + nonce_c);
  if (!SameBytes(reply->substr(kNonceBytes), expected)) {
    return refuse(Status::Unauthenticated("peer does not hold the job secret (HMAC check failed)"),
                  "wrong job secret");
  }
  return socket.SendMessage("OK" + Mac(secret, "server" + purpose + nonce_c + nonce_s), deadline);
}

Status AuthenticateClient(Socket& socket, const std::string& secret, const std::string& purpose,
                          Deadline deadline) {
  Result<std::string> nonce_s = socket.RecvMessage(deadline, kMaxHandshakeMessage);
  if (!nonce_s.ok()) return Status::Unauthenticated("no handshake: " + nonce_s.status().message());
  if (nonce_s->size() != kNonceBytes) {
    return Status::Unauthenticated("server sent a malformed challenge");
  }
  const std::string nonce_c = RandomBytes(kNonceBytes);
  COHORT_RETURN_IF_ERROR(
      socket.SendMessage(nonce_c + Mac(secret, "client" + purpose + *nonce_s + nonce_c), deadline));
  Result<std::string> verdict = socket.RecvMessage(deadline, kMaxHandshakeMessage);
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
