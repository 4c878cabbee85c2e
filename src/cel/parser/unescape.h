// Decoding of CEL string and bytes literal bodies (cel-go `parser/unescape.go` rules, rewritten).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace draplane::cel::internal {

// Decodes the escape sequences of a non-raw literal body (without its quotes). In strings,
// `\xHH` and octal escapes denote code points (UTF-8 encoded); in bytes they denote octets and
// `\u` / `\U` are not allowed. Returns false and sets `*error` on an invalid escape or code
// point.
bool Unescape(std::string_view body, bool is_bytes, std::string* out, std::string* error);

}  // namespace draplane::cel::internal
