#include "base/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace anelm {

namespace {

std::string format_seconds(double s) {
    if (s < 60) return fmt::format("{:.1f} s", s);
    if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
    return fmt::format("{}h{:02d}m", int(s) / 3600, int(s) % 3600 / 60);
}

}  // namespace

ProgressBar::ProgressBar(std::string label, std::FILE* out)
    : label_(std::move(label)),
      out_(out),
      terminal_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
    finish();
}

void ProgressBar::update(int64_t done, int64_t total) {
    std::lock_guard lock(mutex_);
    if (finished_ || total <= 0) return;
    done = std::clamp<int64_t>(done, 0, total);
    last_done_ = done;
    last_total_ = total;
    auto now = std::chrono::steady_clock::now();
    if (terminal_) {
        if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    } else {
        int decile = int(done * 10 / total);
        if (decile == last_decile_ || done == total) return;  // the last line comes from finish()
        last_decile_ = decile;
    }
    last_draw_ = now;
    draw(done, total, false);
}

void ProgressBar::finish() {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (last_total_ > 0) draw(last_done_, last_total_, true);
}

ProgressFn ProgressBar::callback() {
    return [this](int64_t done, int64_t total) { update(done, total); };
}

void ProgressBar::draw(int64_t done, int64_t total, bool last) {
    constexpr int width = 20;
    double fraction = double(done) / double(total);
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    int filled = int(fraction * width);
    std::string bar = std::string(filled, '#') + std::string(width - filled, '-');
    std::string eta = done > 0 && done < total
                          ? fmt::format(", ETA {}", format_seconds(elapsed / fraction - elapsed))
                          : "";
    fmt::print(out_, "{}{} [{}] {:3d}%  {}{}{}", terminal_ ? "\r" : "", label_, bar,
               int(fraction * 100), format_seconds(elapsed), eta,
               terminal_ ? (last ? "\x1b[K\n" : "\x1b[K") : "\n");
    std::fflush(out_);
}

}  // namespace anelm
