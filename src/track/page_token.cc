// Page tokens as base64 JSON.
#include "track/page_token.h"

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace cohort::track {

std::string EncodePageToken(int64_t offset) {
  std::string json = nlohmann::json{{"offset", offset}}.dump();
  std::string out(4 * ((json.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(json.data()),
                          static_cast<int>(json.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<int64_t> DecodePageToken(const std::string& token) {
  if (token.empty()) return int64_t{0};
  Status bad = Status::InvalidArgument("Invalid page token '" + token.substr(0, 100) + "'");
  if (token.size() % 4 != 0 || token.size() > 1000) return bad;
  std::string raw(token.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(token.data()),
                          static_cast<int>(token.size()));
  if (n < 0) return bad;
  raw.resize(static_cast<size_t>(n));
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();  // base64 padding
  auto json = nlohmann::json::parse(raw, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("offset") ||
      !json["offset"].is_number_integer() || json["offset"].get<int64_t>() < 0) {
    return bad;
  }
  return json["offset"].get<int64_t>();
}

}  // namespace cohort::track
