// evident/profile.h — envelope profiles: declarative mappings from an input layout into the
// canonical CloudEvents envelope.
//
// A profile names, for each canonical attribute, the JSON Pointer in the input document that
// holds it, and may set constants (the flat layout has no specversion; it is implied "1.0").
// `cloudevents` reads every attribute from the member of the same name and treats all other
// top-level members as extension attributes. A profile may point any attribute elsewhere, e.g.
// seed 000 keeps the schema version in `/data/schemaVersion`.
//
// Value type: copy freely; immutable once handed to a parser.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "evident/status.h"

namespace evident {

class Env;  // evident/env.h

struct Profile {
  std::string name;
  // Canonical attribute name -> JSON Pointer into the input document. Attributes not listed are
  // read from the top-level member of the same name when `passthrough` is set, else absent.
  std::vector<std::pair<std::string, std::string>> attribute_pointers;
  // Canonical attribute name -> constant string value (used when the input has none).
  std::vector<std::pair<std::string, std::string>> constants;
  // Where the payload lives ("/data" for CloudEvents).
  std::string data_pointer = "/data";
  // Top-level members are attributes/extensions (CloudEvents structured mode). When false,
  // unmapped top-level members are ignored rather than validated as extensions.
  bool passthrough = true;
  // Attributes the layout requires beyond specversion, id, source and type, checked in this
  // order right after those four: "subject" (missing-subject), "contractversion"
  // (missing-contract-version; its value is a positive integer or a non-empty string, else
  // invalid-contract-version) and "schemaversion" (missing-schema-version, checked last, as
  // EnvelopeOptions::require_schema_version does).
  std::vector<std::string> required;

  // The pointer for `attribute`, or empty when it has none.
  std::string PointerFor(std::string_view attribute) const;

  // Returns a copy that reads the schema version from `pointer` (e.g. "/data/schemaVersion"),
  // written against the canonical envelope: "/data/..." is read inside this layout's payload
  // (data_pointer).
  Profile WithSchemaVersionAt(std::string pointer) const;
  // The same for any canonical attribute ("subjectversion": where an outbox reads the version it
  // keeps with a row, for answering replay requests).
  Profile WithAttributeAt(std::string_view attribute, std::string pointer) const;

  static Profile CloudEvents();
  // The flat layout of seed 001: event.id, event.name, event.schema_version, producer.id,
  // aggregate.version, payload, trace_id, span_id, correlation_id, timestamp.
  static Profile Flat();
  // Seed 000's envelope: id, source, type, subject and contractVersion (a positive integer or a
  // non-empty string) required at the top level, occurredAt (RFC 3339) as the time, the schema
  // version at /data/schemaVersion (required), no specversion (implied "1.0"); other top-level
  // members are ignored.
  static Profile Contract();
  // Looks up a built-in profile by name ("cloudevents", "flat", "contract").
  static Result<Profile> Named(std::string_view name);
  // Reads a profile from JSON: {"name":..,"attributes":{"id":"/event.id",..},
  // "constants":{"specversion":"1.0"},"data":"/payload","passthrough":false,
  // "required":["subject"]}.
  static Result<Profile> FromJson(std::string_view json_text);
};

// Reads a profile file (Profile::FromJson) of at most kProfileBytesMax bytes; errors name the file.
inline constexpr size_t kProfileBytesMax = size_t{1} << 20;
Result<Profile> LoadProfileFile(const std::string& path, Env* env = nullptr);

// Checks RFC 6901 syntax: empty, or '/'-separated tokens where '~' is followed by '0' or '1'.
bool IsValidJsonPointer(std::string_view pointer);

}  // namespace evident
