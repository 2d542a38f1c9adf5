// source/ndjson_lines.h — a publisher batch as NDJSON text, shared by the file and descriptor
// publishers (evident/publisher.h).
#pragma once

#include <span>
#include <string>

#include "evident/publisher.h"

namespace evident {

// Writes each message's bytes and a newline into `text` (cleared first). A message whose bytes
// hold a newline would read back as two: kInvalidArgument naming it and `destination`.
inline Status NdjsonLines(std::span<const OutgoingMessage> batch, const std::string& destination,
                          std::string& text) {
  text.clear();
  for (const OutgoingMessage& m : batch) {
    if (m.bytes.find('\n') != std::string::npos) {
      return Status::InvalidArgument("message " + m.id + " holds a newline; " + destination +
                                     " is newline-delimited");
    }
    text.append(m.bytes).push_back('\n');
  }
  return Status::Ok();
}

}  // namespace evident
