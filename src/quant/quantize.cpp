#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/bit_packing.h"
#include "base/error.h"
#include "base/half.h"
#include "quant/gptq_lut.h"
#include "quant/output_target.h"
#include "quant/weight_rows.h"

namespace anelm::quant {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

// Rows [o0, o1) of w as f32, row after row; throws on a non-finite weight.
void read_rows(const TensorView& w, const MatrixShape& shape, int64_t o0, int64_t o1, float* out) {
    for (int64_t o = o0; o < o1; ++o) {
        float* row = out + (o - o0) * shape.n_in;
        read_row(w, shape, o, row);
        for (int64_t i = 0; i < shape.n_in; ++i) {
            if (!std::isfinite(row[i])) fail("quantize: weight [{}, {}] is {}", o, i, row[i]);
        }
    }
}

// The f16 table of 2^nbits ascending entries from the cluster centres.
std::vector<uint16_t> make_table(const std::vector<double>& centers, int nbits) {
    std::vector<float> entries;
    for (double c : centers) entries.push_back(round_to_f16(static_cast<float>(c)));
    std::sort(entries.begin(), entries.end());
    entries.resize(size_t{1} << nbits, entries.empty() ? 0.0f : entries.back());
    std::vector<uint16_t> table;
    for (float e : entries) table.push_back(f32_to_f16(e));
    return table;
}

// Nearest-entry search over an ascending table: code = the number of
// midpoints below v, by a branch-free binary search over k - 1 midpoints
// (padded with +inf to k).
class NearestEntry {
public:
    explicit NearestEntry(const std::vector<uint16_t>& table) : mid_(table.size()) {
        for (size_t j = 0; j + 1 < table.size(); ++j) {
            mid_[j] = (f16_to_f32(table[j]) + f16_to_f32(table[j + 1])) / 2;
        }
        mid_.back() = INFINITY;
    }
    uint8_t operator()(float v) const {
        size_t pos = 0;
        for (size_t step = mid_.size() / 2; step > 0; step /= 2) {
            pos += v > mid_[pos + step - 1] ? step : 0;
        }
        return static_cast<uint8_t>(pos);
    }

private:
    std::vector<float> mid_;
};

void palettize(const TensorView& w, const MatrixShape& shape, ThreadPool& pool, uint64_t seed,
               const KMeansOptions& kmeans, QuantizedMatrix& q) {
    const int64_t rows = q.rows_per_table(), n_tables = q.n_tables();
    const int k = 1 << q.nbits;
    q.lut.assign(static_cast<size_t>(n_tables * k), 0);
    pool.run(n_tables, [&](int64_t g, int) {
        const int64_t o0 = g * rows, o1 = std::min(shape.n_out, o0 + rows);
        thread_local std::vector<float> values, sorted;
        thread_local std::vector<uint8_t> codes;
        thread_local WeightedValues points;
        values.resize(static_cast<size_t>((o1 - o0) * shape.n_in));
        read_rows(w, shape, o0, o1, values.data());
        sorted = values;
        distinct_values(sorted, points);
        const KMeansResult clusters =
            kmeans_1d(points, k, mix_seed(seed, static_cast<uint64_t>(g)), kmeans);
        const std::vector<uint16_t> table = make_table(clusters.centers, q.nbits);
        std::copy(table.begin(), table.end(), q.lut.begin() + g * k);

        const NearestEntry nearest(table);
        codes.resize(static_cast<size_t>(shape.n_in));
        for (int64_t o = o0; o < o1; ++o) {
            const float* row = values.data() + (o - o0) * shape.n_in;
            for (int64_t i = 0; i < shape.n_in; ++i) codes[i] = nearest(row[i]);
            pack_codes(codes.data(), shape.n_in, q.nbits, q.codes.data() + o * q.row_bytes());
        }
        // A whole-tensor group is as large as the tensor: do not keep it per thread.
        if (values.capacity() > (size_t{16} << 20)) {
            values = {};
            sorted = {};
            points = {};
        }
    });
}

// Each input's energy as the weight of the weights it multiplies; inputs
// calibration never saw active keep a sliver, so every weight still counts.
std::vector<double> input_weights(const InputStats& stats) {
    double mean = 0;
    for (double d : stats.diag) mean += d;
    mean = stats.n_in > 0 ? mean / static_cast<double>(stats.n_in) : 0.0;
    const double floor = mean > 0 ? 1e-6 * mean : 1.0;
    std::vector<double> weights(stats.diag);
    for (double& d : weights) d = std::max(d, floor);
    return weights;
}

// An embedding row's weight: how often the calibration text looked it up,
// plus one, so that the rows it never read still count (as Laplace's rule
// estimates a frequency from few counts).
std::vector<double> row_weights(const std::vector<double>& counts, int64_t n_out) {
    std::vector<double> weights(static_cast<size_t>(n_out), 1.0);
    for (size_t o = 0; o < weights.size() && o < counts.size(); ++o) weights[o] += counts[o];
    return weights;
}

// What a calibrated palettization weighs: the weights (mapped to their
// target where there is one) and each row's and column's weight.
struct WeighedMatrix {
    std::vector<float> values;
    std::vector<double> column_weight, row_weight;
};

WeighedMatrix weighed_matrix(const TensorView& w, const MatrixShape& shape,
                             const Calibration& calib, ThreadPool& pool) {
    const InputStats* stats = calib.stats;
    if (stats && stats->n_in != shape.n_in)
        fail("calibration saw inputs of {} values, the weight has {}", stats->n_in, shape.n_in);
    WeighedMatrix m;
    m.values.resize(static_cast<size_t>(shape.n_out * shape.n_in));
    read_rows(w, shape, 0, shape.n_out, m.values.data());
    if (stats && calib.aim && !stats->target.empty())
        retarget(m.values, shape.n_out, stats->target, pool);
    m.column_weight =
        stats ? input_weights(*stats) : std::vector<double>(static_cast<size_t>(shape.n_in), 1.0);
    m.row_weight = calib.row_counts ? row_weights(*calib.row_counts, shape.n_out)
                                    : std::vector<double>(static_cast<size_t>(shape.n_out), 1.0);
    return m;
}

// The tables of every matrix in `qs` (LUTs of one group size, any widths):
// each group's table the k-means of its weights weighted by input energy (or,
// for an embedding, by how often each row is read), the group's weighted
// values collected once for all widths.
std::vector<LutTables> weighted_tables(const WeighedMatrix& m, const MatrixShape& shape,
                                       ThreadPool& pool, uint64_t seed,
                                       const KMeansOptions& kmeans,
                                       const std::vector<QuantizedMatrix>& qs) {
    const int64_t n_in = shape.n_in, rows = qs.front().rows_per_table();
    std::vector<LutTables> tables(qs.size());
    for (size_t i = 0; i < qs.size(); ++i) {
        tables[i].rows_per_table = rows;
        tables[i].k = 1 << qs[i].nbits;
        tables[i].entries.resize(static_cast<size_t>(qs[i].n_tables() * tables[i].k));
    }
    pool.run(qs.front().n_tables(), [&](int64_t g, int) {
        const int64_t o0 = g * rows, o1 = std::min(shape.n_out, o0 + rows);
        thread_local std::vector<double> weights;
        thread_local WeightedValues points;
        weights.resize(static_cast<size_t>((o1 - o0) * n_in));
        for (int64_t o = o0; o < o1; ++o)
            for (int64_t i = 0; i < n_in; ++i)
                weights[(o - o0) * n_in + i] = m.column_weight[i] * m.row_weight[o];
        weighted_distinct_values({m.values.data() + o0 * n_in, weights.size()}, weights, points);
        for (size_t i = 0; i < qs.size(); ++i) {
            const KMeansResult clusters =
                kmeans_1d(points, tables[i].k, mix_seed(seed, static_cast<uint64_t>(g)), kmeans);
            const std::vector<uint16_t> table = make_table(clusters.centers, qs[i].nbits);
            for (int e = 0; e < tables[i].k; ++e)
                tables[i].entries[g * tables[i].k + e] = f16_to_f32(table[e]);
        }
        // A whole-tensor group is as large as the tensor: do not keep it per thread.
        if (weights.capacity() > (size_t{16} << 20)) {
            weights = {};
            points = {};
        }
    });
    return tables;
}

// q's codes on its tables: for gptq by error feedback (quant/gptq_lut.h),
// else each weight's nearest entry.
void calibrated_codes(const WeighedMatrix& m, const MatrixShape& shape, const LutTables& tables,
                      const Calibration& calib, ThreadPool& pool, QuantizedMatrix& q) {
    const int64_t n_out = shape.n_out, n_in = shape.n_in;
    std::vector<uint8_t> codes(m.values.size());
    if (calib.method == CalibMethod::gptq && calib.stats && calib.stats->has_gram()) {
        GramFactorCache own;
        GramFactorCache& factors = calib.factors ? *calib.factors : own;
        codes = gptq_codes(m.values, n_out, n_in, tables, factors.factor_of(*calib.stats, pool),
                           pool);
    } else {
        pool.run(n_out, [&](int64_t o, int) {
            const float* table = tables.table_of_row(o);
            for (int64_t i = 0; i < n_in; ++i)
                codes[static_cast<size_t>(o * n_in + i)] = static_cast<uint8_t>(
                    nearest_entry(table, tables.k, m.values[static_cast<size_t>(o * n_in + i)]));
        });
    }
    q.lut.resize(tables.entries.size());
    for (size_t e = 0; e < tables.entries.size(); ++e) q.lut[e] = f32_to_f16(tables.entries[e]);
    pool.run(n_out, [&](int64_t o, int) {
        pack_codes(codes.data() + o * n_in, n_in, q.nbits, q.codes.data() + o * q.row_bytes());
    });
}

// As palettize, calibrated: every matrix of `qs` (LUTs of one group size).
void palettize_calibrated(const TensorView& w, const MatrixShape& shape, ThreadPool& pool,
                          uint64_t seed, const KMeansOptions& kmeans, const Calibration& calib,
                          std::vector<QuantizedMatrix>& qs) {
    const WeighedMatrix m = weighed_matrix(w, shape, calib, pool);
    const std::vector<LutTables> tables = weighted_tables(m, shape, pool, seed, kmeans, qs);
    for (size_t i = 0; i < qs.size(); ++i) calibrated_codes(m, shape, tables[i], calib, pool, qs[i]);
}

void quantize_per_row(const TensorView& w, const MatrixShape& shape, ThreadPool& pool,
                      QuantizedMatrix& q) {
    const int qmax = q.kind == QuantKind::int8 ? 127 : 7;
    q.scales.assign(static_cast<size_t>(shape.n_out), 0);
    constexpr int64_t rows_per_task = 16;
    pool.run(ceil_div(shape.n_out, rows_per_task), [&](int64_t task, int) {
        thread_local std::vector<float> row;
        thread_local std::vector<uint8_t> codes;
        row.resize(static_cast<size_t>(shape.n_in));
        codes.resize(static_cast<size_t>(shape.n_in));
        const int64_t o_end = std::min(shape.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            read_rows(w, shape, o, o + 1, row.data());
            float max_abs = 0.0f;
            for (float v : row) max_abs = std::max(max_abs, std::fabs(v));
            const uint16_t scale16 = f32_to_f16(max_abs / static_cast<float>(qmax));
            const float scale = f16_to_f32(scale16);
            q.scales[static_cast<size_t>(o)] = scale16;
            for (int64_t i = 0; i < shape.n_in; ++i) {
                const float c = scale > 0 ? std::nearbyint(row[i] / scale) : 0.0f;
                // Two's complement in nbits: int8 bytes, int4 nibbles.
                const auto code = static_cast<int>(std::clamp<float>(c, -qmax, qmax));
                codes[i] = static_cast<uint8_t>(code & ((1 << q.nbits) - 1));
            }
            pack_codes(codes.data(), shape.n_in, q.nbits, q.codes.data() + o * q.row_bytes());
        }
    });
}

// The matrix `choice` makes of w, its codes zero and nothing else set.
QuantizedMatrix empty_matrix(const MatrixShape& shape, const QuantChoice& choice) {
    QuantizedMatrix q;
    q.n_out = shape.n_out;
    q.n_in = shape.n_in;
    switch (choice.method) {
        case QuantMethod::none:
            fail("quantize: the choice is none");
        case QuantMethod::lut:
            if (choice.nbits < 1 || choice.nbits > 8 || choice.nbits == 5 || choice.nbits == 7)
                fail("quantize: lut of {} bits, expected 1, 2, 3, 4, 6 or 8", choice.nbits);
            if (choice.group_size < 0) fail("quantize: group size {}", choice.group_size);
            q.kind = QuantKind::lut;
            q.nbits = choice.nbits;
            q.group_size = choice.group_size;
            break;
        case QuantMethod::int8:
            q.kind = QuantKind::int8;
            q.nbits = 8;
            break;
        case QuantMethod::int4:
            q.kind = QuantKind::int4;
            q.nbits = 4;
            break;
    }
    q.codes.assign(static_cast<size_t>(q.n_out * q.row_bytes()), 0);
    return q;
}

}  // namespace

QuantizedMatrix quantize_matrix(const TensorView& w, const QuantChoice& choice, ThreadPool& pool,
                                uint64_t seed, const KMeansOptions& kmeans,
                                const Calibration& calib) {
    const MatrixShape shape = matrix_shape(w);
    QuantizedMatrix q = empty_matrix(shape, choice);
    if (q.kind == QuantKind::lut && calib.any()) {
        std::vector<QuantizedMatrix> one{std::move(q)};
        palettize_calibrated(w, shape, pool, seed, kmeans, calib, one);
        return std::move(one.front());
    }
    if (q.kind == QuantKind::lut) {
        palettize(w, shape, pool, seed, kmeans, q);
    } else {
        quantize_per_row(w, shape, pool, q);
    }
    return q;
}

std::vector<QuantizedMatrix> palettize_widths(const TensorView& w, int64_t group_size,
                                              std::span<const int> nbits, ThreadPool& pool,
                                              uint64_t seed, const Calibration& calib) {
    const MatrixShape shape = matrix_shape(w);
    std::vector<QuantizedMatrix> qs;
    for (const int bits : nbits) qs.push_back(empty_matrix(shape, {QuantMethod::lut, bits, group_size}));
    if (!qs.empty()) palettize_calibrated(w, shape, pool, seed, {}, calib, qs);
    return qs;
}

}  // namespace anelm::quant
