#include "store/object_meta.h"

#include <boost/json.hpp>
#include <ctime>

#include "common/status_macros.h"

namespace draplane::store {
namespace {

StatusOr<boost::json::value> ParseObject(std::string_view json) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(json, ec);
  if (ec) return InvalidArgumentError("object is not valid JSON: " + ec.message());
  if (!value.is_object()) return InvalidArgumentError("object is not a JSON object");
  const boost::json::value* metadata = value.get_object().if_contains("metadata");
  if (metadata != nullptr && !metadata->is_object()) {
    return InvalidArgumentError("metadata is not a JSON object");
  }
  return value;
}

boost::json::object& Metadata(boost::json::value& value) {
  boost::json::value& metadata = value.get_object()["metadata"];
  if (!metadata.is_object()) metadata.emplace_object();
  return metadata.get_object();
}

}  // namespace

StatusOr<std::string> SetResourceVersion(std::string_view json, Revision revision) {
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value value, ParseObject(json));
  Metadata(value)["resourceVersion"] = std::to_string(revision);
  return boost::json::serialize(value);
}

StatusOr<std::string> WithResourceVersion(const Object& object) {
  return SetResourceVersion(object.value, object.revision);
}

std::string FormatTimestamp(Timestamp time) {
  const std::time_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

StatusOr<std::string> PrepareForCreate(std::string_view json, const Clock& clock, Random& random,
                                       const CreateMetadataOptions& options) {
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value value, ParseObject(json));
  boost::json::object& metadata = Metadata(value);
  metadata["uid"] = random.NewUuid();
  metadata["creationTimestamp"] = FormatTimestamp(clock.Now());
  if (options.set_generation) metadata["generation"] = 1;
  metadata.erase("resourceVersion");
  return boost::json::serialize(value);
}

StatusOr<std::string> PrepareForUpdate(std::string_view stored, std::string_view updated,
                                       const UpdateMetadataOptions& options) {
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value old_value, ParseObject(stored));
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value new_value, ParseObject(updated));
  const boost::json::object& old_metadata = Metadata(old_value);
  boost::json::object& metadata = Metadata(new_value);
  for (std::string_view field : {"uid", "creationTimestamp", "generation"}) {
    if (const boost::json::value* kept = old_metadata.if_contains(field)) {
      metadata[field] = *kept;
    } else {
      metadata.erase(field);
    }
  }
  if (options.bump_generation) {
    const boost::json::value* generation = old_metadata.if_contains("generation");
    const int64_t old =
        generation != nullptr && generation->is_int64() ? generation->get_int64() : 0;
    metadata["generation"] = old + 1;
  }
  metadata.erase("resourceVersion");
  return boost::json::serialize(new_value);
}

}  // namespace draplane::store
