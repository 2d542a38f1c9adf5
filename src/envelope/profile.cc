#include "evident/profile.h"

#include <simdjson.h>

#include "json/files.h"
#include "json/pointer.h"

namespace evident {

Result<Profile> LoadProfileFile(const std::string& path, Env* env) {
  EVIDENT_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(EnvOr(env), path, kProfileBytesMax));
  Result<Profile> profile = Profile::FromJson(text);
  if (!profile.ok()) return Status::InvalidArgument(path + ": " + profile.status().message());
  return profile;
}

bool IsValidJsonPointer(std::string_view pointer) { return json::IsPointer(pointer); }

std::string Profile::PointerFor(std::string_view attribute) const {
  for (const auto& [mapped, pointer] : attribute_pointers) {
    if (mapped == attribute) return pointer;
  }
  return {};
}

Profile Profile::WithSchemaVersionAt(std::string pointer) const {
  return WithAttributeAt("schemaversion", std::move(pointer));
}

Profile Profile::WithAttributeAt(std::string_view attribute_name, std::string pointer) const {
  Profile copy = *this;
  // Written against the canonical envelope: "/data/..." is inside this layout's payload.
  constexpr std::string_view kData = "/data";
  if (pointer.rfind(kData, 0) == 0 &&
      (pointer.size() == kData.size() || pointer[kData.size()] == '/')) {
    pointer = data_pointer + pointer.substr(kData.size());
  }
  for (auto& [attribute, existing] : copy.attribute_pointers) {
    if (attribute == attribute_name) {
      existing = std::move(pointer);
      return copy;
    }
  }
  copy.attribute_pointers.emplace_back(std::string(attribute_name), std::move(pointer));
  return copy;
}

Profile Profile::CloudEvents() {
  Profile p;
  p.name = "cloudevents";
  return p;
}

Profile Profile::Flat() {
  Profile p;
  p.name = "flat";
  p.passthrough = false;
  p.data_pointer = "/payload";
  p.attribute_pointers = {
      {"id", "/event.id"},
      {"type", "/event.name"},
      {"source", "/producer.id"},
      {"schemaversion", "/event.schema_version"},
      {"subject", "/aggregate.id"},
      {"subjectversion", "/aggregate.version"},
      {"time", "/timestamp"},
      {"correlationid", "/correlation_id"},
      {"causationid", "/causation_id"},
      {"traceid", "/trace_id"},
      {"spanid", "/span_id"},
  };
  p.constants = {{"specversion", "1.0"}};
  return p;
}

Profile Profile::Contract() {
  Profile p;
  p.name = "contract";
  p.passthrough = false;
  p.attribute_pointers = {
      {"id", "/id"},
      {"source", "/source"},
      {"type", "/type"},
      {"subject", "/subject"},
      {"contractversion", "/contractVersion"},
      {"time", "/occurredAt"},
      {"schemaversion", "/data/schemaVersion"},
  };
  p.constants = {{"specversion", "1.0"}};
  p.required = {"subject", "contractversion", "schemaversion"};
  return p;
}

Result<Profile> Profile::Named(std::string_view name) {
  if (name == "cloudevents") return CloudEvents();
  if (name == "flat") return Flat();
  if (name == "contract") return Contract();
  return Status::NotFound("unknown envelope profile '" + std::string(name) +
                          "' (built in: cloudevents, flat, contract)");
}

Result<Profile> Profile::FromJson(std::string_view json_text) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json_text.data(), json_text.size()).get(root) != simdjson::SUCCESS ||
      !root.is_object()) {
    return Status::InvalidArgument("a profile must be a JSON object");
  }
  Profile p;
  p.passthrough = false;
  for (auto field : root.get_object()) {
    const std::string_view key = field.key;
    if (key == "name") {
      std::string_view name;
      if (field.value.get(name)) return Status::InvalidArgument("profile name must be a string");
      p.name = std::string(name);
    } else if (key == "data") {
      std::string_view pointer;
      if (field.value.get(pointer) || !IsValidJsonPointer(pointer)) {
        return Status::InvalidArgument("profile 'data' must be a JSON Pointer");
      }
      p.data_pointer = std::string(pointer);
    } else if (key == "passthrough") {
      if (field.value.get(p.passthrough)) {
        return Status::InvalidArgument("profile 'passthrough' must be a boolean");
      }
    } else if (key == "required") {
      simdjson::dom::array names;
      if (field.value.get(names)) {
        return Status::InvalidArgument("profile 'required' must be an array of attribute names");
      }
      for (auto name : names) {
        std::string_view text;
        if (name.get(text)) {
          return Status::InvalidArgument("profile 'required' must hold attribute names");
        }
        p.required.emplace_back(text);
      }
    } else if (key == "attributes" || key == "constants") {
      simdjson::dom::object members;
      if (field.value.get(members)) {
        return Status::InvalidArgument("profile '" + std::string(key) + "' must be an object");
      }
      for (auto member : members) {
        std::string_view value;
        if (member.value.get(value)) {
          return Status::InvalidArgument("profile '" + std::string(key) + "." +
                                         std::string(member.key) + "' must be a string");
        }
        if (key == "attributes") {
          if (!IsValidJsonPointer(value)) {
            return Status::InvalidArgument("profile attribute '" + std::string(member.key) +
                                           "' is not a JSON Pointer: " + std::string(value));
          }
          p.attribute_pointers.emplace_back(std::string(member.key), std::string(value));
        } else {
          p.constants.emplace_back(std::string(member.key), std::string(value));
        }
      }
    } else {
      return Status::InvalidArgument("unknown profile member '" + std::string(key) + "'");
    }
  }
  if (p.name.empty()) return Status::InvalidArgument("a profile needs a name");
  return p;
}

}  // namespace evident
