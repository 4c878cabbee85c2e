#include "server/handlers/output.h"

#include "api/codec/json.h"
#include "api/codec/yaml.h"

namespace draplane::server::handlers {
namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// Parameters of one media range ("a=b;c=d").
std::vector<std::pair<std::string, std::string>> Params(std::string_view range) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t semi = range.find(';');
  while (semi != std::string_view::npos) {
    range = range.substr(semi + 1);
    semi = range.find(';');
    std::string_view param = range.substr(0, semi);
    size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace_back(Trim(param.substr(0, eq)), Trim(param.substr(eq + 1)));
  }
  return out;
}

std::string Param(const std::vector<std::pair<std::string, std::string>>& params,
                  std::string_view name) {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return "";
}

boost::json::object PartialMetadata(const JsonObject& obj, const std::string& version) {
  boost::json::object out;
  out["kind"] = "PartialObjectMetadata";
  out["apiVersion"] = "meta.k8s.io/" + version;
  if (const JsonObject* meta = FindObject(obj, "metadata")) {
    out["metadata"] = *meta;
  } else {
    out["metadata"] = boost::json::object();
  }
  return out;
}

std::string Serialize(const boost::json::value& v, OutputKind kind) {
  if (kind == OutputKind::kYaml) return api::codec::WriteYaml(v);
  std::string out;
  api::codec::AppendJson(v, api::codec::JsonWriteOptions{.indent = 0}, &out);
  return out;
}

}  // namespace

std::string OutputFormat::ContentType() const {
  switch (kind) {
    case OutputKind::kJson:
      return "application/json";
    case OutputKind::kYaml:
      return "application/yaml";
    case OutputKind::kTable:
      return "application/json;as=Table;v=" + meta_version + ";g=meta.k8s.io";
    case OutputKind::kPartialMetadata:
      return "application/json;as=PartialObjectMetadata;v=" + meta_version + ";g=meta.k8s.io";
  }
  return "application/json";
}

std::optional<OutputFormat> NegotiateOutput(std::string_view accept,
                                            std::string_view include_object) {
  OutputFormat format;
  if (!include_object.empty()) format.include_object = std::string(include_object);
  if (Trim(accept).empty()) return format;
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::string type = Trim(range.substr(0, range.find(';')));
    auto params = Params(range);
    std::string as = Param(params, "as");
    if (type == "application/json" && !as.empty()) {
      std::string g = Param(params, "g");
      std::string v = Param(params, "v");
      if (g != "meta.k8s.io" || (v != "v1" && v != "v1beta1")) continue;
      if (as == "Table") {
        format.kind = OutputKind::kTable;
      } else if (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
        format.kind = OutputKind::kPartialMetadata;
      } else {
        continue;
      }
      format.meta_version = v;
      return format;
    }
    if (type == "application/json" || type == "*/*" || type == "application/*") {
      format.kind = OutputKind::kJson;
      return format;
    }
    if (type == "application/yaml") {
      format.kind = OutputKind::kYaml;
      return format;
    }
  }
  return std::nullopt;
}

boost::json::object RenderTable(const ResourceInfo& resource,
                                const std::vector<const JsonObject*>& objects,
                                const OutputFormat& format, std::string_view resource_version,
                                Timestamp now) {
  boost::json::object table;
  table["kind"] = "Table";
  table["apiVersion"] = "meta.k8s.io/" + format.meta_version;
  boost::json::object meta;
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  table["metadata"] = std::move(meta);
  boost::json::array columns;
  for (const TableColumn& c : resource.strategy->TableColumns()) {
    boost::json::object col;
    col["name"] = c.name;
    col["type"] = c.type;
    col["format"] = c.format;
    col["description"] = c.description;
    col["priority"] = c.priority;
    columns.push_back(std::move(col));
  }
  table["columnDefinitions"] = std::move(columns);
  boost::json::array rows;
  for (const JsonObject* obj : objects) {
    boost::json::object row;
    row["cells"] = resource.strategy->TableCells(*obj, now);
    if (format.include_object == "Object") {
      row["object"] = *obj;
    } else if (format.include_object != "None") {
      row["object"] = PartialMetadata(*obj, format.meta_version);
    }
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

StatusOr<std::string> RenderObject(const ResourceInfo& resource, const std::string& served,
                                   const OutputFormat& format, Timestamp now) {
  if (format.kind == OutputKind::kJson) return served;
  StatusOr<JsonObject> obj = ParseObject(served);
  if (!obj.ok()) return obj.status();
  switch (format.kind) {
    case OutputKind::kYaml:
      return api::codec::WriteYaml(*obj);
    case OutputKind::kTable:
      return Serialize(
          RenderTable(resource, {&*obj}, format, MetaString(*obj, "resourceVersion"), now),
          OutputKind::kJson);
    case OutputKind::kPartialMetadata:
      return Serialize(PartialMetadata(*obj, format.meta_version), OutputKind::kJson);
    case OutputKind::kJson:
      break;
  }
  return served;
}

StatusOr<std::string> RenderList(const ResourceInfo& resource, const ListPage& page,
                                 const OutputFormat& format, Timestamp now) {
  if (format.kind == OutputKind::kJson) {
    // Concatenated without re-parsing the items.
    std::string out = "{\"kind\":\"" + resource.kind + "List\",\"apiVersion\":\"" +
                      resource.ApiVersion() + "\",\"metadata\":{\"resourceVersion\":\"" +
                      page.resource_version + "\"";
    if (!page.continue_token.empty()) {
      out += ",\"continue\":" + boost::json::serialize(boost::json::value(page.continue_token));
    }
    if (page.remaining_item_count) {
      out += ",\"remainingItemCount\":" + std::to_string(*page.remaining_item_count);
    }
    out += "},\"items\":[";
    size_t total = out.size() + 2;
    for (const std::string& item : page.items) total += item.size() + 1;
    out.reserve(total);
    for (size_t i = 0; i < page.items.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += page.items[i];
    }
    out += "]}";
    return out;
  }
  std::vector<JsonObject> parsed;
  parsed.reserve(page.items.size());
  for (const std::string& item : page.items) {
    StatusOr<JsonObject> obj = ParseObject(item);
    if (!obj.ok()) return obj.status();
    parsed.push_back(std::move(obj).value());
  }
  boost::json::object list_meta;
  list_meta["resourceVersion"] = page.resource_version;
  if (!page.continue_token.empty()) list_meta["continue"] = page.continue_token;
  if (page.remaining_item_count) list_meta["remainingItemCount"] = *page.remaining_item_count;
  if (format.kind == OutputKind::kTable) {
    std::vector<const JsonObject*> pointers;
    for (const JsonObject& o : parsed) pointers.push_back(&o);
    boost::json::object table = RenderTable(resource, pointers, format, page.resource_version, now);
    table["metadata"] = std::move(list_meta);
    return Serialize(table, OutputKind::kJson);
  }
  boost::json::object list;
  if (format.kind == OutputKind::kPartialMetadata) {
    list["kind"] = "PartialObjectMetadataList";
    list["apiVersion"] = "meta.k8s.io/" + format.meta_version;
  } else {
    list["kind"] = resource.kind + "List";
    list["apiVersion"] = resource.ApiVersion();
  }
  list["metadata"] = std::move(list_meta);
  boost::json::array items;
  for (JsonObject& o : parsed) {
    if (format.kind == OutputKind::kPartialMetadata) {
      items.push_back(PartialMetadata(o, format.meta_version));
    } else {
      items.push_back(std::move(o));
    }
  }
  list["items"] = std::move(items);
  return Serialize(list, format.kind);
}

}  // namespace draplane::server::handlers
