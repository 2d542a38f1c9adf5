// evident/rejection.h — why an input is not an event: the envelope's stable reason codes and
// the Rejection that carries one. Apart from envelope.h so that a source can hand over an input
// it already refused (a broken batch array) without pulling in the parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evident {

// Why an envelope was rejected. The kebab-case names (ReasonCode) are a stable interface.
enum class EnvelopeReason : uint8_t {
  kEnvelopeTooLarge,        // envelope-too-large
  kMalformedJson,           // malformed-json
  kInvalidUtf8,             // invalid-utf8
  kLoneSurrogate,           // lone-surrogate
  kDuplicateMember,         // duplicate-member
  kNestingTooDeep,          // nesting-too-deep
  kNotAnObject,             // not-an-object
  kMissingSpecversion,      // missing-specversion
  kMissingId,               // missing-id
  kMissingSource,           // missing-source
  kMissingType,             // missing-type
  kUnsupportedSpecversion,  // unsupported-specversion
  kInvalidSource,           // invalid-source: not a URI-reference
  kInvalidSubject,          // invalid-subject: present but not a non-empty string
  kInvalidTime,             // invalid-time: not an RFC 3339 timestamp
  kInvalidDatacontenttype,  // invalid-datacontenttype: not an RFC 2046 media type
  kInvalidDataschema,       // invalid-dataschema: not an absolute URI
  kDataAndDataBase64,       // data-and-data-base64: both members present
  kInvalidDataBase64,       // invalid-data-base64: not a base64 string
  kInvalidAttributeName,    // invalid-attribute-name: extension name not [a-z0-9]+
  kInvalidExtensionValue,   // invalid-extension-value: object, array, fraction or bad type
  kInvalidSchemaVersion,    // invalid-schema-version: schemaversion not a non-negative integer
  kInvalidSubjectVersion,   // invalid-subject-version: subjectversion not a non-negative integer
  kInvalidTraceparent,      // invalid-traceparent: not a W3C Trace Context traceparent
  kSourceOutsideBoundary,   // source-outside-boundary
  kMissingSchemaVersion,    // missing-schema-version
  // The attributes a profile requires beyond specversion, id, source and type (Profile::required;
  // the `contract` profile of seed 000). Seed 000's contractVersion is spelled in kebab case, as
  // the seed itself spells its schemaVersion (missing-schema-version).
  kMissingSubject,          // missing-subject: absent, null or empty
  kMissingContractVersion,  // missing-contract-version: absent, null or empty
  kInvalidContractVersion,  // invalid-contract-version: not a positive integer or a string
  // number-out-of-range: well-formed JSON whose number is beyond a 64-bit integer or an IEEE 754
  // double (I-JSON, RFC 7493 section 2.2: no exact value to read)
  kNumberOutOfRange,
  // control-character: a String attribute (id, source, type, subject, correlationid,
  // causationid, an extension) holds U+0000-U+001F or U+007F-U+009F, which CloudEvents forbids
  kControlCharacter,
};
inline constexpr int kEnvelopeReasonCount = 31;

// The stable kebab-case code, e.g. "missing-id".
std::string_view ReasonCode(EnvelopeReason reason);

// All reasons, in declaration order (for documentation and tests).
std::vector<EnvelopeReason> AllEnvelopeReasons();

struct Rejection {
  EnvelopeReason reason;
  std::string message;  // for a person; may change between releases
  std::string id;       // the event's id when it could be read, else empty
  std::string source;   // the event's source when it could be read, else empty
  std::string subject;  // the event's subject when it is a string, else empty
};

}  // namespace evident
