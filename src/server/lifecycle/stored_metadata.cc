#include "server/lifecycle/stored_metadata.h"

#include <boost/json/basic_parser_impl.hpp>

#include "api/codec/limits.h"

namespace draplane::server::lifecycle {
namespace {

// The SAX handler: fills a StoredMetadata, and ends the parse (extra_data, `finished`) where
// `metadata` closes.
class MetadataReader {
 public:
  static constexpr size_t max_object_size = boost::json::object::max_size();
  static constexpr size_t max_array_size = boost::json::array::max_size();
  static constexpr size_t max_key_size = boost::json::string::max_size();
  static constexpr size_t max_string_size = boost::json::string::max_size();

  explicit MetadataReader(StoredMetadata* out) : out_(out) {}
  bool finished() const { return finished_; }

  bool on_document_begin(boost::json::error_code&) { return true; }
  bool on_document_end(boost::json::error_code&) { return true; }
  bool on_object_begin(boost::json::error_code& ec) { return Open(false, ec); }
  bool on_object_end(size_t, boost::json::error_code& ec) { return Close(ec); }
  bool on_array_begin(boost::json::error_code& ec) { return Open(true, ec); }
  bool on_array_end(size_t, boost::json::error_code& ec) { return Close(ec); }
  bool on_key_part(boost::json::string_view s, size_t, boost::json::error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, size_t, boost::json::error_code&) {
    std::string& key = depth() == 1 ? top_key_ : depth() == 2 ? meta_key_ : owner_key_;
    key.assign(part_).append(s.data(), s.size());
    part_.clear();
    return true;
  }
  bool on_string_part(boost::json::string_view s, size_t, boost::json::error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(boost::json::string_view s, size_t, boost::json::error_code&) {
    if (in_metadata_) {
      part_.append(s.data(), s.size());
      String(std::move(part_));
    }
    part_.clear();
    return true;
  }
  bool on_number_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_int64(int64_t, boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_uint64(uint64_t, boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_double(double, boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_bool(bool value, boost::json::error_code&) {
    if (in_metadata_ && depth() == 4 && !is_array_[3] && is_array_[2] &&
        meta_key_ == "ownerReferences" && owner_key_ == "blockOwnerDeletion") {
      out_->owners.back().block_owner_deletion = value;
    }
    return true;
  }
  bool on_null(boost::json::error_code&) { return true; }
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

 private:
  size_t depth() const { return is_array_.size(); }

  bool Open(bool array, boost::json::error_code& ec) {
    if (depth() == 0 && array) {
      ec = boost::json::error::syntax;  // not an object
      return false;
    }
    is_array_.push_back(array);
    if (depth() == 2 && !array && top_key_ == "metadata") in_metadata_ = true;
    if (in_metadata_ && depth() == 4 && !array && is_array_[2] && meta_key_ == "ownerReferences") {
      out_->owners.emplace_back();
    }
    return true;
  }

  bool Close(boost::json::error_code& ec) {
    is_array_.pop_back();
    if (in_metadata_ && depth() == 1) {
      finished_ = true;  // nothing after metadata matters
      ec = boost::json::error::extra_data;
      return false;
    }
    return true;
  }

  void String(std::string value) {
    if (depth() == 2 && !is_array_[1]) {
      if (meta_key_ == "uid") out_->uid = std::move(value);
      if (meta_key_ == "creationTimestamp") out_->creation_timestamp = std::move(value);
      if (meta_key_ == "deletionTimestamp") out_->deletion_timestamp = std::move(value);
    } else if (depth() == 3 && is_array_[2] && meta_key_ == "finalizers") {
      out_->finalizers.push_back(std::move(value));
    } else if (depth() == 4 && !is_array_[3] && is_array_[2] && meta_key_ == "ownerReferences") {
      OwnerRef& owner = out_->owners.back();
      if (owner_key_ == "apiVersion") owner.api_version = std::move(value);
      if (owner_key_ == "kind") owner.kind = std::move(value);
      if (owner_key_ == "name") owner.name = std::move(value);
      if (owner_key_ == "uid") owner.uid = std::move(value);
    }
  }

  StoredMetadata* out_;
  std::vector<bool> is_array_;  // the open containers, outermost first
  std::string top_key_, meta_key_, owner_key_;
  std::string part_;
  bool in_metadata_ = false;
  bool finished_ = false;
};

}  // namespace

bool ReadStoredMetadata(std::string_view value, StoredMetadata* out) {
  boost::json::parse_options options;
  options.max_depth = api::codec::ParseLimits{}.max_depth;
  boost::json::basic_parser<MetadataReader> parser(options, out);
  boost::json::error_code error;
  parser.write_some(false, value.data(), value.size(), error);
  return !error || parser.handler().finished();
}

}  // namespace draplane::server::lifecycle
