// JSON's insignificant whitespace (RFC 8259 section 2), shared by the JSON decoder and the List
// streamer of the codec.
#pragma once

namespace draplane::api::codec::internal {

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace draplane::api::codec::internal
