// GPTQ's error feedback with a lookup table per group of rows as the grid
// (Frantar et al., "GPTQ", 2022, the OBS update per column; here the
// candidates of each weight are its group's table entries, not a uniform grid).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"

namespace anelm::quant {

// Lookup tables for a matrix: table g (entries [g k, (g + 1) k), ascending)
// serves rows [g rows_per_table, (g + 1) rows_per_table).
struct LutTables {
    int64_t rows_per_table = 1;
    int k = 16;
    std::vector<float> entries;

    const float* table_of_row(int64_t o) const {
        return entries.data() + o / rows_per_table * k;
    }
};

// The index of the entry nearest v in an ascending table of k entries (the
// lower one on a tie).
int nearest_entry(const float* table, int k, float v);

// Codes for w (f32 [n_out, n_in], row-major) over `tables`: column after
// column, each weight takes its nearest entry after the errors of the columns
// before it were fed forward through u (inverse_gram_factor of the inputs'
// Gram matrix), which minimises the error of the layer's output on the
// calibration inputs rather than of its weights. Returns codes [n_out, n_in].
std::vector<uint8_t> gptq_codes(const std::vector<float>& w, int64_t n_out, int64_t n_in,
                                const LutTables& tables, const std::vector<float>& u,
                                ThreadPool& pool);

}  // namespace anelm::quant
