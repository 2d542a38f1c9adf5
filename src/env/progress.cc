#include "evident/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace evident {
namespace {

constexpr int kBarWidth = 20;

std::string TimeLeft(double seconds) {
  const auto total = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  }
  return text;
}

// The columns of the terminal `out` is, or 0 when it is none (a pipe, a file: the line is kept
// whole there).
size_t TerminalColumns(std::FILE* out) {
  struct winsize size {};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

}  // namespace

Result<ProgressMode> ParseProgressMode(const std::string& text) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "always") return ProgressMode::kAlways;
  if (text == "never") return ProgressMode::kNever;
  return Status::InvalidArgument("--progress must be auto, always or never, not \"" + text + "\"");
}

std::FILE* ProgressOutput(ProgressMode mode) {
  if (mode == ProgressMode::kNever) return nullptr;
  if (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) != 1) return nullptr;
  return stderr;
}

std::string ProgressLine(const ProgressState& s, const std::string& item_name,
                         const std::string& detail) {
  const double rate = s.seconds > 0 ? static_cast<double>(s.items) / s.seconds : 0.0;
  char counts[96];
  std::snprintf(counts, sizeof counts, "%lld %s  %.0f/s", static_cast<long long>(s.items),
                item_name.c_str(), rate);
  std::string line;
  if (s.total > 0) {
    const double fraction =
        std::clamp(static_cast<double>(s.done) / static_cast<double>(s.total), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kBarWidth);
    line = "[" + std::string(static_cast<size_t>(filled), '#') +
           std::string(static_cast<size_t>(kBarWidth - filled), '-') + "] ";
    char percent[8];
    std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
    line += std::string(percent) + "  " + counts;
    if (s.done > 0 && s.seconds > 0) {
      const double left =
          s.seconds * static_cast<double>(s.total - s.done) / static_cast<double>(s.done);
      line += "  " + TimeLeft(left) + " left";
    }
  } else {
    line = counts;
  }
  if (!detail.empty()) line += ", " + detail;
  return line;
}

ProgressBar::ProgressBar(std::FILE* out, std::string item_name, Clock& clock, int64_t interval_ms)
    : out_(out),
      item_name_(std::move(item_name)),
      clock_(clock),
      interval_ms_(interval_ms),
      start_ms_(clock.MonotonicMs()) {}

bool ProgressBar::Due() {
  return out_ != nullptr && (last_ms_ < 0 || clock_.MonotonicMs() - last_ms_ >= interval_ms_);
}

void ProgressBar::Update(int64_t done, int64_t total, int64_t items, const std::string& detail) {
  if (out_ == nullptr) return;
  state_.done = done;
  state_.total = total;
  state_.items = items;
  detail_ = detail;
  const int64_t now_ms = clock_.MonotonicMs();
  if (last_ms_ >= 0 && now_ms - last_ms_ < interval_ms_) return;
  last_ms_ = now_ms;
  Print();
}

void ProgressBar::Finish() {
  if (out_ == nullptr || last_ms_ < 0) return;  // nothing shown: nothing to end
  Print();
  (void)std::fputc('\n', out_);
  (void)std::fflush(out_);
}

void ProgressBar::Print() {
  state_.seconds = static_cast<double>(clock_.MonotonicMs() - start_ms_) / 1000.0;
  std::string line = ProgressLine(state_, item_name_, detail_);
  // A line longer than the terminal would wrap, and the carriage return would then rewrite only
  // its last row: cut to the width (the detail goes first, it comes last).
  if (const size_t columns = TerminalColumns(out_); columns > 1 && line.size() >= columns) {
    line.resize(columns - 1);
  }
  // Spaces over what a longer line before left on the terminal.
  const size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
  last_width_ = line.size();
  (void)std::fprintf(out_, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
  (void)std::fflush(out_);
}

}  // namespace evident
