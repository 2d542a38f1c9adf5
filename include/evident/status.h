// evident/status.h — errors as values at module boundaries.
//
// A Status carries a canonical Code and a human-readable message. A Result<T> holds either a
// value or a non-OK Status. Neither throws. Outcomes of the consumer pipeline (duplicate, stale,
// gap, ...) are NOT errors and are never represented by a Status; they have their own enums.
//
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace evident {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed (bad config, bad schema)
  kNotFound,            // a named thing does not exist
  kAlreadyExists,       // a unique thing exists already
  kFailedPrecondition,  // the system is not in a state where the operation may run
  kLimitExceeded,       // an input or queue exceeded a configured limit
  kIoError,             // the operating system or a file failed
  kCorruption,          // stored data is not what it must be
  kUnavailable,         // a dependency (server) is transiently unreachable; retry may help
  kAborted,   // a concurrent writer changed what a transaction read; retry the transaction
  kInternal,  // a bug: an invariant did not hold
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {
    assert(code != Code::kOk || message_.empty());
  }

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status LimitExceeded(std::string m) { return {Code::kLimitExceeded, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid-argument: <message>", or "ok".
  std::string ToString() const;

  // Prefixes the message with context: "reading config: <old message>".
  Status Annotate(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T>: a T or a non-OK Status. Access to value() on an error is a programmer error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}        // NOLINT implicit
  Result(Status status) : data_(std::in_place_index<1>, std::move(status)) {  // NOLINT implicit
    assert(!std::get<1>(data_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return data_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(data_);
  }
  T& value() & {
    assert(ok());
    return std::get<0>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(data_);
  }
  // By value: `for (auto& x : MakeResult().value())` must not dangle.
  T value() && {
    assert(ok());
    return std::get<0>(std::move(data_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace evident

#define EVIDENT_CONCAT_INNER_(a, b) a##b
#define EVIDENT_CONCAT_(a, b) EVIDENT_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` is not OK. The temporary's name
// carries its line: one of these inside a lambda inside another's expression does not shadow it.
#define EVIDENT_RETURN_IF_ERROR(expr) \
  EVIDENT_RETURN_IF_ERROR_IMPL_(EVIDENT_CONCAT_(evident_status_, __LINE__), expr)
#define EVIDENT_RETURN_IF_ERROR_IMPL_(tmp, expr) \
  do {                                           \
    ::evident::Status tmp = (expr);              \
    if (!tmp.ok()) return tmp;                   \
  } while (false)

// `EVIDENT_ASSIGN_OR_RETURN(auto x, MakeX());` — declares x from the Result or returns its Status.
#define EVIDENT_ASSIGN_OR_RETURN(lhs, expr) \
  EVIDENT_ASSIGN_OR_RETURN_IMPL_(EVIDENT_CONCAT_(evident_result_, __LINE__), lhs, expr)
#define EVIDENT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
