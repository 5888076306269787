// config.json and generation_config.json. transformers writes keys sorted, which
// nlohmann::json does too.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/model_family.h"
#include "synth/hf_json.h"
#include "synth/special_tokens.h"

namespace anelm::synth {

namespace {

using nlohmann::json;

const char* torch_dtype(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "float32";
        case DType::f16:
            return "float16";
        case DType::bf16:
            return "bfloat16";
        default:
            break;
    }
    fail("synth: cannot write weights as {}", dtype_name(dtype));
}

// A single id as a number, several as a list, as the released configs have them.
json ids_json(const std::vector<int32_t>& ids) {
    if (ids.size() == 1) return ids[0];
    return ids;
}

}  // namespace

void check_preset(const SynthPreset& preset) {
    const ModelSpec& s = preset.spec;
    const ModelFamily& arch_family = *model_family(s.arch);
    const SynthTokenizer& family = arch_family.synth_tokenizer();
    const std::string& name = preset.name;
    if (s.n_embd <= 0 || s.n_layer <= 0 || s.n_ff <= 0 || s.head_dim <= 0 || s.n_head <= 0)
        fail("synth: preset {}: sizes must be positive", name);
    if (s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0)
        fail("synth: preset {}: n_head {} is not a multiple of n_head_kv {}", name, s.n_head,
             s.n_head_kv);
    if (preset.n_vocab_bpe < 256)
        fail("synth: preset {}: n_vocab_bpe {} leaves no room for the 256 byte tokens", name,
             preset.n_vocab_bpe);
    const auto n_special = static_cast<int64_t>(family.specials.size());
    if (s.n_vocab < preset.n_vocab_bpe + n_special)
        fail("synth: preset {}: n_vocab {} leaves no room for {} special tokens after id {}", name,
             s.n_vocab, n_special, preset.n_vocab_bpe);
    if (arch_family.check_synth) arch_family.check_synth(name, s);
}

std::string config_json(const SynthPreset& preset, DType dtype) {
    const ModelSpec& s = preset.spec;
    const ModelFamily& family = *model_family(s.arch);
    json j = family.config_json(s);
    j["eos_token_id"] = ids_json(s.eos_token_ids);
    j["torch_dtype"] = torch_dtype(dtype);
    if (family.config_pad)
        j["pad_token_id"] = special_token_id(family.synth_tokenizer(), preset.n_vocab_bpe, "<pad>");
    return j.dump(2) + "\n";
}

std::string generation_config_json(const SynthPreset& preset) {
    const SynthTokenizer& family = model_family(preset.spec.arch)->synth_tokenizer();
    std::vector<int32_t> eos;
    for (const auto& t : family.generation_eos)
        eos.push_back(special_token_id(family, preset.n_vocab_bpe, t));
    json j = {
        {"bos_token_id", preset.spec.bos_token_id},
        {"do_sample", true},
        {"eos_token_id", ids_json(eos)},
        {"temperature", family.temperature},
        {"top_p", family.top_p},
        {"transformers_version", "4.51.0"},
    };
    if (!family.pad.empty())
        j["pad_token_id"] = special_token_id(family, preset.n_vocab_bpe, family.pad);
    if (family.top_k > 0) j["top_k"] = family.top_k;
    if (family.repetition_penalty != 1.0) j["repetition_penalty"] = family.repetition_penalty;
    return j.dump(2) + "\n";
}

}  // namespace anelm::synth
