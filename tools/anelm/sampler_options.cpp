#include "sampler_options.h"

#include <fmt/format.h>

#include "base/error.h"
#include "flag_checks.h"

namespace anelm::cli {

void SamplerOptions::add_to(CLI::App& app) {
    namespace lim = sampler_limits;
    SamplerParams& p = params_;
    temp_ = in_range(app.add_option("--temp", p.temp, "temperature (0: greedy)"), lim::temp);
    top_k_ = in_range(app.add_option("--top-k", p.top_k, "keep the k most likely tokens (0: off)"),
                      lim::top_k);
    top_p_ = in_range(app.add_option("--top-p", p.top_p, "nucleus sampling mass (1: off)"),
                      lim::top_p);
    min_p_ = in_range(app.add_option("--min-p", p.min_p,
                                     "drop tokens below min-p × the top probability (0: off)"),
                      lim::min_p);
    repeat_penalty_ = in_range(
        app.add_option("--repeat-penalty", p.repeat_penalty, "penalty on recent tokens (1: off)"),
        lim::repeat_penalty);
    for (CLI::Option* o : {temp_, top_k_, top_p_, min_p_, repeat_penalty_})
        o->capture_default_str()->description(
            o->get_description() + " [the model's generation_config.json, else this default]");
    seed_ = app.add_option("--seed", p.seed, "random seed (default: drawn from the clock)");
}

namespace {

// Takes `recommended` into `field` when the flag was not given; says where the
// value came from.
template <typename Field, typename Value>
void take(CLI::Option* flag, Field& field, const std::optional<Value>& recommended,
          ValueRange range, const char* key, std::string& from) {
    if (flag->count() > 0) {
        from = fmt::format(" ({})", flag->get_name());
    } else if (recommended) {
        const auto value = static_cast<double>(*recommended);
        if (!range.contains(value))
            fail("generation_config.json: {} (give {} to override it)",
                 range_violation(key, value, range), flag->get_name());
        field = static_cast<Field>(value);
        from = " (generation_config.json)";
    }
}

}  // namespace

ResolvedSampling SamplerOptions::resolve(const GenerationSampling& recommended) const {
    ResolvedSampling r;
    SamplerParams& p = r.params;
    p = params_;
    std::string temp_from, top_k_from, top_p_from, min_p_from, penalty_from;
    namespace lim = sampler_limits;
    const GenerationSampling& g = recommended;
    take(temp_, p.temp, g.temperature, lim::temp, "temperature", temp_from);
    // transformers samples only where do_sample says so: false is greedy.
    if (temp_->count() == 0 && g.do_sample == false) {
        p.temp = 0;
        temp_from = " (generation_config.json: do_sample false)";
    }
    take(top_k_, p.top_k, g.top_k, lim::top_k, "top_k", top_k_from);
    take(top_p_, p.top_p, g.top_p, lim::top_p, "top_p", top_p_from);
    take(min_p_, p.min_p, g.min_p, lim::min_p, "min_p", min_p_from);
    take(repeat_penalty_, p.repeat_penalty, g.repetition_penalty, lim::repeat_penalty,
         "repetition_penalty", penalty_from);
    r.seed_given = seed_->count() > 0;
    if (!r.seed_given) p.seed = random_seed();

    if (p.temp <= 0) {
        r.settings = fmt::format("greedy{}", temp_from);
        r.description = "sampling: " + r.settings;
        return r;
    }
    r.settings = fmt::format("temp {}{}, top-k {}{}, top-p {}{}, min-p {}{}, repeat-penalty {}{}",
                             p.temp, temp_from, p.top_k, top_k_from, p.top_p, top_p_from,
                             p.min_p, min_p_from, p.repeat_penalty, penalty_from);
    r.description = fmt::format("sampling: {}, seed {}{}", r.settings, p.seed,
                                r.seed_given ? "" : " (random; --seed repeats it)");
    return r;
}

}  // namespace anelm::cli
