// A small strict JSON parser for tests that read what cohort writes (the
// timeline's Chrome-trace files), so no JSON package is needed.
#ifndef COHORT_TESTS_SUPPORT_TRACE_JSON_H_
#define COHORT_TESTS_SUPPORT_TRACE_JSON_H_

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::testing {

// A JSON value, as parsed by JsonParser below.
struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* Find(const std::string& key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  std::string Str(const std::string& key) const {
    const Json* v = Find(key);
    return v != nullptr && v->type == Type::kString ? v->string : "<missing " + key + ">";
  }
  double Num(const std::string& key) const {
    const Json* v = Find(key);
    return v != nullptr && v->type == Type::kNumber ? v->number : -1e300;
  }
};

// Strict RFC 8259 recursive-descent parser, written independently of the
// timeline's own args formatting so the test does not trust the code under test.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : t_(text) {}

  // Parses the whole text; on failure `error` says where.
  bool ParseDocument(Json* out, std::string* error) {
    bool ok = ParseValue(out) && (SkipSpace(), pos_ == t_.size());
    if (!ok) *error = "invalid JSON near offset " + std::to_string(pos_);
    return ok;
  }

 private:
  bool ParseValue(Json* out) {
    SkipSpace();
    if (pos_ >= t_.size()) return false;
    char c = t_[pos_];
    if (c == '{') return ParseObject(out);
    if (c == '[') return ParseArray(out);
    if (c == '"') return (out->type = Json::Type::kString, ParseString(&out->string));
    if (Literal("true")) return (out->type = Json::Type::kBool, out->boolean = true, true);
    if (Literal("false")) return (out->type = Json::Type::kBool, true);
    if (Literal("null")) return true;
    return ParseNumber(out);
  }

  bool ParseObject(Json* out) {
    out->type = Json::Type::kObject;
    ++pos_;
    SkipSpace();
    if (Consume('}')) return true;
    do {
      SkipSpace();
      std::string key;
      Json value;
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (!Consume(':') || !ParseValue(&value)) return false;
      out->fields.emplace_back(std::move(key), std::move(value));
      SkipSpace();
    } while (Consume(','));
    return Consume('}');
  }

  bool ParseArray(Json* out) {
    out->type = Json::Type::kArray;
    ++pos_;
    SkipSpace();
    if (Consume(']')) return true;
    do {
      out->items.emplace_back();
      if (!ParseValue(&out->items.back())) return false;
      SkipSpace();
    } while (Consume(','));
    return Consume(']');
  }

  bool ParseString(std::string* out) {
    if (!Consume('"')) return false;
    while (pos_ < t_.size()) {
      char c = t_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= t_.size()) return false;
      char e = t_[pos_++];
      const std::string simple = "\"\\/bfnrt";
      const std::string decoded = "\"\\/\b\f\n\r\t";
      if (size_t k = simple.find(e); k != std::string::npos) {
        out->push_back(decoded[k]);
      } else if (e == 'u' && pos_ + 4 <= t_.size()) {
        unsigned code = std::stoul(std::string(t_.substr(pos_, 4)), nullptr, 16);
        pos_ += 4;
        AppendUtf8(code, out);  // surrogate pairs are not needed by these tests
      } else {
        return false;
      }
    }
    return false;
  }

  static void AppendUtf8(unsigned code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xc0 | code >> 6));
      out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xe0 | code >> 12));
      out->push_back(static_cast<char>(0x80 | (code >> 6 & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
    }
  }

  bool ParseNumber(Json* out) {
    size_t start = pos_;
    Consume('-');
    if (!Consume('0') && !Digits()) return false;
    if (Consume('.') && !Digits()) return false;
    if (Consume('e') || Consume('E')) {
      if (!Consume('+')) Consume('-');
      if (!Digits()) return false;
    }
    out->type = Json::Type::kNumber;
    out->number = std::strtod(std::string(t_.substr(start, pos_ - start)).c_str(), nullptr);
    return true;
  }

  bool Digits() {
    size_t start = pos_;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool Literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool Consume(char c) {
    if (pos_ < t_.size() && t_[pos_] == c) return ++pos_, true;
    return false;
  }
  void SkipSpace() {
    while (pos_ < t_.size() &&
           (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\t' || t_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses `text` as a trace; fails the test unless it is a JSON array.
inline std::vector<Json> ParseTrace(const std::string& text) {
  Json doc;
  std::string error;
  EXPECT_TRUE(JsonParser(text).ParseDocument(&doc, &error)) << error << "\n"
                                                            << text.substr(0, 2000);
  EXPECT_EQ(doc.type, Json::Type::kArray);
  return doc.items;
}

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_TRACE_JSON_H_
