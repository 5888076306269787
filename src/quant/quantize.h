// Quantizing one weight matrix: LUT palettization by 1-D k-means per group of
// output rows, or symmetric int8 / int4 per output row.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "quant/input_stats.h"
#include "quant/kmeans_1d.h"
#include "quant/quant_spec.h"
#include "quant/quantized_matrix.h"

namespace anelm::quant {

// Quantizes w (rank >= 2, f32 / f16 / bf16, finite; see matrix_shape) as
// `choice` says (not none).
// lut: for each group of rows, kmeans_1d over the group's values with seed
//   mix_seed(seed, group); the centres rounded to f16, ascending, padded to
//   2^nbits entries by repeating the last; every weight takes the index of its
//   nearest entry (the lower one on a tie). When the group does not divide the
//   rows, the last group holds the rest.
// int8 / int4: scale = max |w[o, :]| / 127 (or / 7) rounded to f16; codes
//   round(w / scale) clamped to [-127, 127] (or [-7, 7]); an all-zero row has scale 0.
// With calibration statistics a lut is data-aware (input_stats.h's
// CalibMethod), with row counts an embedding's table is weighted by them;
// int8 and int4 ignore both.
// Groups or blocks of rows run in parallel on the pool; the result depends on
// the seed only, not on the number of threads.
QuantizedMatrix quantize_matrix(const TensorView& w, const QuantChoice& choice, ThreadPool& pool,
                                uint64_t seed = 0, const KMeansOptions& kmeans = {},
                                const Calibration& calib = {});

// quantize_matrix of w as LUTs of one group size at each of `nbits`, with
// the same calibration: each group's weighted values are collected once for
// all the widths. Equal, width for width, to quantize_matrix's.
std::vector<QuantizedMatrix> palettize_widths(const TensorView& w, int64_t group_size,
                                              std::span<const int> nbits, ThreadPool& pool,
                                              uint64_t seed, const Calibration& calib);

}  // namespace anelm::quant
