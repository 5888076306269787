// A GGUF file's metadata under its architecture's prefix, checked as read.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "io/gguf.h"

namespace anelm {

// Metadata keys under the architecture's prefix ("qwen3.block_count").
class GgufKeys {
public:
    GgufKeys(const GgufFile& gguf, std::string arch) : gguf_(gguf), prefix_(arch + ".") {}

    int64_t required(std::string_view key, int64_t lo, int64_t hi) const {
        return checked(key, gguf_.get_int(name(key)), lo, hi);
    }
    std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) const {
        const auto v = gguf_.find_int(name(key));
        if (!v) return std::nullopt;
        return checked(key, *v, lo, hi);
    }
    std::optional<double> positive(std::string_view key) const {
        const auto v = gguf_.find_float(name(key));
        if (v && !(*v > 0 && std::isfinite(*v)))
            fail("{}: metadata {} is {}, expected a positive number", gguf_.path(), name(key), *v);
        return v;
    }
    std::optional<std::string> string(std::string_view key) const {
        return gguf_.find_string(name(key));
    }
    std::string name(std::string_view key) const { return prefix_ + std::string(key); }

private:
    int64_t checked(std::string_view key, int64_t v, int64_t lo, int64_t hi) const {
        if (v < lo || v > hi)
            fail("{}: metadata {} is {}, expected {} .. {}", gguf_.path(), name(key), v, lo, hi);
        return v;
    }
    const GgufFile& gguf_;
    std::string prefix_;
};

}  // namespace anelm
