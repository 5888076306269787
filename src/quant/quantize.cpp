#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/bit_packing.h"
#include "base/error.h"
#include "base/half.h"
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

}  // namespace

QuantizedMatrix quantize_matrix(const TensorView& w, const QuantChoice& choice, ThreadPool& pool,
                                uint64_t seed, const KMeansOptions& kmeans) {
    const MatrixShape shape = matrix_shape(w);
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
    if (q.kind == QuantKind::lut) {
        palettize(w, shape, pool, seed, kmeans, q);
    } else {
        quantize_per_row(w, shape, pool, q);
    }
    return q;
}

}  // namespace anelm::quant
