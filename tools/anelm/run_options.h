// Options shared by the subcommands that run a model.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "runtime/sampler.h"
#include "runtime/session.h"

namespace anelm::cli {

struct RunOptions {
    int threads = 0;
    int64_t n_ctx = 4096;
    std::string precision_name = "f32";

    SessionOptions session() const;
};

void add_run_options(CLI::App& app, RunOptions& options);
void add_sampler_options(CLI::App& app, SamplerParams& params);
const char* kernels_isa();

}  // namespace anelm::cli
