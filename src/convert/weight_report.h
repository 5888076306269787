// What converting loses, weight by weight: each matrix the packages hold
// against the values it was read as (a GGUF's blocks decoded, a Hugging Face
// folder's bf16 or f16), so a user sees the error convert adds to the file
// they started from.
#pragma once

#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ir/program.h"
#include "quant/quant_error.h"

namespace anelm {

struct WeightReport {
    std::string name;
    std::vector<int64_t> shape;
    std::string stored;   // as read: f32, f16, bf16 or a ggml type (Q4_K)
    std::string written;  // lutBITS:GROUP, or f16 for a dense weight
    quant::QuantError error;
};

// Every matrix `fn` reads (embed and linear weights), in order of first use.
std::vector<WeightReport> weight_reports(const ir::Program& program, const ir::Function& fn,
                                         ThreadPool& pool);

// The reports as a table with a total line, as anelm quantize prints its own.
std::string weight_report_table(const std::vector<WeightReport>& reports);

}  // namespace anelm
