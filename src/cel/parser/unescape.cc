#include "cel/parser/unescape.h"

#include "cel/internal/utf8.h"

namespace draplane::cel::internal {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool Unescape(std::string_view body, bool is_bytes, std::string* out, std::string* error) {
  out->clear();
  out->reserve(body.size());
  size_t i = 0;
  while (i < body.size()) {
    char c = body[i];
    if (c != '\\') {
      out->push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= body.size()) {
      *error = "Syntax error: found '\\' at end of string";
      return false;
    }
    char e = body[i + 1];
    i += 2;
    switch (e) {
      case 'a':
        out->push_back('\a');
        continue;
      case 'b':
        out->push_back('\b');
        continue;
      case 'f':
        out->push_back('\f');
        continue;
      case 'n':
        out->push_back('\n');
        continue;
      case 'r':
        out->push_back('\r');
        continue;
      case 't':
        out->push_back('\t');
        continue;
      case 'v':
        out->push_back('\v');
        continue;
      case '\\':
      case '\'':
      case '"':
      case '`':
      case '?':
        out->push_back(e);
        continue;
      default:
        break;
    }
    if (e >= '0' && e <= '3') {
      if (i + 2 > body.size() || body[i] < '0' || body[i] > '7' || body[i + 1] < '0' ||
          body[i + 1] > '7') {
        *error = "Syntax error: invalid octal escape";
        return false;
      }
      unsigned v = static_cast<unsigned>(e - '0') * 64 + static_cast<unsigned>(body[i] - '0') * 8 +
                   static_cast<unsigned>(body[i + 1] - '0');
      i += 2;
      if (is_bytes) {
        out->push_back(static_cast<char>(v));
      } else {
        AppendUtf8(out, v);
      }
      continue;
    }
    int digits = 0;
    if (e == 'x' || e == 'X') {
      digits = 2;
    } else if (e == 'u') {
      digits = 4;
    } else if (e == 'U') {
      digits = 8;
    } else {
      *error = std::string("Syntax error: invalid escape sequence '\\") + e + "'";
      return false;
    }
    if (digits > 2 && is_bytes) {
      *error = "Syntax error: unicode escapes are not allowed in bytes literals";
      return false;
    }
    if (i + digits > body.size()) {
      *error = "Syntax error: truncated escape sequence";
      return false;
    }
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      int h = HexValue(body[i + k]);
      if (h < 0) {
        *error = "Syntax error: invalid hex escape";
        return false;
      }
      v = v * 16 + static_cast<char32_t>(h);
    }
    i += digits;
    if (digits == 2 && is_bytes) {
      out->push_back(static_cast<char>(v));
      continue;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
      *error = "Syntax error: invalid unicode code point";
      return false;
    }
    AppendUtf8(out, v);
  }
  return true;
}

}  // namespace draplane::cel::internal
