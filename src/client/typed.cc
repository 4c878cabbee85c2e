#include "client/typed.h"

#include <boost/json.hpp>

namespace draplane::client {

Status BindPod(ApiClient& api, std::string_view namespace_, std::string_view name,
               std::string_view uid, std::string_view node) {
  boost::json::object metadata{{"name", name}, {"namespace", namespace_}};
  if (!uid.empty()) metadata["uid"] = uid;
  ApiRequest request;
  request.verb = Verb::kCreate;
  request.resource = &ResourceOf<api::corev1::Pod>();
  request.namespace_ = std::string(namespace_);
  request.name = std::string(name);
  request.subresource = "binding";
  request.body = boost::json::object{
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", std::move(metadata)},
      {"target", boost::json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  return DoWithoutAnswer(api, std::move(request));  // the answer is a Status
}

}  // namespace draplane::client
