// OUT/README.txt: what each file of a converted directory is, and the commands
// to compile the packages and run them with ANEMLL's runners on a Mac.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "coreml/meta_yaml.h"

namespace anelm::coreml {

// `out_dir` names the directory in the commands (absolute reads best: the run
// commands start in ANEMLL's checkout); `tokenizer_files` are the tokenizer
// files written beside meta.yaml (copy_tokenizer_files' names, or llama2.c's).
std::string convert_readme_text(const MetaYaml& meta, std::span<const std::string> tokenizer_files,
                                std::string_view out_dir);

}  // namespace anelm::coreml
