#include "models/model_loader.h"

#include <filesystem>
#include <memory>

#include "base/error.h"
#include "io/gguf.h"
#include "io/llama2c.h"
#include "io/model_format.h"
#include "io/safetensors.h"
#include "models/expected_tensors.h"
#include "models/gguf_model.h"
#include "models/hf_config.h"

namespace anelm {

namespace {

namespace fs = std::filesystem;

// A multimodal checkpoint (Gemma 3's) keeps its language model under a prefix:
// language_model.model.* as first released, model.language_model.* as
// transformers writes it since. Those tensors are renamed to model.*, a
// prefixed lm_head to lm_head.weight; the vision tower's are left out.
void unwrap_language_model(WeightStore& weights) {
    if (weights.find("model.embed_tokens.weight")) return;
    for (const std::string prefix : {"language_model.model.", "model.language_model."}) {
        if (!weights.find(prefix + "embed_tokens.weight")) continue;
        auto wrapped = std::make_shared<WeightStore>(std::move(weights));
        WeightStore renamed;
        for (const std::string& name : wrapped->names()) {
            const TensorView& view = *wrapped->find(name);
            if (name.starts_with(prefix))
                renamed.add("model." + name.substr(prefix.size()), view, wrapped->origin());
            else if (name == "lm_head.weight" || name == "language_model.lm_head.weight")
                renamed.add("lm_head.weight", view, wrapped->origin());
        }
        renamed.set_origin(wrapped->origin());
        renamed.keep_alive(wrapped);
        for (const auto& file : wrapped->files()) renamed.keep_alive(file);
        weights = std::move(renamed);
        return;
    }
}

LoadedModel load_hf_folder(const fs::path& dir) {
    LoadedModel model;
    model.spec = load_hf_config((dir / "config.json").string());
    if (const fs::path gen = dir / "generation_config.json"; fs::is_regular_file(gen))
        load_generation_config(gen.string(), model.spec);

    const fs::path index = dir / "model.safetensors.index.json";
    const fs::path single = dir / "model.safetensors";
    if (fs::is_regular_file(index))
        load_safetensors_index(index.string(), model.weights);
    else if (fs::is_regular_file(single))
        load_safetensors(single.string(), model.weights);
    else
        fail("{}: no model.safetensors or model.safetensors.index.json in this folder",
             dir.string());
    model.weights.set_origin(dir.string());
    unwrap_language_model(model.weights);

    if (const fs::path tok = dir / "tokenizer.json"; fs::is_regular_file(tok))
        model.tokenizer_path = tok.string();
    return model;
}

}  // namespace

LoadedModel load_model(const std::string& path) {
    LoadedModel model;
    switch (detect_model_format(path)) {
        case ModelFormat::hf_folder:
            model = load_hf_folder(path);
            break;
        case ModelFormat::gguf: {
            const GgufFile gguf(path);
            model.spec = gguf_model_spec(gguf);
            load_gguf_weights(gguf, model.spec, model.weights);
            model.tokenizer_path = path;  // its tokenizer.* metadata
            break;
        }
        case ModelFormat::llama2c:
            model.spec = load_llama2c(path, model.weights);
            break;
        case ModelFormat::converted_folder:
            fail(
                "{}: a folder anelm convert wrote (meta.yaml); give the Hugging Face folder, GGUF "
                "file or llama2.c checkpoint it was converted from",
                path);
        case ModelFormat::coreml_package:
            fail(
                "{}: a Core ML package; give the Hugging Face folder, GGUF file or llama2.c "
                "checkpoint it was converted from",
                path);
    }
    check_tensors(model.spec, model.weights);
    return model;
}

}  // namespace anelm
