#include "cel/internal/utf8.h"

namespace draplane::cel::internal {

size_t ValidUtf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  unsigned char c = b[0];
  if (c < 0x80) return 1;
  size_t len;
  char32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((b[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b[i] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = ValidUtf8SequenceLength(s.substr(i));
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void AppendUtf8(std::string* out, char32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

char32_t DecodeUtf8(std::string_view s, size_t* len) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  unsigned char c = b[0];
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  if (c < 0xE0) {
    *len = 2;
    return (static_cast<char32_t>(c & 0x1F) << 6) | (b[1] & 0x3F);
  }
  if (c < 0xF0) {
    *len = 3;
    return (static_cast<char32_t>(c & 0x0F) << 12) | (static_cast<char32_t>(b[1] & 0x3F) << 6) |
           (b[2] & 0x3F);
  }
  *len = 4;
  return (static_cast<char32_t>(c & 0x07) << 18) | (static_cast<char32_t>(b[1] & 0x3F) << 12) |
         (static_cast<char32_t>(b[2] & 0x3F) << 6) | (b[3] & 0x3F);
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

size_t ByteOffsetOfCodePoint(std::string_view s, size_t index) {
  size_t cp = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cp == index) return i;
      ++cp;
    }
  }
  return s.size();
}

}  // namespace draplane::cel::internal
