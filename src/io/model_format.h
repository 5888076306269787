// What a path given as a model is, told from its contents: the one place every
// command recognises a model, and says what it was given instead when it is not one.
#pragma once

#include <string>

namespace anelm {

enum class ModelFormat {
    hf_folder,         // config.json (and safetensors weights)
    converted_folder,  // meta.yaml, as anelm convert writes it
    coreml_package,    // an .mlpackage: Manifest.json
    gguf,              // the "GGUF" magic
    llama2c,           // a legacy llama2.c checkpoint: a header of sizes in range
};

// Throws Error naming the path and what it holds otherwise, e.g. "README.md: not
// a model file but text (expected a Hugging Face folder, a GGUF file or a llama2.c
// checkpoint)"; a tokenizer, a model's config.json or safetensors file, a folder
// without config.json are each named so.
ModelFormat detect_model_format(const std::string& path);

// Whether the file's first 4 KiB are text: no NUL or other control bytes
// but tab, line and page breaks. Checkpoints' binary headers never are.
bool is_text_file(const std::string& path);

}  // namespace anelm
