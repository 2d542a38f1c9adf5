// store/projection_copy.h — filling a caller's Projection, for the backends'
// Transaction::ReadProjection: field by field, so the caller's strings keep their capacity and
// the write path allocates nothing per event.
#pragma once

#include <string_view>

#include "evident/store.h"

namespace evident {

inline void AssignProjection(const Projection& from, Projection& to) {
  to.consumer.assign(from.consumer);
  to.subject.assign(from.subject);
  to.version = from.version;
  to.state.assign(from.state);
  to.fields_json.assign(from.fields_json);
  to.owner_source.assign(from.owner_source);
  to.owner_version_seen = from.owner_version_seen;
  to.updated_at_ms = from.updated_at_ms;
  to.applied_digest.assign(from.applied_digest);
}

// A projection of (consumer, subject) that is not stored yet: version 0, no fields.
inline void FreshProjection(std::string_view consumer, std::string_view subject, Projection& out) {
  AssignProjection(Projection{}, out);
  out.consumer.assign(consumer);
  out.subject.assign(subject);
}

}  // namespace evident
