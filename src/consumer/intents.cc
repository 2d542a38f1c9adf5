#include "consumer/intents.h"

#include <algorithm>

#include "json/writer.h"

namespace evident {
namespace {

simdjson::simdjson_result<simdjson::dom::element> PayloadAt(const EventView& event,
                                                            std::string_view pointer) {
  if (!event.data) return simdjson::NO_SUCH_FIELD;
  return event.data->at_pointer(pointer);
}

// A scalar payload member as key or condition text: a string as itself, a number or boolean as
// its JSON text; nullopt for an absent member, null, an object or an array.
std::optional<std::string> ScalarText(const EventView& event, std::string_view pointer) {
  simdjson::dom::element value;
  if (PayloadAt(event, pointer).get(value) != simdjson::SUCCESS) return std::nullopt;
  std::string_view text;
  if (value.get(text) == simdjson::SUCCESS) return std::string(text);
  if (value.is_null() || value.is_object() || value.is_array()) return std::nullopt;
  return simdjson::to_string(value);
}

bool Triggers(const std::vector<std::string>& on, const std::vector<PayloadCondition>& when,
              const EventView& event) {
  return std::find(on.begin(), on.end(), event.type) != on.end() && ConditionsHold(when, event);
}

}  // namespace

std::optional<std::string> ExpandKey(const KeyTemplate& key, const KeyInputs& in,
                                     std::string& why) {
  std::string out;
  for (const auto& [part, text] : key.parts) {
    switch (part) {
      case KeyTemplate::Part::kLiteral:
        out += text;
        break;
      case KeyTemplate::Part::kSubject:
        if (in.subject.empty()) {
          why = "the event names no subject for {subject}";
          return std::nullopt;
        }
        out += in.subject;
        break;
      case KeyTemplate::Part::kSubjectVersion:
      case KeyTemplate::Part::kPreviousVersion:
        if (!in.subject_version) {
          why = "the event carries no subject version for the key";
          return std::nullopt;
        }
        out += std::to_string(*in.subject_version -
                              (part == KeyTemplate::Part::kPreviousVersion ? 1 : 0));
        break;
      case KeyTemplate::Part::kSource:
        out += in.event->source;
        break;
      case KeyTemplate::Part::kId:
        out += in.event->id;
        break;
      case KeyTemplate::Part::kType:
        out += in.event->type;
        break;
      case KeyTemplate::Part::kConsumer:
        out += in.consumer;
        break;
      case KeyTemplate::Part::kData: {
        const std::optional<std::string> value = ScalarText(*in.event, text);
        if (!value || value->empty()) {  // an empty member would give every such event one key
          why = "the payload has no non-empty string, number or boolean at " + text + " for {" +
                text + "}";
          return std::nullopt;
        }
        out += *value;
        break;
      }
    }
    if (out.size() > kIntentKeyBytesMax) {
      why = "the key would be longer than " + std::to_string(kIntentKeyBytesMax) + " bytes";
      return std::nullopt;
    }
  }
  // The key travels as an HTTP header: a control character would end or split it.
  if (std::any_of(out.begin(), out.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7F;
      })) {
    why = "the key would hold a control character";
    return std::nullopt;
  }
  return out;
}

bool ConditionsHold(const std::vector<PayloadCondition>& when, const EventView& event) {
  return std::all_of(when.begin(), when.end(), [&](const PayloadCondition& c) {
    const std::optional<std::string> value = ScalarText(event, c.pointer);
    return value && *value == c.value;
  });
}

std::string_view TracestateOf(const EventView& event) {
  std::string_view text;
  if (!event.root.is_object() || event.root["tracestate"].get(text) != simdjson::SUCCESS ||
      text.size() > kTracestateBytesMax) {
    return {};
  }
  const bool printable =
      std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  return printable ? text : std::string_view();
}

std::string CloudEventJson(const EventView& event) {
  const Profile* p = event.profile;
  if (p == nullptr || (p->passthrough && p->attribute_pointers.empty() && p->constants.empty() &&
                       p->data_pointer == "/data")) {
    return std::string(event.raw);
  }
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("specversion", "1.0").Field("id", event.id);
  w.Field("source", event.source).Field("type", event.type);
  const auto optional_text = [&](std::string_view name, std::optional<std::string_view> v) {
    if (v) w.Field(name, *v);
  };
  optional_text("subject", event.subject);
  optional_text("time", event.time);
  optional_text("datacontenttype", event.datacontenttype);
  optional_text("dataschema", event.dataschema);
  optional_text("traceparent", event.traceparent);  // the distributed-tracing extension
  if (event.traceparent && !TracestateOf(event).empty()) w.Field("tracestate", TracestateOf(event));
  if (event.schemaversion) w.Key("schemaversion").Int(*event.schemaversion);
  if (event.subjectversion) w.Key("subjectversion").Int(*event.subjectversion);
  if (event.data) w.Key("data").Raw(simdjson::to_string(*event.data));
  optional_text("data_base64", event.data_base64);
  w.EndObject();
  return out;
}

std::string UnresolvedKey(const ConsumerConfig& consumer, const KeyInputs& in) {
  std::string why;
  for (const EffectConfig& effect : consumer.effects) {
    if (!Triggers(effect.on, effect.when, *in.event)) continue;
    if (!ExpandKey(effect.key, in, why)) {
      return "effect " + effect.name + " (key " + effect.key.text + "): " + why;
    }
  }
  for (const CompensationConfig& compensation : consumer.compensations) {
    if (!Triggers(compensation.on, compensation.when, *in.event)) continue;
    if (!ExpandKey(compensation.key, in, why)) {
      return "compensation " + compensation.key.text + ": " + why;
    }
    const EffectConfig* with = compensation.compensate_with.empty()
                                   ? nullptr
                                   : consumer.FindEffect(compensation.compensate_with);
    if (with != nullptr && !ExpandKey(with->key, in, why)) {
      return "effect " + with->name + " (key " + with->key.text + "), which compensation " +
             compensation.key.text + " would intend: " + why;
    }
  }
  return {};
}

}  // namespace evident
