// evident/envelope_schema.h — the envelope of a profile as a JSON Schema (2020-12), for producers
// in other languages.
//
// EnvelopeJsonSchema describes the input layout an EnvelopeParser with the same options reads:
// where each attribute lives (the profile's JSON Pointers, or the top-level member of its name),
// which ones are required, each attribute's type and grammar, the extension attribute rules of
// a passthrough profile, and data and data_base64 never together. What JSON Schema cannot say
// (the size limit, I-JSON, the source boundary, a number's spelling) is listed in the schema's
// "$comment" and in docs/envelope.md, "The envelope as a JSON Schema";
// envelope_schema_test.cc holds the parser and the schema to that list.
//
// Thread-safety: a pure function of its argument.
#pragma once

#include <string>
#include <string_view>

#include "evident/envelope.h"
#include "evident/status.h"

namespace evident {

// "$id" of a profile's schema: this prefix, the profile's name (percent-encoded) and ".json".
inline constexpr std::string_view kEnvelopeSchemaIdPrefix = "https://evident.dev/schemas/envelope/";

// The JSON Schema (2020-12) document, compact, without a trailing newline. Reads
// options.profile and options.require_schema_version; the limits and source_boundary are not
// expressible and are left out. Fails with kInvalidArgument for options EnvelopeParser::Create
// refuses (a malformed pointer, an unknown attribute), so no schema describes a parser that
// cannot exist.
Result<std::string> EnvelopeJsonSchema(const EnvelopeOptions& options);

}  // namespace evident
