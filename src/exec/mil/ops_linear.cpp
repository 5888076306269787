#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/mil/ops.h"
#include "kernels/kernels.h"
#include "kernels/quant_kernels.h"

namespace anelm::milexec::ops {

namespace {

// A weight input as the kernels read it: fp16 weights in place, palettized
// ones from their codes, float tensors as f32.
struct WeightMatrix {
    kernels::Matrix dense;
    const Weight* palettized = nullptr;  // when set, dense is unused

    void multiply(const float* x, int64_t rows, float* y, ThreadPool& pool) const {
        if (palettized)
            kernels::quant_matmul(quant_matrix(*palettized), x, rows, y, pool);
        else
            kernels::matmul(dense, x, rows, y, pool);
    }
};

WeightMatrix matrix_of(OpContext& ctx, std::string_view key, int64_t n_out, int64_t n_in) {
    const Slot& s = ctx.slot(key);
    if (shape_numel(s.shape()) != n_out * n_in)
        ctx.fail("{} {} is not [{}, {}]", key, shape_text(s.shape()), n_out, n_in);
    if (s.weight && s.weight->palettized) {
        if (s.weight->shape.at(0) != n_out)
            ctx.fail("{} {} does not have {} rows", key, shape_text(s.shape()), n_out);
        return {{}, s.weight.get()};
    }
    if (s.weight) return {{DType::f16, s.weight->bits, n_out, n_in}};
    const Tensor& t = ctx.tensor(key);
    if (t.f.size() != static_cast<size_t>(t.numel())) ctx.fail("{} must be a float tensor", key);
    return {{DType::f32, t.f.data(), n_out, n_in}};
}

// The rows [first, first + n) of a dense weight matrix.
kernels::Matrix rows_of(const kernels::Matrix& m, int64_t first, int64_t n) {
    const size_t width = m.dtype == DType::f16 ? 2 : 4;
    return {m.dtype, static_cast<const char*>(m.data) + first * m.n_in * width, n, m.n_in};
}

const Tensor& float_tensor(OpContext& ctx, std::string_view key) {
    const Tensor& t = ctx.tensor(key);
    if (t.f.size() != static_cast<size_t>(t.numel())) ctx.fail("{} must be a float tensor", key);
    return t;
}

// dst[c * rows + r] = src[r * cols + c], in tiles that stay in L1.
void transpose(const float* src, int64_t rows, int64_t cols, float* dst) {
    constexpr int64_t tile = 32;
    for (int64_t r0 = 0; r0 < rows; r0 += tile)
        for (int64_t c0 = 0; c0 < cols; c0 += tile) {
            const int64_t r1 = std::min(rows, r0 + tile), c1 = std::min(cols, c0 + tile);
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
        }
}

// A convolution of one input channel per output channel, in 2-d.
struct Depthwise {
    int64_t k[2], stride[2], dil[2], pad[2], in[2], out[2];
};

// Output channel `c` of a depthwise convolution: its taps (row c of `w`)
// over its input plane, summed in tap order, then its bias.
void depthwise_plane(const Depthwise& d, const kernels::Matrix& w, int64_t c, const float* plane,
                     float bias, float* dst) {
    const int64_t taps = d.k[0] * d.k[1];
    thread_local std::vector<float> tap;
    tap.resize(static_cast<size_t>(taps));
    if (w.dtype == DType::f16)
        kernels::f16_to_f32_row(static_cast<const uint16_t*>(w.data) + c * taps, taps, tap.data());
    else
        std::copy_n(static_cast<const float*>(w.data) + c * taps, taps, tap.data());
    for (int64_t oy = 0; oy < d.out[0]; ++oy)
        for (int64_t ox = 0; ox < d.out[1]; ++ox) {
            float sum = 0.0f;
            for (int64_t ky = 0; ky < d.k[0]; ++ky) {
                const int64_t iy = oy * d.stride[0] - d.pad[0] + ky * d.dil[0];
                if (iy < 0 || iy >= d.in[0]) continue;
                for (int64_t kx = 0; kx < d.k[1]; ++kx) {
                    const int64_t ix = ox * d.stride[1] - d.pad[1] + kx * d.dil[1];
                    if (ix >= 0 && ix < d.in[1])
                        sum +=
                            tap[static_cast<size_t>(ky * d.k[1] + kx)] * plane[iy * d.in[1] + ix];
                }
            }
            dst[oy * d.out[1] + ox] = sum + bias;
        }
}

// The bias input's values; empty when there is none.
std::vector<float> bias_of(OpContext& ctx, int64_t n) {
    if (!ctx.has("bias")) return {};
    const Tensor& b = float_tensor(ctx, "bias");
    if (b.numel() != n) ctx.fail("bias must hold {} values", n);
    return b.f;
}

}  // namespace

void linear(OpContext& ctx) {
    const Tensor& x = float_tensor(ctx, "x");
    if (x.shape.empty()) ctx.fail("x must have rank 1 or more");
    const int64_t n_in = x.shape.back();
    const std::vector<int64_t>& wshape = ctx.slot("weight").shape();
    if (wshape.size() != 2 || wshape[1] != n_in)
        ctx.fail("weight {} does not take {} inputs", shape_text(wshape), n_in);
    const int64_t n_out = wshape[0];
    const WeightMatrix w = matrix_of(ctx, "weight", n_out, n_in);
    const std::vector<float> bias = bias_of(ctx, n_out);
    std::vector<int64_t> shape = x.shape;
    shape.back() = n_out;
    Tensor out = ctx.output(0, shape);
    const int64_t rows = x.numel() / n_in;
    w.multiply(x.f.data(), rows, out.f.data(), ctx.pool());
    if (!bias.empty())
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < n_out; ++o) out.f[r * n_out + o] += bias[o];
    ctx.set(0, std::move(out));
}

// x [N, Cin, (H,) W] with weight [Cout, Cin / groups, (kh,) kw]: each output
// position gathers its input patch (im2col) and the patches of a group go
// through the matmul kernel against that group's weight rows.
void conv(OpContext& ctx) {
    const Tensor& x = float_tensor(ctx, "x");
    const std::vector<int64_t>& wshape = ctx.slot("weight").shape();
    const size_t spatial = x.shape.size() - 2;
    if (x.shape.size() < 3 || x.shape.size() > 4 || wshape.size() != x.shape.size())
        ctx.fail("only 1-d and 2-d convolutions are supported: x {}, weight {}",
                 shape_text(x.shape), shape_text(wshape));
    // Work in 2-d: a 1-d convolution has height 1.
    const int64_t n = x.shape[0], cin = x.shape[1];
    const int64_t ih = spatial == 2 ? x.shape[2] : 1, iw = x.shape.back();
    const int64_t cout = wshape[0], kh = spatial == 2 ? wshape[2] : 1, kw = wshape.back();
    const int64_t groups = ctx.get_int("groups", 1);
    if (groups <= 0 || cin % groups || cout % groups || wshape[1] != cin / groups)
        ctx.fail("weight {} does not fit {} input channels in {} groups", shape_text(wshape), cin,
                 groups);
    auto pair = [&](std::string_view key, int64_t fallback) {
        std::vector<int64_t> v(spatial, fallback);
        if (ctx.has(key)) v = ctx.get_ints(key);
        if (v.size() != spatial) ctx.fail("{} must have {} entries", key, spatial);
        return spatial == 2 ? v : std::vector<int64_t>{1, v[0]};
    };
    const std::vector<int64_t> stride = pair("strides", 1), dil = pair("dilations", 1);
    const int64_t in_size[2] = {ih, iw}, k_size[2] = {kh, kw};
    int64_t pad_begin[2] = {0, 0}, pad_end[2] = {0, 0}, out_size[2];
    const std::string pad_type = ctx.get_string("pad_type", "valid");
    std::vector<int64_t> pad(2 * spatial, 0);
    if (pad_type == "custom" && ctx.has("pad")) pad = ctx.get_ints("pad");
    if (pad.size() != 2 * spatial) ctx.fail("pad must have {} entries", 2 * spatial);
    for (int d = 0; d < 2; ++d) {
        const int64_t extent = (k_size[d] - 1) * dil[d] + 1;
        if (pad_type == "same" || pad_type == "same_lower") {
            const int64_t out = (in_size[d] + stride[d] - 1) / stride[d];
            const int64_t total = std::max<int64_t>((out - 1) * stride[d] + extent - in_size[d], 0);
            pad_begin[d] = pad_type == "same" ? total / 2 : (total + 1) / 2;
            pad_end[d] = total - pad_begin[d];
        } else if (pad_type == "custom") {
            if (spatial == 2 || d == 1) {
                const size_t p = spatial == 2 ? static_cast<size_t>(2 * d) : 0;
                pad_begin[d] = pad[p];
                pad_end[d] = pad[p + 1];
            }
        } else if (pad_type != "valid") {
            ctx.fail("unknown pad_type {}", pad_type);
        }
        out_size[d] = (in_size[d] + pad_begin[d] + pad_end[d] - extent) / stride[d] + 1;
        if (out_size[d] <= 0) ctx.fail("the kernel does not fit the input");
    }
    const int64_t oh = out_size[0], ow = out_size[1], positions = oh * ow;
    const int64_t cin_g = cin / groups, cout_g = cout / groups, patch = cin_g * kh * kw;
    const WeightMatrix w = matrix_of(ctx, "weight", cout, patch);
    if (w.palettized && groups != 1)
        ctx.fail("palettized weights are read by convolutions of one group");
    const std::vector<float> bias = bias_of(ctx, cout);
    std::vector<int64_t> shape = {n, cout};
    if (spatial == 2) shape.push_back(oh);
    shape.push_back(ow);
    Tensor out = ctx.output(0, shape);
    // A 1x1 kernel that steps by 1 over an unpadded input reads every
    // position's channels as they lie: im2col is a transpose, and at one
    // position (a token in the Neural Engine's [1, C, 1, 1]) not even that,
    // nor is the transpose of the outputs.
    const bool pointwise = kh == 1 && kw == 1 && stride[0] == 1 && stride[1] == 1 &&
                           pad_begin[0] == 0 && pad_begin[1] == 0 && pad_end[0] == 0 &&
                           pad_end[1] == 0;
    if (cin_g == 1 && cout_g == 1 && !w.palettized) {
        // Depthwise (the causal conv of short-conv and delta-rule layers): a
        // few taps per channel, summed where they lie instead of one product
        // per channel on the pool.
        const Depthwise d{{kh, kw},         {stride[0], stride[1]},
                          {dil[0], dil[1]}, {pad_begin[0], pad_begin[1]},
                          {ih, iw},         {oh, ow}};
        constexpr int64_t block = 64;  // planes per task
        const int64_t planes = n * cout;
        ctx.pool().run((planes + block - 1) / block, [&](int64_t task, int) {
            for (int64_t p = task * block; p < std::min(planes, (task + 1) * block); ++p)
                depthwise_plane(d, w.dense, p % cout, x.f.data() + p * ih * iw,
                                bias.empty() ? 0.0f : bias[static_cast<size_t>(p % cout)],
                                out.f.data() + p * positions);
        });
        return ctx.set(0, std::move(out));
    }
    const bool in_place = pointwise && positions == 1;
    std::vector<float> cols(in_place ? 0 : static_cast<size_t>(positions * patch));
    std::vector<float> y(in_place ? 0 : static_cast<size_t>(positions * cout_g));
    for (int64_t b = 0; b < n; ++b)
        for (int64_t g = 0; g < groups; ++g) {
            const float* planes = x.f.data() + (b * cin + g * cin_g) * ih * iw;
            float* dst = out.f.data() + (b * cout + g * cout_g) * positions;
            const float* rows = in_place ? planes : cols.data();
            float* products = in_place ? dst : y.data();
            if (pointwise) {
                if (!in_place) transpose(planes, cin_g, positions, cols.data());
            } else {
                for (int64_t p = 0; p < positions; ++p) {
                    const int64_t oy = p / ow, ox = p % ow;
                    float* col = cols.data() + p * patch;
                    for (int64_t c = 0; c < cin_g; ++c) {
                        const float* plane = planes + c * ih * iw;
                        for (int64_t ky = 0; ky < kh; ++ky)
                            for (int64_t kx = 0; kx < kw; ++kx) {
                                const int64_t iy = oy * stride[0] - pad_begin[0] + ky * dil[0];
                                const int64_t ix = ox * stride[1] - pad_begin[1] + kx * dil[1];
                                const bool inside = iy >= 0 && iy < ih && ix >= 0 && ix < iw;
                                *col++ = inside ? plane[iy * iw + ix] : 0.0f;
                            }
                    }
                }
            }
            if (w.palettized)
                w.multiply(rows, positions, products, ctx.pool());
            else
                kernels::matmul(rows_of(w.dense, g * cout_g, cout_g), rows, positions, products,
                                ctx.pool());
            if (!in_place) transpose(y.data(), positions, cout_g, dst);
            if (bias.empty()) continue;
            for (int64_t o = 0; o < cout_g; ++o)
                for (int64_t p = 0; p < positions; ++p)
                    dst[o * positions + p] += bias[g * cout_g + o];
        }
    ctx.set(0, std::move(out));
}

void matmul(OpContext& ctx) {
    const bool tx = ctx.get_bool("transpose_x", false), ty = ctx.get_bool("transpose_y", false);
    const Slot& ys_slot = ctx.slot("y");
    if (ys_slot.weight && ty && !tx && ys_slot.shape().size() == 2) {
        // x @ Wᵀ with an fp16 weight [N, K] (an LM head): the matmul kernel reads it in place.
        const Tensor& x = float_tensor(ctx, "x");
        const std::vector<int64_t>& ws = ys_slot.shape();
        if (x.shape.size() < 2 || x.shape.back() != ws[1])
            ctx.fail("x {} and y {} do not multiply", shape_text(x.shape), shape_text(ws));
        std::vector<int64_t> shape = x.shape;
        shape.back() = ws[0];
        Tensor out = ctx.output(0, shape);
        matrix_of(ctx, "y", ws[0], ws[1])
            .multiply(x.f.data(), x.numel() / ws[1], out.f.data(), ctx.pool());
        return ctx.set(0, std::move(out));
    }
    const FloatSpan x = ctx.floats("x"), y = ctx.floats("y");
    // numpy: a rank-1 x is a row, a rank-1 y a column; those dimensions are dropped after.
    std::vector<int64_t> xs = x.shape, ys = y.shape;
    if (xs.empty() || ys.empty()) ctx.fail("x and y must have rank 1 or more");
    const bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
    if (x_vec) xs.insert(xs.begin(), 1);
    if (y_vec) ys.push_back(1);
    const int64_t m = tx ? xs.back() : xs[xs.size() - 2], k = tx ? xs[xs.size() - 2] : xs.back();
    const int64_t ky = ty ? ys.back() : ys[ys.size() - 2], nn = ty ? ys[ys.size() - 2] : ys.back();
    if (k != ky)
        ctx.fail("x {} and y {} do not multiply", shape_text(x.shape), shape_text(y.shape));
    const std::vector<int64_t> xb(xs.begin(), xs.end() - 2), yb(ys.begin(), ys.end() - 2);
    const std::vector<int64_t> batch = broadcast_shape(ctx, xb, yb);
    std::vector<int64_t> shape = batch;
    if (!x_vec) shape.push_back(m);
    if (!y_vec) shape.push_back(nn);
    Tensor out = ctx.output(0, shape);
    const std::array<std::vector<int64_t>, 2> strides = {broadcast_strides(xb, batch),
                                                         broadcast_strides(yb, batch)};
    std::vector<std::array<int64_t, 2>> offsets;  // the matrices of every batch entry
    for_each_offset<2>(batch, strides,
                       [&](int64_t, const std::array<int64_t, 2>& at) { offsets.push_back(at); });
    const auto n_batch = static_cast<int64_t>(offsets.size());
    const auto x_of = [&](int64_t b) {
        return x.data + offsets[static_cast<size_t>(b)][0] * m * k;
    };
    const auto y_of = [&](int64_t b) {
        return y.data + offsets[static_cast<size_t>(b)][1] * k * nn;
    };
    if (!tx && ty) {
        // x @ yᵀ (attention scores): rows of y are a weight matrix to the
        // matmul kernel, only as many as the mask leaves (the rest stay 0).
        const Tensor* mask = ctx.column_mask();
        const int64_t used = mask && nn > 0 && !mask->shape.empty() && mask->shape.back() == nn
                                 ? last_column_unlike(mask->f.data(), mask->numel() / nn, nn,
                                                      -std::numeric_limits<float>::infinity())
                                 : nn;
        ctx.pool().run(n_batch, [&](int64_t b, int) {
            thread_local ThreadPool serial(1);  // each entry on one thread
            thread_local std::vector<float> part;
            float* dst = out.f.data() + b * m * nn;
            if (used == nn)
                return kernels::matmul_cached({DType::f32, y_of(b), nn, k}, x_of(b), m, dst,
                                              serial);
            part.resize(static_cast<size_t>(m * used));
            kernels::matmul_cached({DType::f32, y_of(b), used, k}, x_of(b), m, part.data(), serial);
            for (int64_t i = 0; i < m; ++i) std::copy_n(&part[i * used], used, dst + i * nn);
        });
        return ctx.set(0, std::move(out));
    }
    // x @ y (attention's values): rows of y past the last nonzero column of x
    // add nothing (the masked probabilities). Only a cached value of inf or
    // NaN would have made NaN of them.
    const int64_t used =
        tx ? k
           : last_column_unlike(x.data, shape_numel(x.shape) / std::max<int64_t>(k, 1), k, 0.0f);
    if (!tx && m >= 4) {
        // Several rows of x: y transposed first (one pass over it), then the kernel.
        ctx.pool().run(n_batch, [&](int64_t b, int) {
            thread_local ThreadPool serial(1);
            thread_local std::vector<float> yt, xc;
            const float* w = y_of(b);
            yt.resize(static_cast<size_t>(used * nn));
            transpose(w, used, nn, yt.data());
            const float* xs_b = x_of(b);
            if (used < k) {
                xc.resize(static_cast<size_t>(m * used));
                for (int64_t i = 0; i < m; ++i) std::copy_n(xs_b + i * k, used, &xc[i * used]);
                xs_b = xc.data();
            }
            kernels::matmul_cached({DType::f32, yt.data(), nn, used}, xs_b, m,
                                   out.f.data() + b * m * nn, serial);
        });
        return ctx.set(0, std::move(out));
    }
    if (!tx) {
        // A few rows of x: each batch entry's rows of y are read once for all of them.
        ctx.pool().run(n_batch, [&](int64_t b, int) {
            kernels::weighted_rows(x_of(b), m, k, y_of(b), used, nn, out.f.data() + b * m * nn);
        });
        return ctx.set(0, std::move(out));
    }
    // x transposed: one task per output row.
    ctx.pool().run(n_batch * m, [&](int64_t task, int) {
        const int64_t b = task / m, i = task % m;
        const float* a = x_of(b);
        const float* bm = y_of(b);
        float* c = out.f.data() + (b * m + i) * nn;
        if (ty) {  // rows of y are contiguous: dot products
            for (int64_t j = 0; j < nn; ++j) {
                float sum = 0.0f;
                for (int64_t t = 0; t < k; ++t) sum += a[t * m + i] * bm[j * k + t];
                c[j] = sum;
            }
            return;
        }
        // Otherwise accumulate scaled rows of y, reading it in order.
        std::fill(c, c + nn, 0.0f);
        for (int64_t t = 0; t < k; ++t) {
            const float at = a[t * m + i];
            const float* __restrict row = bm + t * nn;
            float* __restrict dst = c;
            for (int64_t j = 0; j < nn; ++j) dst[j] += at * row[j];
        }
    });
    ctx.set(0, std::move(out));
}

// softmax(q kᵀ / sqrt(E) + mask) v over the last two dimensions; a bool mask
// keeps the scores where it is true.
void scaled_dot_product_attention(OpContext& ctx) {
    const Tensor& q = float_tensor(ctx, "query");
    const Tensor& k = float_tensor(ctx, "key");
    const Tensor& v = float_tensor(ctx, "value");
    const size_t rank = q.shape.size();
    if (rank < 3 || k.shape.size() != rank || v.shape.size() != rank)
        ctx.fail("query, key and value must have the same rank of 3 or more");
    const int64_t l = q.shape[rank - 2], e = q.shape[rank - 1];
    const int64_t s = k.shape[rank - 2], ev = v.shape[rank - 1];
    if (k.shape[rank - 1] != e || v.shape[rank - 2] != s)
        ctx.fail("query {}, key {} and value {} do not fit", shape_text(q.shape),
                 shape_text(k.shape), shape_text(v.shape));
    auto batch_of = [&](const Tensor& t) {
        return std::vector<int64_t>(t.shape.begin(), t.shape.end() - 2);
    };
    const std::vector<int64_t> batch =
        broadcast_shape(ctx, batch_of(q), broadcast_shape(ctx, batch_of(k), batch_of(v)));
    std::vector<int64_t> scores_shape = batch;
    scores_shape.push_back(l);
    scores_shape.push_back(s);
    const Tensor* mask = ctx.has("attn_mask") ? &ctx.tensor("attn_mask") : nullptr;
    std::vector<int64_t> mstr(rank, 0);
    if (mask) {
        broadcast_shape(ctx, mask->shape, scores_shape);
        mstr = broadcast_strides(mask->shape, scores_shape);
    }
    std::vector<int64_t> shape = batch;
    shape.push_back(l);
    shape.push_back(ev);
    Tensor out = ctx.output(0, shape);
    const std::array<std::vector<int64_t>, 4> strides = {
        broadcast_strides(batch_of(q), batch), broadcast_strides(batch_of(k), batch),
        broadcast_strides(batch_of(v), batch), std::vector<int64_t>(mstr.begin(), mstr.end() - 2)};
    const float scale = 1.0f / std::sqrt(static_cast<float>(e));
    std::vector<std::array<int64_t, 4>> offsets;
    for_each_offset<4>(batch, strides,
                       [&](int64_t, const std::array<int64_t, 4>& at) { offsets.push_back(at); });
    // One task per query row; each thread keeps its own row of probabilities.
    std::vector<std::vector<float>> probs(static_cast<size_t>(ctx.pool().size()),
                                          std::vector<float>(static_cast<size_t>(s)));
    ctx.pool().run(static_cast<int64_t>(offsets.size()) * l, [&](int64_t task, int thread) {
        const int64_t b = task / l, i = task % l;
        const std::array<int64_t, 4>& at = offsets[static_cast<size_t>(b)];
        const float* qi = q.f.data() + (at[0] * l + i) * e;
        const float* kb = k.f.data() + at[1] * s * e;
        const float* vb = v.f.data() + at[2] * s * ev;
        float* oi = out.f.data() + (b * l + i) * ev;
        std::vector<float>& p = probs[static_cast<size_t>(thread)];
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < s; ++j) {
            float dot = 0.0f;
            for (int64_t t = 0; t < e; ++t) dot += qi[t] * kb[j * e + t];
            float score = dot * scale;
            if (mask) {
                const size_t mk =
                    static_cast<size_t>(at[3] + i * mstr[rank - 2] + j * mstr[rank - 1]);
                if (mask->f.empty())
                    score = mask->i[mk] ? score : -std::numeric_limits<float>::infinity();
                else
                    score += mask->f[mk];
            }
            p[static_cast<size_t>(j)] = score;
            mx = std::max(mx, score);
        }
        double sum = 0.0;
        for (float& pj : p) {
            pj = mx == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(pj - mx);
            sum += pj;
        }
        for (int64_t t = 0; t < ev; ++t) {
            double acc = 0.0;
            for (int64_t j = 0; j < s; ++j) acc += p[static_cast<size_t>(j)] * vb[j * ev + t];
            oi[t] = sum > 0.0 ? static_cast<float>(acc / sum) : 0.0f;
        }
    });
    ctx.set(0, std::move(out));
}

}  // namespace anelm::milexec::ops
