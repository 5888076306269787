// The tokenizer files a runner of a converted directory needs, copied from the
// Hugging Face model folder: ANEMLL's runners load the tokenizer from the
// folder of meta.yaml (swift-transformers also reads config.json there).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::coreml {

// The names copied when present, in this order.
std::span<const std::string_view> tokenizer_file_names();

// Copies every present one of tokenizer_file_names() from model_dir into
// dest_dir (which must exist), replacing files of the same name, and returns
// the names copied. Throws Error naming model_dir when it has neither
// tokenizer.json nor tokenizer.model, and naming the file when a copy fails.
std::vector<std::string> copy_tokenizer_files(const std::string& model_dir,
                                              const std::string& dest_dir);

}  // namespace anelm::coreml
