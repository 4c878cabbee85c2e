#include "store/internal/keys.h"

#include <array>
#include <boost/json.hpp>

#include "common/check.h"
#include "common/status_macros.h"

namespace draplane::store::internal {
namespace {

// A token's revision that stands for the newest one (upstream's continue token with rv -1).
constexpr Revision kNewestRevision = -1;

constexpr std::string_view kStdAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

bool IsResourceChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

std::string Encode(std::string_view bytes, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(alphabet[(n >> 6) & 63]);
    out.push_back(alphabet[n & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    if (rest == 2) out.push_back(alphabet[(n >> 6) & 63]);
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

StatusOr<std::string> Decode(std::string_view text, std::string_view alphabet) {
  std::array<int8_t, 256> table;
  table.fill(-1);
  for (size_t i = 0; i < alphabet.size(); ++i) table[static_cast<uint8_t>(alphabet[i])] = i;
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return InvalidArgumentError("malformed base64: bad length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const int8_t v = table[static_cast<uint8_t>(c)];
    if (v < 0) return InvalidArgumentError("malformed base64: unexpected character");
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

Status ValidateResource(std::string_view resource) {
  const size_t slash = resource.find('/');
  bool ok = slash != std::string_view::npos && slash > 0 && slash + 1 < resource.size() &&
            resource.find('/', slash + 1) == std::string_view::npos;
  for (size_t i = 0; ok && i < resource.size(); ++i) {
    ok = i == slash || IsResourceChar(resource[i]);
  }
  if (!ok) {
    return InvalidArgumentError("invalid resource \"" + std::string(resource) +
                                "\": want \"<group>/<plural>\" in lower case, e.g. \"core/pods\"");
  }
  return Status::Ok();
}

Status ValidateNamespace(std::string_view ns) {
  if (ns.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return InvalidArgumentError("invalid namespace \"" + std::string(ns) +
                                "\": may not contain '/' or NUL");
  }
  return Status::Ok();
}

Status ValidateKey(const Key& key) {
  DRAPLANE_RETURN_IF_ERROR(ValidateResource(key.resource));
  DRAPLANE_RETURN_IF_ERROR(ValidateNamespace(key.ns));
  if (key.name.empty()) return InvalidArgumentError("invalid key: the name is empty");
  if (key.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    return InvalidArgumentError("invalid name \"" + key.name + "\": may not contain '/' or NUL");
  }
  return Status::Ok();
}

std::string EncodeKey(const Key& key) {
  std::string out;
  out.reserve(key.resource.size() + key.ns.size() + key.name.size() + 2);
  out.append(key.resource).push_back('/');
  out.append(key.ns).push_back('/');
  out.append(key.name);
  return out;
}

StatusOr<Key> DecodeKey(std::string_view encoded) {
  // resource = "<group>/<plural>", so the namespace starts after the second '/'.
  const size_t first = encoded.find('/');
  const size_t second = first == std::string_view::npos ? first : encoded.find('/', first + 1);
  const size_t third = second == std::string_view::npos ? second : encoded.find('/', second + 1);
  if (third == std::string_view::npos) {
    return InvalidArgumentError("not a store key: \"" + std::string(encoded) + "\"");
  }
  Key key{std::string(encoded.substr(0, second)),
          std::string(encoded.substr(second + 1, third - second - 1)),
          std::string(encoded.substr(third + 1))};
  DRAPLANE_RETURN_IF_ERROR(ValidateKey(key));
  return key;
}

std::string ListPrefix(std::string_view resource, std::string_view ns) {
  std::string prefix(resource);
  prefix.push_back('/');
  if (!ns.empty()) {
    prefix.append(ns);
    prefix.push_back('/');
  }
  return prefix;
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  DRAPLANE_CHECK_MSG(false, "PrefixEnd of an empty or all-0xff prefix");
}

std::string EncodeContinueToken(Revision revision, std::string_view start_key) {
  boost::json::object token;
  token["v"] = 1;
  token["rev"] = revision;
  token["start"] = start_key;
  return Encode(boost::json::serialize(token), kUrlAlphabet, /*pad=*/false);
}

StatusOr<ContinuePosition> DecodeContinueToken(std::string_view token, std::string_view prefix) {
  const Status invalid = InvalidArgumentError("invalid continue token");
  StatusOr<std::string> json = Decode(token, kUrlAlphabet);
  if (!json.ok()) return invalid;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(*json, ec);
  if (ec || !value.is_object()) return invalid;
  const boost::json::object& object = value.get_object();
  const boost::json::value* version = object.if_contains("v");
  const boost::json::value* revision = object.if_contains("rev");
  const boost::json::value* start = object.if_contains("start");
  if (version == nullptr || !version->is_int64() || version->get_int64() != 1 ||
      revision == nullptr || !revision->is_int64() ||
      (revision->get_int64() <= 0 && revision->get_int64() != kNewestRevision) ||
      start == nullptr || !start->is_string()) {
    return invalid;
  }
  ContinuePosition position{revision->get_int64() == kNewestRevision ? 0 : revision->get_int64(),
                            std::string(start->get_string())};
  if (position.start_key.size() <= prefix.size() ||
      std::string_view(position.start_key).substr(0, prefix.size()) != prefix) {
    return InvalidArgumentError("invalid continue token: it belongs to another list");
  }
  return position;
}

std::string Base64Encode(std::string_view bytes) { return Encode(bytes, kStdAlphabet, true); }

StatusOr<std::string> Base64Decode(std::string_view text) { return Decode(text, kStdAlphabet); }

}  // namespace draplane::store::internal

namespace draplane::store {

std::string ContinueTokenAtNewest(std::string_view token) {
  StatusOr<internal::ContinuePosition> position = internal::DecodeContinueToken(token, "");
  if (!position.ok()) return "";
  return internal::EncodeContinueToken(/*the newest revision*/ -1, position->start_key);
}

}  // namespace draplane::store
