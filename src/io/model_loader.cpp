#include "io/model_loader.h"

#include <filesystem>

#include "base/error.h"
#include "io/expected_tensors.h"
#include "io/hf_config.h"
#include "io/llama2c.h"
#include "io/safetensors.h"

namespace anelm {

namespace {

namespace fs = std::filesystem;

LoadedModel load_hf_folder(const fs::path& dir) {
    LoadedModel model;
    const fs::path config = dir / "config.json";
    if (!fs::is_regular_file(config)) fail("{}: no config.json in this folder", dir.string());
    model.spec = load_hf_config(config.string());
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

    if (const fs::path tok = dir / "tokenizer.json"; fs::is_regular_file(tok))
        model.tokenizer_path = tok.string();
    return model;
}

}  // namespace

LoadedModel load_model(const std::string& path) {
    const fs::path p(path);
    std::error_code ec;
    const fs::file_status status = fs::status(p, ec);
    if (ec || !fs::exists(status)) fail("{}: no such file or folder", path);

    LoadedModel model;
    if (fs::is_directory(status)) {
        model = load_hf_folder(p);
    } else {
        const std::string ext = p.extension().string();
        if (ext == ".safetensors" || ext == ".json")
            fail("{}: give the model's folder (with config.json), not one of its files", path);
        model.spec = load_llama2c(path, model.weights);
    }
    check_tensors(model.spec, model.weights);
    return model;
}

}  // namespace anelm
