#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "exec/mil/ops.h"
#include "kernels/kernels.h"

namespace anelm::milexec::ops {

namespace {

// The reduced axes, sorted and non-negative; all of them when `axes` is absent.
std::vector<int64_t> reduce_axes(OpContext& ctx, int64_t rank) {
    std::vector<int64_t> axes;
    if (!ctx.has("axes")) {
        for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        return axes;
    }
    for (int64_t a : ctx.get_ints("axes")) axes.push_back(normalize_axis(ctx, a, rank));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) ctx.fail("repeated axes");
    return axes;
}

// The mean of n contiguous values, summed in f64 over eight independent runs
// (one chain of adds would wait on each add's latency).
double mean_of(const float* x, int64_t n) {
    double part[8] = {};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; ++k) part[k] += x[j + k];
    double sum = 0.0;
    for (; j < n; ++j) sum += x[j];
    for (double p : part) sum += p;
    return sum / static_cast<double>(n);
}

// fn(row, s.n) on each row of s.n values along the split axis, the input's
// values copied to the output first: rows that are not contiguous are
// gathered into a buffer and put back, so every layout gets the same
// arithmetic (a token's [1, C, 1, 1] and a batch's [1, C, 1, T] alike).
template <typename Fn>
void for_each_row(const AxisSplit& s, const float* in, float* out, Fn fn) {
    if (s.inner == 1) {
        std::copy(in, in + s.outer * s.n, out);
        for (int64_t o = 0; o < s.outer; ++o) fn(out + o * s.n, s.n);
        return;
    }
    std::vector<float> row(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t in_k = 0; in_k < s.inner; ++in_k) {
            const int64_t base = o * s.n * s.inner + in_k;
            for (int64_t j = 0; j < s.n; ++j) row[static_cast<size_t>(j)] = in[base + j * s.inner];
            fn(row.data(), s.n);
            for (int64_t j = 0; j < s.n; ++j) out[base + j * s.inner] = row[static_cast<size_t>(j)];
        }
}

// layer_norm's arithmetic on one row: centred (the mean summed in f64), then
// the vector kernel's root mean square (f32 sums) divides and applies gamma.
void normalize_row(float* row, int64_t n, const float* gamma, const float* beta, float eps) {
    const auto mean = static_cast<float>(mean_of(row, n));
    for (int64_t j = 0; j < n; ++j) row[j] -= mean;
    kernels::rms_norm(row, gamma, 0.0f, n, eps, row);
    if (beta)
        for (int64_t j = 0; j < n; ++j) row[j] += beta[j];
}

// Whether slice_by_index `ctx` keeps the first `shape` of its input: begins
// 0, strides 1, nothing squeezed, its declared shape `shape`.
bool keeps_the_start(OpContext& ctx, const std::vector<int64_t>& shape) {
    if (ctx.op().declared.at(0).shape != shape) return false;
    const auto all = [&](std::string_view key, int64_t want) {
        if (!ctx.has(key)) return true;
        const std::vector<int64_t> v = ctx.get_ints(key);
        return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == want; });
    };
    return all("begin", 0) && all("stride", 1) && all("squeeze_mask", 0);
}

double value_at(const Tensor& t, int64_t k) {
    return t.f.empty() ? t.i[static_cast<size_t>(k)] : t.f[static_cast<size_t>(k)];
}

}  // namespace

void reduce(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const std::vector<int64_t> axes = reduce_axes(ctx, rank);
    std::vector<int64_t> kept = x.shape;
    for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
    const std::string& t = ctx.type();
    const bool is_max = t == "reduce_max", is_min = t == "reduce_min", is_prod = t == "reduce_prod";
    double init = 0.0;
    if (is_max) init = -std::numeric_limits<double>::infinity();
    if (is_min) init = std::numeric_limits<double>::infinity();
    if (is_prod) init = 1.0;
    std::vector<double> acc(static_cast<size_t>(shape_numel(kept)), init);
    const std::array<std::vector<int64_t>, 1> strides = {broadcast_strides(kept, x.shape)};
    for_each_offset<1>(x.shape, strides, [&](int64_t k, const std::array<int64_t, 1>& at) {
        double& a = acc[static_cast<size_t>(at[0])];
        const double v = value_at(x, k);
        if (is_max)
            a = std::max(a, v);
        else if (is_min)
            a = std::min(a, v);
        else if (is_prod)
            a *= v;
        else
            a += v;
    });
    if (t == "reduce_mean") {
        const double n = static_cast<double>(x.numel()) / static_cast<double>(acc.size());
        for (double& a : acc) a /= n;
    }
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
        if (ctx.get_bool("keep_dims", false) || !std::binary_search(axes.begin(), axes.end(), d))
            shape.push_back(kept[static_cast<size_t>(d)]);
    Tensor out = ctx.output(0, shape);
    for (size_t k = 0; k < acc.size(); ++k) {
        if (out.f.empty())
            out.i[k] = static_cast<int32_t>(acc[k]);
        else
            out.f[k] = static_cast<float>(acc[k]);
    }
    ctx.set(0, std::move(out));
}

void reduce_arg(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = normalize_axis(ctx, ctx.get_int("axis", -1), rank);
    const bool is_max = ctx.type() == "reduce_argmax";
    const AxisSplit s = split_at(x.shape, axis);
    std::vector<int64_t> shape = x.shape;
    if (ctx.get_bool("keep_dims", false))
        shape[static_cast<size_t>(axis)] = 1;
    else
        shape.erase(shape.begin() + axis);
    Tensor out = ctx.output(0, shape);
    if (!out.f.empty()) ctx.fail("output must be an integer tensor");
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t in = 0; in < s.inner; ++in) {
            int64_t best = 0;
            double best_v = value_at(x, o * s.n * s.inner + in);
            for (int64_t j = 1; j < s.n; ++j) {
                const double v = value_at(x, (o * s.n + j) * s.inner + in);
                if (is_max ? v > best_v : v < best_v) best = j, best_v = v;
            }
            out.i[static_cast<size_t>(o * s.inner + in)] = static_cast<int32_t>(best);
        }
    ctx.set(0, std::move(out));
}

void softmax(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    if (x.f.size() != static_cast<size_t>(x.numel())) ctx.fail("x must be a float tensor");
    const int64_t axis =
        normalize_axis(ctx, ctx.get_int("axis", -1), static_cast<int64_t>(x.shape.size()));
    Tensor out = ctx.output(0, x.shape);
    // The vector kernel: f32 sums, and exp(-inf) is 0 there too.
    for_each_row(split_at(x.shape, axis), x.f.data(), out.f.data(),
                 [](float* row, int64_t n) { kernels::softmax(row, n); });
    ctx.set(0, std::move(out));
}

// The k largest (or smallest) along an axis, earlier indices first among equals.
void topk(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const int64_t axis =
        normalize_axis(ctx, ctx.get_int("axis", -1), static_cast<int64_t>(x.shape.size()));
    const int64_t k = ctx.get_int("k", 1);
    const bool ascending = ctx.get_bool("ascending", false);
    const AxisSplit s = split_at(x.shape, axis);
    if (k < 1 || k > s.n) ctx.fail("k {} outside [1, {}]", k, s.n);
    if (ctx.n_outputs() != 2) ctx.fail("topk has two outputs");
    std::vector<int64_t> shape = x.shape;
    shape[static_cast<size_t>(axis)] = k;
    Tensor values = ctx.output(0, shape), indices = ctx.output(1, shape);
    if (!indices.f.empty()) ctx.fail("indices must be integers");
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t in = 0; in < s.inner; ++in) {
            auto at = [&](int64_t j) { return value_at(x, (o * s.n + j) * s.inner + in); };
            for (int64_t j = 0; j < s.n; ++j) order[static_cast<size_t>(j)] = j;
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                return ascending ? at(a) < at(b) : at(a) > at(b);
            });
            for (int64_t j = 0; j < k; ++j) {
                const size_t to = static_cast<size_t>((o * k + j) * s.inner + in);
                const int64_t from = order[static_cast<size_t>(j)];
                if (values.f.empty())
                    values.i[to] = static_cast<int32_t>(at(from));
                else
                    values.f[to] = static_cast<float>(at(from));
                indices.i[to] = static_cast<int32_t>(from);
            }
        }
    ctx.set(0, std::move(values));
    ctx.set(1, std::move(indices));
}

void layer_norm(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    if (x.f.size() != static_cast<size_t>(x.numel())) ctx.fail("x must be a float tensor");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const std::vector<int64_t> axes = reduce_axes(ctx, rank);
    if (axes.empty() || axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size()))
        ctx.fail("axes must be consecutive dimensions");
    AxisSplit s;
    for (int64_t d = 0; d < rank; ++d) {
        const int64_t n = x.shape[static_cast<size_t>(d)];
        if (d < axes.front())
            s.outer *= n;
        else if (d > axes.back())
            s.inner *= n;
        else
            s.n *= n;
    }
    const Tensor* gamma = ctx.has("gamma") ? &ctx.tensor("gamma") : nullptr;
    const Tensor* beta = ctx.has("beta") ? &ctx.tensor("beta") : nullptr;
    if ((gamma && gamma->f.size() != static_cast<size_t>(s.n)) ||
        (beta && beta->f.size() != static_cast<size_t>(s.n)))
        ctx.fail("gamma and beta must hold {} values", s.n);
    const auto eps = ctx.get_float("epsilon", 1e-5f);
    Tensor out = ctx.output(0, x.shape);
    for_each_row(s, x.f.data(), out.f.data(), [&](float* row, int64_t n) {
        normalize_row(row, n, gamma ? gamma->f.data() : nullptr, beta ? beta->f.data() : nullptr,
                      eps);
    });
    ctx.set(0, std::move(out));
}

bool rms_norm_step(std::span<OpContext* const> ops, Rounding rounding) {
    if (ops.size() != 4 && ops.size() != 5) return false;
    OpContext &neg = *ops[0], &both = *ops[1], &norm = *ops[2], &half = *ops[3];
    OpContext* gain = ops.size() == 5 ? ops[4] : nullptr;
    OpContext& last = *ops.back();
    const FloatSpan x = neg.floats("x");
    const auto rank = static_cast<int64_t>(x.shape.size());
    const int64_t given = both.get_int("axis");
    const std::vector<int64_t> axes = norm.get_ints("axes");
    if (rank == 0 || given < -rank || given >= rank ||
        neg.tensor("y").shape.size() > x.shape.size() || axes.size() != 1)
        return false;
    const int64_t axis = (given + rank) % rank;
    if ((axes[0] + rank) % rank != axis) return false;
    const AxisSplit s = split_at(x.shape, axis);
    if (s.inner != 1 || !keeps_the_start(half, x.shape)) return false;
    // The gain: one value, or one per value of a row.
    const float* g = nullptr;
    int64_t g_step = 0;
    if (gain) {
        const Tensor& t = gain->tensor("y");
        if (t.f.size() != static_cast<size_t>(t.numel()) || t.shape.size() > x.shape.size())
            return false;
        for (size_t d = 0; d < t.shape.size(); ++d) {
            const auto at = static_cast<int64_t>(d + x.shape.size() - t.shape.size());
            if (t.shape[d] != 1 && (at != axis || t.shape[d] != s.n)) return false;
        }
        g = t.f.data();
        g_step = t.numel() == 1 ? 0 : 1;
    }
    const float eps = norm.get_float("epsilon", 1e-5f);
    Tensor out = last.output(0, x.shape);
    std::vector<float> row(static_cast<size_t>(2 * s.n));
    for (int64_t o = 0; o < s.outer; ++o) {
        const float* xo = x.data + o * s.n;
        std::copy_n(xo, s.n, row.data());
        for (int64_t j = 0; j < s.n; ++j) row[static_cast<size_t>(s.n + j)] = xo[j] * -1.0f;
        round_as(neg, rounding, row.data() + s.n, s.n);
        normalize_row(row.data(), 2 * s.n, nullptr, nullptr, eps);
        round_as(norm, rounding, row.data(), s.n);
        round_as(half, rounding, row.data(), s.n);
        float* dst = out.f.data() + o * s.n;
        for (int64_t j = 0; j < s.n; ++j)
            dst[j] = g ? row[static_cast<size_t>(j)] * g[j * g_step] : row[static_cast<size_t>(j)];
    }
    last.set(0, std::move(out));
    return true;
}

}  // namespace anelm::milexec::ops
