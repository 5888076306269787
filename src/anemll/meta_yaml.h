// OUT/meta.yaml: what ANEMLL's runners (tests/chat.py, the Swift AnemllCore)
// read to load a converted directory, written with every key they read, in
// the types they expect (LUT bits as integers or `none`, flags as booleans,
// lm_head_chunk_sizes as a list of integers), and read back here the same way.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "anemll/anemll_layout.h"

namespace anelm::anemll {

// generation_config.json's sampling, which the Swift runner prefers to its
// own defaults (meta.yaml's recommended_sampling).
struct RecommendedSampling {
    bool do_sample = false;
    double temperature = 1.0, top_p = 1.0;
    int64_t top_k = 0;

    bool operator==(const RecommendedSampling&) const = default;
};

struct MetaYaml {
    ConvertLayout layout;
    std::optional<RecommendedSampling> sampling;
    std::string model_name;  // the source model's folder name: model_info.name anemll-NAME-ctxC
    // anelm's own: the longest sequence the source model was trained on
    // (ModelSpec::n_ctx_train), so that lint can hold context_length to it; 0: unknown.
    int64_t n_ctx_train = 0;
    // anelm's own: the choice per matrix --quant auto made (weight name to
    // "lut3:8" or "none"); empty when one LUT per component holds.
    std::map<std::string, quant::QuantChoice> quant_recipe;
    // The .mlmodelc names recorded for the runners (ffn: chunk 1, the others
    // are found by its `_chunk_01of` part); empty where the layout has none.
    std::string embeddings, lm_head, ffn, monolithic_model;
    // The trailing `# key: value` comment block, for troubleshooting only.
    std::string model_path, command_line, anelm_version;

    bool operator==(const MetaYaml&) const = default;
};

// The sampling a generation_config.json recommends: nothing when it names
// none of do_sample, temperature, top_p, top_k. Throws Error naming the file
// and field for a value of the wrong type.
std::optional<RecommendedSampling> read_recommended_sampling(const std::string& path);

// The meta.yaml of a layout, file names taken from it.
MetaYaml make_meta_yaml(const ConvertLayout& layout, std::string model_name);

// The text: model_info with its parameters, then the comment block (which also
// records fp16_scale, the one layout field no runner reads).
std::string meta_yaml_text(const MetaYaml& meta);
void write_meta_yaml(const std::string& path, const MetaYaml& meta);

// Reads a meta.yaml as the runners do: absent optional keys take their
// defaults (model_prefix llama, split_lm_head 8, file names from the prefix
// and LUT bits, ...). Throws Error "PATH: model_info.parameters.KEY: ..." for a
// missing required key or a value of the wrong type.
MetaYaml read_meta_yaml(const std::string& path);

}  // namespace anelm::anemll
