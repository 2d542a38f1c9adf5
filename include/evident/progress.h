// evident/progress.h — a progress line for long work on a terminal: a bar with the percentage,
// the count of items, the rate and the time left when the size of the work is known (a file's
// bytes, the rows or records to go); the count and the rate alone when it is not.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "evident/clock.h"
#include "evident/status.h"

namespace evident {

enum class ProgressMode : uint8_t {
  kAuto,    // when standard error is a terminal
  kAlways,  // on standard error whatever it is
  kNever,
};

// "auto", "always" or "never".
Result<ProgressMode> ParseProgressMode(const std::string& text);

// Where a command in `mode` writes its progress: standard error, or null (none).
std::FILE* ProgressOutput(ProgressMode mode);

// The work so far. `total` < 0: its size is not known.
struct ProgressState {
  int64_t done = 0;  // of `total`, in its unit (bytes, rows, records)
  int64_t total = -1;
  int64_t items = 0;   // counted in `item_name`s
  double seconds = 0;  // since the work began
};

// One line, without the leading carriage return: "[#####---------------]  25%  1200 events
// 400/s  0:09 left" (and `detail` after it), or "1200 events  400/s" when the total is not
// known. The time left is the rate of `done` so far carried to `total`.
std::string ProgressLine(const ProgressState& state, const std::string& item_name,
                         const std::string& detail = "");

// Rewrites the line on `out` (null: nothing at all) at most every `interval_ms`, and once more
// at Finish, which ends it with a newline. Write errors are ignored: progress is a courtesy,
// never the work's outcome.
class ProgressBar {
 public:
  ProgressBar(std::FILE* out, std::string item_name, Clock& clock = SystemClock(),
              int64_t interval_ms = 200);
  // Whether an Update now would be shown (a caller whose detail costs something asks first).
  bool Due();
  void Update(int64_t done, int64_t total, int64_t items, const std::string& detail = "");
  void Finish();

 private:
  void Print();
  std::FILE* out_;
  std::string item_name_;
  Clock& clock_;
  int64_t interval_ms_;
  int64_t start_ms_;
  int64_t last_ms_ = -1;
  ProgressState state_;
  std::string detail_;
  size_t last_width_ = 0;
};

}  // namespace evident
