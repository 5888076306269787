// OUT/README.txt: what each file of a converted directory is, and the commands
// to compile the packages and run them with ANEMLL's runners on a Mac.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coreml/meta_yaml.h"

namespace anelm::coreml {

// An input a package carries from call to call besides the KV state (LFM2's
// and Qwen3.5's conv windows and delta-rule states), returned as name + "_out".
struct CarriedInput {
    std::string package;  // file name
    std::string name;
    std::vector<int64_t> shape;
};

// `out_dir` names the directory in the commands (absolute reads best: the run
// commands start in ANEMLL's checkout); `tokenizer_files` are the tokenizer
// files written beside meta.yaml (copy_tokenizer_files' names, or llama2.c's).
// With carried inputs, the text says what a runner must do with them, and
// that ANEMLL's runners do not.
std::string convert_readme_text(const MetaYaml& meta, std::span<const std::string> tokenizer_files,
                                std::string_view out_dir,
                                std::span<const CarriedInput> carried = {});

}  // namespace anelm::coreml
