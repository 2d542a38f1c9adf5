// json/writer.h — a small appending JSON writer for evident's NDJSON output.
//
// Hand-written because the chosen JSON library (simdjson) only parses; its string_builder is not
// in Debian's 3.0 release. The writer escapes per RFC 8259 and never allocates beyond the output
// string. It does not validate nesting: callers pair Begin/End (checked by assertions in debug).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evident::json {

// Appends `text` as a JSON string literal (with quotes) to `out`. Invalid UTF-8 bytes are
// replaced by U+FFFD so that the output is always valid JSON.
void AppendQuoted(std::string& out, std::string_view text);

// The longest prefix of `text` of at most `bytes_max` bytes that does not end inside a UTF-8
// sequence (a cut text stays valid wherever it is stored).
std::string_view Utf8Prefix(std::string_view text, size_t bytes_max);

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  Writer& BeginObject();
  Writer& EndObject();
  Writer& BeginArray();
  Writer& EndArray();
  Writer& Key(std::string_view key);
  Writer& String(std::string_view value);
  Writer& Int(int64_t value);
  Writer& Uint(uint64_t value);
  Writer& Double(double value);
  Writer& Bool(bool value);
  Writer& Null();
  // Appends already-serialized JSON text as one value.
  Writer& Raw(std::string_view json_text);

  // Convenience: Key(k).String(v) etc.
  Writer& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  Writer& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  Writer& Field(std::string_view key, int64_t value) { return Key(key).Int(value); }
  Writer& Field(std::string_view key, bool value) { return Key(key).Bool(value); }

 private:
  void Separate();

  std::string& out_;
  // One flag per open container: true once the container holds a member. The first 64 levels
  // live in a word, so a writer allocates nothing for ordinary documents.
  class MemberFlags {
   public:
    bool empty() const { return depth_ == 0; }
    void push() {
      if (depth_ >= 64)
        deeper_.push_back(false);
      else
        bits_ &= ~(uint64_t{1} << depth_);
      ++depth_;
    }
    void pop() {
      --depth_;
      if (depth_ >= 64) deeper_.pop_back();
    }
    // Marks the innermost container as holding a member; returns whether it already did.
    bool mark() {
      const size_t top = depth_ - 1;
      if (top >= 64) {
        const bool had = deeper_.back();
        deeper_.back() = true;
        return had;
      }
      const uint64_t bit = uint64_t{1} << top;
      const bool had = (bits_ & bit) != 0;
      bits_ |= bit;
      return had;
    }

   private:
    uint64_t bits_ = 0;
    size_t depth_ = 0;
    std::vector<bool> deeper_;
  };
  MemberFlags has_member_;
  bool after_key_ = false;
};

}  // namespace evident::json
