// UTF-8 helpers shared by the CEL parser, runtime and libraries (private to the cel module).
//
// CEL strings are sequences of Unicode code points stored as UTF-8; sizes and string indices
// count code points (cel-spec `doc/langdef.md`, "String and bytes values").
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace draplane::cel::internal {

// The byte length of the valid UTF-8 sequence that starts `s`, or 0 when `s` is empty or does
// not start with a valid sequence (overlong forms, surrogates and values above U+10FFFF are
// invalid).
size_t ValidUtf8SequenceLength(std::string_view s);

bool IsValidUtf8(std::string_view s);

// Appends the UTF-8 encoding of `cp` (precondition: a valid scalar value).
void AppendUtf8(std::string* out, char32_t cp);

// Decodes the code point starting `s` (precondition: `s` is non-empty valid UTF-8) and stores
// its byte length in `*len`.
char32_t DecodeUtf8(std::string_view s, size_t* len);

// Number of code points in valid UTF-8 `s`.
size_t CodePointCount(std::string_view s);

// Byte offset of code point `index` in valid UTF-8 `s`; `s.size()` when `index` equals the
// code-point count. Precondition: index <= CodePointCount(s).
size_t ByteOffsetOfCodePoint(std::string_view s, size_t index);

}  // namespace draplane::cel::internal
