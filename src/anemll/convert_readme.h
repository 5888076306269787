// OUT/README.txt: what each file of a converted directory is, and the commands
// to compile the packages and run them with ANEMLL's runners on a Mac.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "anemll/meta_yaml.h"

namespace anelm::anemll {

// An input a package reads besides the hidden state, positions, mask and KV
// state: one it carries from call to call (LFM2's and Qwen3.5's conv windows
// and delta-rule states), returned as name + "_out"; or one the embeddings
// compute beside the hidden state (Gemma 4's per-layer inputs), passed along.
struct CarriedInput {
    std::string package;  // file name
    std::string name;
    std::vector<int64_t> shape;
    bool returned = true;  // false: the embeddings' output of the same name
};

// `out_dir` names the directory in the commands (absolute reads best: the run
// commands start in ANEMLL's checkout); `tokenizer_files` are the tokenizer
// files written beside meta.yaml (copy_tokenizer_files' names, or llama2.c's).
// With carried inputs, the text says what a runner must do with them, and
// that ANEMLL's runners do not.
std::string convert_readme_text(const MetaYaml& meta, std::span<const std::string> tokenizer_files,
                                std::string_view out_dir,
                                std::span<const CarriedInput> carried = {});

}  // namespace anelm::anemll
