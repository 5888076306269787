// A tiny synthetic model written once per test program into a temp folder.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "io/model_loader.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm::test {

inline const LoadedModel& tiny_model(const std::string& preset) {
    static std::map<std::string, LoadedModel> models;
    auto it = models.find(preset);
    if (it == models.end()) {
        const auto dir = temp_dir("exec") / preset;
        SynthOptions options;
        options.dtype = DType::f32;
        options.seed = 7;
        synth_write(synth_preset(preset), dir.string(), options);
        it = models.emplace(preset, load_model(dir.string())).first;
    }
    return it->second;
}

}  // namespace anelm::test
