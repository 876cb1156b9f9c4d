// common/sha256.h against OpenSSL's libcrypto (the implementation the job
// authentication used before; the full build still links it for src/data):
// every length around the block and padding boundaries, long inputs fed in
// odd pieces, and HMAC keys shorter than, equal to and longer than a block.
#include "common/sha256.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <random>
#include <string>

namespace cohort {
namespace {

std::string OpensslSha256(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(digest), len);
}

std::string OpensslHmac(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Bytes(const Sha256Digest& d) { return std::string(d.begin(), d.end()); }

std::string RandomString(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(DigestHex(Sha256Of("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(DigestHex(Sha256Of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231 test case 2.
  EXPECT_EQ(DigestHex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Sha256, EqualsOpensslOnEveryLengthUpTo300) {
  std::mt19937 rng(7);
  for (size_t n = 0; n <= 300; ++n) {
    const std::string input = RandomString(rng, n);
    EXPECT_EQ(Bytes(Sha256Of(input)), OpensslSha256(input)) << "length " << n;
  }
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  std::mt19937 rng(11);
  const std::string input = RandomString(rng, 100000);
  Sha256 h;
  for (size_t at = 0, step = 1; at < input.size(); at += step, step = step * 3 % 257 + 1) {
    h.Update(input.substr(at, step));
  }
  EXPECT_EQ(Bytes(h.Finish()), OpensslSha256(input));
}

TEST(HmacSha256, EqualsOpensslForShortBlockAndLongKeys) {
  std::mt19937 rng(13);
  for (size_t key_len : {0, 1, 31, 32, 63, 64, 65, 100, 200}) {
    for (size_t msg_len : {0, 1, 55, 56, 64, 119, 1000}) {
      const std::string key = RandomString(rng, key_len);
      const std::string msg = RandomString(rng, msg_len);
      EXPECT_EQ(Bytes(HmacSha256(key, msg)), OpensslHmac(key, msg))
          << "key " << key_len << " message " << msg_len;
    }
  }
}

TEST(ConstantTimeEqual, ComparesBytesAndLengths) {
  EXPECT_TRUE(ConstantTimeEqual("", ""));
  EXPECT_TRUE(ConstantTimeEqual(std::string("a\0b", 3), std::string("a\0b", 3)));
  EXPECT_FALSE(ConstantTimeEqual(std::string("a\0b", 3), std::string("a\0c", 3)));
  EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
}

}  // namespace
}  // namespace cohort
