// The names of the events a gap or a conflict sends to a subject's owner (evident/gaps.h); the
// evidence packet looks them up. Acting on gap deadlines is the consumer's (gap_deadlines.cc).
#include "evident/gaps.h"

#include <string>

namespace evident {

std::string ReplayRequestSource(std::string_view consumer) {
  return "evident://consumers/" + std::string(consumer);
}

std::string ConflictReportId(std::string_view consumer, std::string_view subject, int64_t version,
                             std::string_view source, std::string_view event_id) {
  return "conflict:" + std::string(consumer) + ":" + std::string(subject) + ":v" +
         std::to_string(version) + ":" + std::string(source) + ":" + std::string(event_id);
}

}  // namespace evident
