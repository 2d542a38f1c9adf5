// transport/ndjson/ndjson_lines.h — a publisher batch as NDJSON text, shared by the file and
// descriptor publishers (evident/publisher.h).
#pragma once

#include <span>
#include <string>

#include "evident/publisher.h"

namespace evident {

// Writes into `text` (cleared first) the bytes and a newline of each message up to the first
// that holds a newline (it would read back as two lines); returns how many. The first message
// holding one: kInvalidArgument naming it and `destination` (Publisher: refused for what it
// is), so that the refusal always names the first message not accepted.
inline Result<size_t> NdjsonLines(std::span<const OutgoingMessage> batch,
                                  const std::string& destination, std::string& text) {
  text.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    const OutgoingMessage& m = batch[i];
    if (m.bytes.find('\n') != std::string::npos) {
      if (i > 0) return i;
      return Status::InvalidArgument("message " + m.id + " holds a newline; " + destination +
                                     " is newline-delimited");
    }
    text.append(m.bytes).push_back('\n');
  }
  return batch.size();
}

}  // namespace evident
