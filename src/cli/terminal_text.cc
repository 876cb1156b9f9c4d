// Escaping control characters for the terminal.
#include "cli/terminal_text.h"

#include <cstdio>

namespace cohort::cli {
namespace {

// The length of the UTF-8 character at text[i] (1-4), or 0 when the bytes
// there are not one (a stray continuation byte, a truncated or overlong
// sequence, a surrogate).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char first = byte(i);
  size_t n = first < 0x80           ? 1
             : (first >> 5) == 0x6  ? 2
             : (first >> 4) == 0xe  ? 3
             : (first >> 3) == 0x1e ? 4
                                    : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  if (n == 2 && first < 0xc2) return 0;                          // overlong
  if (n == 3 && first == 0xe0 && byte(i + 1) < 0xa0) return 0;   // overlong
  if (n == 3 && first == 0xed && byte(i + 1) >= 0xa0) return 0;  // surrogate
  if (n == 4 && first == 0xf0 && byte(i + 1) < 0x90) return 0;   // overlong
  if (n == 4 && (first > 0xf4 || (first == 0xf4 && byte(i + 1) >= 0x90))) return 0;
  return n;
}

std::string Hex(const char* format, unsigned value) {
  char text[8];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// The next piece of `text` at *i as it is shown; advances *i.
std::string NextPiece(std::string_view text, size_t* i) {
  const unsigned char c = static_cast<unsigned char>(text[*i]);
  size_t n = Utf8Length(text, *i);
  if (n == 0) {  // not UTF-8: the byte
    *i += 1;
    return Hex("\\x%02x", c);
  }
  *i += n;
  if (n == 1) {
    if (c == '\n') return "\\n";
    if (c == '\r') return "\\r";
    if (c == '\t') return "\\t";
    if (c < 0x20 || c == 0x7f) return Hex("\\x%02x", c);
    return std::string(1, static_cast<char>(c));
  }
  if (n == 2 && c == 0xc2 && static_cast<unsigned char>(text[*i - 1]) < 0xa0) {
    return Hex("\\u%04x", static_cast<unsigned char>(text[*i - 1]));  // C1
  }
  return std::string(text.substr(*i - n, n));
}

}  // namespace

std::string TerminalText(std::string_view text, size_t max_bytes) {
  std::string out;
  std::string cut;  // `out` as it ends when cut, once that is known
  const size_t keep = max_bytes >= 3 ? max_bytes - 3 : 0;
  for (size_t i = 0; i < text.size();) {
    std::string piece = NextPiece(text, &i);
    if (out.size() + piece.size() > keep && cut.empty()) cut = out + "...";
    out += piece;
    if (out.size() > max_bytes) return cut;
  }
  return out;
}

std::string TerminalJson(std::string_view json) {
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(json[i]);
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && i + 1 < json.size() &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(json[i + 1]) < 0xa0) {
      out += Hex("\\u%04x", static_cast<unsigned char>(json[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace cohort::cli
