// Status: names of codes and formatting.
#include "evident/status.h"

namespace evident {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid-argument";
    case Code::kNotFound:
      return "not-found";
    case Code::kAlreadyExists:
      return "already-exists";
    case Code::kFailedPrecondition:
      return "failed-precondition";
    case Code::kLimitExceeded:
      return "limit-exceeded";
    case Code::kIoError:
      return "io-error";
    case Code::kCorruption:
      return "corruption";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kAborted:
      return "aborted";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

}  // namespace evident
