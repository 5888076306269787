// `anelm info` for Core ML packages: what a .mlpackage holds.
#pragma once

#include <string>

namespace anelm::cli {

// True for a folder that looks like a Core ML package (it has a Manifest.json).
bool is_coreml_package(const std::string& path);

// Prints the package's functions, inputs, outputs, states, op counts and weight
// bytes, as text or JSON; returns the exit code.
int run_coreml_info(const std::string& path, bool json);

// The same for every package of a folder anelm convert wrote, after the
// layout meta.yaml records.
int run_converted_info(const std::string& dir, bool json);

}  // namespace anelm::cli
