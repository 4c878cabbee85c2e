// Fuzzes the JSON side of the object model: arbitrary bytes -> ParseJsonStream -> DecodeObject ->
// EncodeObject, with the round-trip invariants of decode_fuzz_support.h on every document.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/codec/json.h"
#include "decode_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto docs = draplane::api::codec::ParseJsonStream(text);
  if (!docs.ok()) return 0;
  for (const draplane::api::codec::JsonDocument& doc : *docs) {
    draplane::fuzz::CheckDocument(doc.value);
  }
  return 0;
}
