// Progress of long jobs (quantizing, converting, calibrating). Library code
// reports through a ProgressFn and never prints; the CLI draws a ProgressBar.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

namespace anelm {

// Called with the work done so far out of total (same unit, e.g. bytes or
// tokens); may be called from any thread.
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

// A one-line bar with percentage, elapsed time and ETA:
//   quantize [##########----------]  50%  12.3 s, ETA 12.1 s
// On a terminal it redraws in place at most ten times a second; elsewhere
// (logs, pipes) it prints one line per tenth of the work. finish() ends the line.
class ProgressBar {
public:
    ProgressBar(std::string label, std::FILE* out = stderr);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(int64_t done, int64_t total);
    void finish();
    // A ProgressFn that updates this bar.
    ProgressFn callback();

private:
    void draw(int64_t done, int64_t total, bool last);

    std::string label_;
    std::FILE* out_;
    bool terminal_;
    bool finished_ = false;
    int last_decile_ = 0;  // off a terminal the first line comes at 10%
    int64_t last_done_ = 0, last_total_ = 0;
    std::chrono::steady_clock::time_point start_, last_draw_;
    std::mutex mutex_;
};

}  // namespace anelm
