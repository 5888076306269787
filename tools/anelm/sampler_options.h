// The sampling flags of generate, chat and serve. A flag left out takes the
// model's generation_config.json value, else anelm's default; without --seed a
// run draws its seed from the clock.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "io/generation_config.h"
#include "runtime/sampler.h"

namespace anelm::cli {

struct ResolvedSampling {
    SamplerParams params;
    bool seed_given = false;
    // "temp 0.7 (generation_config.json), top-k 40, ..." or "greedy (--temp 0)"
    std::string settings;
    // "sampling: SETTINGS, seed 123 (random; --seed repeats it)"
    std::string description;
};

class SamplerOptions {
public:
    explicit SamplerOptions(SamplerParams defaults) : params_(defaults) {}

    void add_to(CLI::App& app);

    // The settings for a model recommending `recommended`; the seed is drawn
    // here when none was given.
    ResolvedSampling resolve(const GenerationSampling& recommended) const;

private:
    SamplerParams params_;
    CLI::Option* temp_ = nullptr;
    CLI::Option* top_k_ = nullptr;
    CLI::Option* top_p_ = nullptr;
    CLI::Option* min_p_ = nullptr;
    CLI::Option* repeat_penalty_ = nullptr;
    CLI::Option* seed_ = nullptr;
};

}  // namespace anelm::cli
