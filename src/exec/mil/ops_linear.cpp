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

// dst[r][o][p] += bias[first + o] over `rows` blocks of `n` channels of
// `positions` values each; nothing when there is no bias.
void add_bias(const std::vector<float>& bias, int64_t rows, int64_t n, int64_t positions,
              int64_t first, float* dst) {
    if (bias.empty()) return;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < n; ++o)
            for (int64_t p = 0; p < positions; ++p)
                dst[(r * n + o) * positions + p] += bias[static_cast<size_t>(first + o)];
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
    add_bias(bias, rows, n_out, 1, 0, out.f.data());
    ctx.set(0, std::move(out));
}

// A convolution's shapes in 2-d (a 1-d convolution has height 1), from x
// [N, Cin, (H,) W], its weight [Cout, Cin / groups, (kh,) kw] and its
// parameters.
struct ConvShape {
    size_t spatial = 1;
    int64_t n = 1, cin = 1, ih = 1, iw = 1, cout = 1, kh = 1, kw = 1, groups = 1;
    int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pad_begin[2] = {0, 0}, pad_end[2] = {0, 0};
    int64_t oh = 1, ow = 1;

    // A 1x1 kernel stepping by 1 over an unpadded input: every position's
    // channels are read as they lie.
    bool pointwise() const {
        return kh == 1 && kw == 1 && stride[0] == 1 && stride[1] == 1 && pad_begin[0] == 0 &&
               pad_begin[1] == 0 && pad_end[0] == 0 && pad_end[1] == 0;
    }
    std::vector<int64_t> out_shape() const {
        std::vector<int64_t> shape = {n, cout};
        if (spatial == 2) shape.push_back(oh);
        shape.push_back(ow);
        return shape;
    }
};

ConvShape conv_shape(OpContext& ctx, const Tensor& x) {
    const std::vector<int64_t>& wshape = ctx.slot("weight").shape();
    if (x.shape.size() < 3 || x.shape.size() > 4 || wshape.size() != x.shape.size())
        ctx.fail("only 1-d and 2-d convolutions are supported: x {}, weight {}",
                 shape_text(x.shape), shape_text(wshape));
    ConvShape c;
    c.spatial = x.shape.size() - 2;
    const size_t spatial = c.spatial;
    c.n = x.shape[0];
    c.cin = x.shape[1];
    c.ih = spatial == 2 ? x.shape[2] : 1;
    c.iw = x.shape.back();
    c.cout = wshape[0];
    c.kh = spatial == 2 ? wshape[2] : 1;
    c.kw = wshape.back();
    c.groups = ctx.get_int("groups", 1);
    if (c.groups <= 0 || c.cin % c.groups || c.cout % c.groups || wshape[1] != c.cin / c.groups)
        ctx.fail("weight {} does not fit {} input channels in {} groups", shape_text(wshape), c.cin,
                 c.groups);
    auto pair = [&](std::string_view key, int64_t fallback) {
        std::vector<int64_t> v(spatial, fallback);
        if (ctx.has(key)) v = ctx.get_ints(key);
        if (v.size() != spatial) ctx.fail("{} must have {} entries", key, spatial);
        return spatial == 2 ? v : std::vector<int64_t>{1, v[0]};
    };
    const std::vector<int64_t> stride = pair("strides", 1), dil = pair("dilations", 1);
    const int64_t in_size[2] = {c.ih, c.iw}, k_size[2] = {c.kh, c.kw};
    int64_t out_size[2];
    const std::string pad_type = ctx.get_string("pad_type", "valid");
    std::vector<int64_t> pad(2 * spatial, 0);
    if (pad_type == "custom" && ctx.has("pad")) pad = ctx.get_ints("pad");
    if (pad.size() != 2 * spatial) ctx.fail("pad must have {} entries", 2 * spatial);
    for (int d = 0; d < 2; ++d) {
        c.stride[d] = stride[static_cast<size_t>(d)];
        c.dil[d] = dil[static_cast<size_t>(d)];
        const int64_t extent = (k_size[d] - 1) * c.dil[d] + 1;
        if (pad_type == "same" || pad_type == "same_lower") {
            const int64_t out = (in_size[d] + c.stride[d] - 1) / c.stride[d];
            const int64_t total =
                std::max<int64_t>((out - 1) * c.stride[d] + extent - in_size[d], 0);
            c.pad_begin[d] = pad_type == "same" ? total / 2 : (total + 1) / 2;
            c.pad_end[d] = total - c.pad_begin[d];
        } else if (pad_type == "custom") {
            if (spatial == 2 || d == 1) {
                const size_t p = spatial == 2 ? static_cast<size_t>(2 * d) : 0;
                c.pad_begin[d] = pad[p];
                c.pad_end[d] = pad[p + 1];
            }
        } else if (pad_type != "valid") {
            ctx.fail("unknown pad_type {}", pad_type);
        }
        out_size[d] = (in_size[d] + c.pad_begin[d] + c.pad_end[d] - extent) / c.stride[d] + 1;
        if (out_size[d] <= 0) ctx.fail("the kernel does not fit the input");
    }
    c.oh = out_size[0];
    c.ow = out_size[1];
    return c;
}

// x [N, Cin, (H,) W] with weight [Cout, Cin / groups, (kh,) kw]: each output
// position gathers its input patch (im2col) and the patches of a group go
// through the matmul kernel against that group's weight rows.
void conv(OpContext& ctx) {
    const Tensor& x = float_tensor(ctx, "x");
    const ConvShape c = conv_shape(ctx, x);
    const int64_t positions = c.oh * c.ow;
    const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups, patch = cin_g * c.kh * c.kw;
    const WeightMatrix w = matrix_of(ctx, "weight", c.cout, patch);
    if (w.palettized && c.groups != 1)
        ctx.fail("palettized weights are read by convolutions of one group");
    const std::vector<float> bias = bias_of(ctx, c.cout);
    Tensor out = ctx.output(0, c.out_shape());
    if (cin_g == 1 && cout_g == 1 && !w.palettized) {
        // Depthwise (the causal conv of short-conv and delta-rule layers): a
        // few taps per channel, summed where they lie instead of one product
        // per channel on the pool.
        const Depthwise d{{c.kh, c.kw},         {c.stride[0], c.stride[1]},
                          {c.dil[0], c.dil[1]}, {c.pad_begin[0], c.pad_begin[1]},
                          {c.ih, c.iw},         {c.oh, c.ow}};
        constexpr int64_t block = 64;  // planes per task
        const int64_t planes = c.n * c.cout;
        ctx.pool().run((planes + block - 1) / block, [&](int64_t task, int) {
            for (int64_t p = task * block; p < std::min(planes, (task + 1) * block); ++p)
                depthwise_plane(d, w.dense, p % c.cout, x.f.data() + p * c.ih * c.iw,
                                bias.empty() ? 0.0f : bias[static_cast<size_t>(p % c.cout)],
                                out.f.data() + p * positions);
        });
        return ctx.set(0, std::move(out));
    }
    // A pointwise kernel's im2col is a transpose, and at one position (a
    // token in the Neural Engine's [1, C, 1, 1]) not even that, nor is the
    // transpose of the outputs.
    const bool pointwise = c.pointwise();
    const bool in_place = pointwise && positions == 1;
    std::vector<float> cols(in_place ? 0 : static_cast<size_t>(positions * patch));
    std::vector<float> y(in_place ? 0 : static_cast<size_t>(positions * cout_g));
    for (int64_t b = 0; b < c.n; ++b)
        for (int64_t g = 0; g < c.groups; ++g) {
            const float* planes = x.f.data() + (b * c.cin + g * cin_g) * c.ih * c.iw;
            float* dst = out.f.data() + (b * c.cout + g * cout_g) * positions;
            const float* rows = in_place ? planes : cols.data();
            float* products = in_place ? dst : y.data();
            if (pointwise) {
                if (!in_place) transpose(planes, cin_g, positions, cols.data());
            } else {
                for (int64_t p = 0; p < positions; ++p) {
                    const int64_t oy = p / c.ow, ox = p % c.ow;
                    float* col = cols.data() + p * patch;
                    for (int64_t ch = 0; ch < cin_g; ++ch) {
                        const float* plane = planes + ch * c.ih * c.iw;
                        for (int64_t ky = 0; ky < c.kh; ++ky)
                            for (int64_t kx = 0; kx < c.kw; ++kx) {
                                const int64_t iy =
                                    oy * c.stride[0] - c.pad_begin[0] + ky * c.dil[0];
                                const int64_t ix =
                                    ox * c.stride[1] - c.pad_begin[1] + kx * c.dil[1];
                                const bool inside = iy >= 0 && iy < c.ih && ix >= 0 && ix < c.iw;
                                *col++ = inside ? plane[iy * c.iw + ix] : 0.0f;
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
            add_bias(bias, 1, cout_g, positions, g * cout_g, dst);
        }
    ctx.set(0, std::move(out));
}

bool stacked_products(std::span<OpContext* const> ops) {
    // What each op multiplies, all checked before anything is computed.
    struct Product {
        OpContext* ctx;
        kernels::QuantMatrix w;
        std::vector<float> bias;
        std::vector<int64_t> shape;
    };
    std::vector<Product> products;
    const Tensor& x = float_tensor(*ops[0], "x");
    int64_t n_in = 0, rows = 0;
    bool channels_first = false;  // x is [1, Cin, positions] (conv), not [rows, n_in] (linear)
    for (OpContext* ctx : ops) {
        if (ctx->type() != ops[0]->type() || &float_tensor(*ctx, "x") != &x) return false;
        int64_t in = 0, out = 0;
        std::vector<int64_t> shape;
        if (ctx->type() == "conv") {
            const ConvShape c = conv_shape(*ctx, x);
            if (!c.pointwise() || c.groups != 1 || c.n != 1) return false;
            in = c.cin;
            out = c.cout;
            shape = c.out_shape();
            channels_first = true;
        } else if (ctx->type() == "linear" && !x.shape.empty()) {
            in = x.shape.back();
            out = ctx->slot("weight").shape().at(0);
            shape = x.shape;
            shape.back() = out;
        } else {
            return false;
        }
        const WeightMatrix w = matrix_of(*ctx, "weight", out, in);
        if (!w.palettized || in <= 0 || (n_in && in != n_in)) return false;
        n_in = in;
        rows = x.numel() / in;
        products.push_back(
            {ctx, quant_matrix(*w.palettized), bias_of(*ctx, out), std::move(shape)});
    }
    // Token rows of x, then each product's rows, transposed for a conv of
    // several positions.
    const bool transposed = channels_first && rows > 1;
    std::vector<float> x_rows;
    if (transposed) {
        x_rows.resize(static_cast<size_t>(rows * n_in));
        transpose(x.f.data(), n_in, rows, x_rows.data());
    }
    std::vector<Tensor> outs;
    outs.reserve(products.size());
    std::vector<std::vector<float>> y_rows(transposed ? products.size() : 0);
    std::vector<kernels::QuantMatrix> ws;
    std::vector<float*> ys;
    for (size_t k = 0; k < products.size(); ++k) {
        const Product& p = products[k];
        outs.push_back(p.ctx->output(0, p.shape));
        ws.push_back(p.w);
        if (transposed) y_rows[k].resize(static_cast<size_t>(rows * p.w.n_out));
        ys.push_back(transposed ? y_rows[k].data() : outs.back().f.data());
    }
    kernels::quant_matmul_stacked(ws, transposed ? x_rows.data() : x.f.data(), rows, ys,
                                  ops[0]->pool());
    for (size_t k = 0; k < products.size(); ++k) {
        const Product& p = products[k];
        const int64_t n_out = p.w.n_out;
        if (transposed) transpose(y_rows[k].data(), rows, n_out, outs[k].f.data());
        // A conv's outputs are [n_out, positions], a linear's [rows, n_out].
        if (channels_first)
            add_bias(p.bias, 1, n_out, rows, 0, outs[k].f.data());
        else
            add_bias(p.bias, rows, n_out, 1, 0, outs[k].f.data());
        p.ctx->set(0, std::move(outs[k]));
    }
    return true;
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
