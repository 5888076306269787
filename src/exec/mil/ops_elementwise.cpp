#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/mil/ops.h"
#include "kernels/kernels.h"

namespace anelm::milexec::ops {

namespace {

const Tensor& float_input(OpContext& ctx, std::string_view key) {
    const Tensor& t = ctx.tensor(key);
    if (!is_float_type(t.dtype))
        ctx.fail("{} must be a float tensor, got {}", key, coreml::mil_dtype_name(t.dtype));
    return t;
}

// The output: row(x values, count, output values) over x as one row.
template <typename Row>
void map_row(OpContext& ctx, Row row) {
    const Tensor& x = float_input(ctx, "x");
    Tensor out = ctx.output(0, x.shape);
    if (out.f.size() != x.f.size()) ctx.fail("output must be a float tensor");
    row(x.f.data(), static_cast<int64_t>(x.f.size()), out.f.data());
    ctx.set(0, std::move(out));
}

// Split over the pool in pieces: the scalar library functions (tanh, the
// SiLU of the converted hybrid folders, on every layer's feed-forward) took
// a few percent of a token on one thread. Each value is computed alone, so
// the split changes none.
template <typename F>
void map_floats(OpContext& ctx, F f) {
    map_row(ctx, [&](const float* x, int64_t n, float* y) {
        constexpr int64_t piece = 2048;
        ctx.pool().run((n + piece - 1) / piece, [&](int64_t p, int) {
            const int64_t end = std::min(n, (p + 1) * piece);
            for (int64_t k = p * piece; k < end; ++k) y[k] = f(x[k]);
        });
    });
}

float sigmoid(float v) {
    return 1.0f / (1.0f + std::exp(-v));
}

}  // namespace

void unary(OpContext& ctx) {
    const std::string& t = ctx.type();
    if (t == "sqrt") return map_floats(ctx, [](float v) { return std::sqrt(v); });
    if (t == "rsqrt") {
        const float eps = ctx.get_float("epsilon", 1e-12f);
        return map_floats(ctx, [eps](float v) { return 1.0f / std::sqrt(v + eps); });
    }
    if (t == "exp") return map_floats(ctx, [](float v) { return std::exp(v); });
    if (t == "log") return map_floats(ctx, [](float v) { return std::log(v); });
    if (t == "abs") return map_floats(ctx, [](float v) { return std::fabs(v); });
    if (t == "square") return map_floats(ctx, [](float v) { return v * v; });
    if (t == "relu") return map_floats(ctx, [](float v) { return v > 0.0f ? v : 0.0f; });
    if (t == "sigmoid") return map_row(ctx, kernels::sigmoid);
    if (t == "silu") return map_floats(ctx, [](float v) { return v * sigmoid(v); });
    if (t == "softplus")
        return map_floats(ctx, [](float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); });
    if (t == "tanh") return map_floats(ctx, [](float v) { return std::tanh(v); });
    if (t == "sin") return map_floats(ctx, [](float v) { return std::sin(v); });
    if (t == "cos") return map_floats(ctx, [](float v) { return std::cos(v); });
    if (t == "erf") return map_floats(ctx, [](float v) { return std::erf(v); });
    if (t == "floor") return map_floats(ctx, [](float v) { return std::floor(v); });
    if (t == "ceil") return map_floats(ctx, [](float v) { return std::ceil(v); });
    // Halves go to the even neighbour, as numpy rounds (0.5 becomes 0).
    if (t == "round") return map_floats(ctx, [](float v) { return std::nearbyint(v); });
    if (t == "sign") return map_floats(ctx, [](float v) { return float((v > 0) - (v < 0)); });
    if (t == "inverse") {
        const float eps = ctx.get_float("epsilon", 1e-4f);
        return map_floats(ctx, [eps](float v) { return 1.0f / (v + eps); });
    }
    // gelu
    const std::string mode = ctx.get_string("mode", "EXACT");
    if (mode == "EXACT")
        return map_floats(
            ctx, [](float v) { return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f))); });
    if (mode == "TANH_APPROXIMATION")
        return map_floats(ctx, [](float v) {
            const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
            return 0.5f * v * (1.0f + std::tanh(c * (v + 0.044715f * v * v * v)));
        });
    if (mode == "SIGMOID_APPROXIMATION")
        return map_floats(ctx, [](float v) { return v * sigmoid(1.702f * v); });
    ctx.fail("unknown gelu mode {}", mode);
}

namespace {

// out[o] = f(x[.], y[.]) with numpy broadcasting, a row of the last axis at a time.
template <typename In, typename Out, typename F>
void broadcast2(const std::vector<int64_t>& shape, const Tensor& x, const std::vector<In>& xv,
                const Tensor& y, const std::vector<In>& yv, std::vector<Out>& out, F f) {
    std::array<std::vector<int64_t>, 2> strides = {broadcast_strides(x.shape, shape),
                                                   broadcast_strides(y.shape, shape)};
    if (out.empty()) return;
    std::vector<int64_t> axes = shape;
    collapse_axes<2>(axes, strides);
    if (axes.empty()) {
        out[0] = static_cast<Out>(f(xv[0], yv[0]));
        return;
    }
    const int64_t inner = axes.back(), sx = strides[0].back(), sy = strides[1].back();
    const std::vector<int64_t> rows(axes.begin(), axes.end() - 1);
    for (std::vector<int64_t>& s : strides) s.pop_back();
    for_each_offset<2>(rows, strides, [&](int64_t r, const std::array<int64_t, 2>& at) {
        const In* a = xv.data() + at[0];
        const In* b = yv.data() + at[1];
        Out* o = out.data() + r * inner;
        // The common strides get loops of their own, which the compiler vectorizes.
        if (sx == 1 && sy == 1) {
            for (int64_t j = 0; j < inner; ++j) o[j] = static_cast<Out>(f(a[j], b[j]));
        } else if (sx == 1 && sy == 0) {
            const In bv = b[0];
            for (int64_t j = 0; j < inner; ++j) o[j] = static_cast<Out>(f(a[j], bv));
        } else if (sx == 0 && sy == 1) {
            const In av = a[0];
            for (int64_t j = 0; j < inner; ++j) o[j] = static_cast<Out>(f(av, b[j]));
        } else {
            for (int64_t j = 0; j < inner; ++j) o[j] = static_cast<Out>(f(a[j * sx], b[j * sy]));
        }
    });
}

// Calls run(f) with the scalar function of a binary op type.
template <typename T, typename Run>
void with_binary(const OpContext& ctx, Run run) {
    const std::string& t = ctx.type();
    if (t == "add") return run([](T a, T b) { return a + b; });
    if (t == "sub") return run([](T a, T b) { return a - b; });
    if (t == "mul") return run([](T a, T b) { return a * b; });
    if (t == "real_div") return run([](T a, T b) { return a / b; });
    if (t == "pow") return run([](T a, T b) { return static_cast<T>(std::pow(a, b)); });
    if (t == "maximum") return run([](T a, T b) { return std::max(a, b); });
    if (t == "minimum") return run([](T a, T b) { return std::min(a, b); });
    if (t == "equal") return run([](T a, T b) { return T(a == b); });
    if (t == "not_equal") return run([](T a, T b) { return T(a != b); });
    if (t == "less") return run([](T a, T b) { return T(a < b); });
    if (t == "less_equal") return run([](T a, T b) { return T(a <= b); });
    if (t == "greater") return run([](T a, T b) { return T(a > b); });
    if (t == "greater_equal") return run([](T a, T b) { return T(a >= b); });
    // Rounded toward negative infinity; mod takes the divisor's sign, as numpy.
    if (t == "floor_div") return run([](T a, T b) { return static_cast<T>(std::floor(a / b)); });
    if (t == "mod") return run([](T a, T b) { return static_cast<T>(a - std::floor(a / b) * b); });
    if (t == "logical_and") return run([](T a, T b) { return T(a != 0 && b != 0); });
    if (t == "logical_or") return run([](T a, T b) { return T(a != 0 || b != 0); });
    if (t == "logical_xor") return run([](T a, T b) { return T((a != 0) != (b != 0)); });
    ctx.fail("not a binary op");
}

}  // namespace

void binary(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const Tensor& y = ctx.tensor("y");
    if (is_float_type(x.dtype) != is_float_type(y.dtype))
        ctx.fail("x is {} and y is {}", coreml::mil_dtype_name(x.dtype),
                 coreml::mil_dtype_name(y.dtype));
    const std::vector<int64_t> shape = broadcast_shape(ctx, x.shape, y.shape);
    Tensor out = ctx.output(0, shape);
    const bool out_float = is_float_type(out.dtype);
    if (is_float_type(x.dtype)) {
        with_binary<float>(ctx, [&](auto f) {
            if (out_float)
                broadcast2(shape, x, x.f, y, y.f, out.f, f);
            else
                broadcast2(shape, x, x.f, y, y.f, out.i, f);
        });
    } else {
        // Integers: exact in double for every int32 sum, difference and product that fits.
        std::vector<double> xd(x.i.begin(), x.i.end()), yd(y.i.begin(), y.i.end());
        with_binary<double>(ctx, [&](auto f) {
            if (out_float)
                broadcast2(shape, x, xd, y, yd, out.f, f);
            else
                broadcast2(shape, x, xd, y, yd, out.i, f);
        });
    }
    ctx.set(0, std::move(out));
}

void select(OpContext& ctx) {
    const Tensor& cond = ctx.tensor("cond");
    const Tensor& a = ctx.tensor("a");
    const Tensor& b = ctx.tensor("b");
    if (is_float_type(cond.dtype)) ctx.fail("cond must be bool");
    if (is_float_type(a.dtype) != is_float_type(b.dtype)) ctx.fail("a and b differ in type");
    const std::vector<int64_t> shape =
        broadcast_shape(ctx, cond.shape, broadcast_shape(ctx, a.shape, b.shape));
    Tensor out = ctx.output(0, shape);
    const std::array<std::vector<int64_t>, 3> strides = {broadcast_strides(cond.shape, shape),
                                                         broadcast_strides(a.shape, shape),
                                                         broadcast_strides(b.shape, shape)};
    const bool floats = is_float_type(a.dtype);
    if (floats != is_float_type(out.dtype)) ctx.fail("output type differs from a's");
    for_each_offset<3>(shape, strides, [&](int64_t o, const std::array<int64_t, 3>& at) {
        const bool c = cond.i[static_cast<size_t>(at[0])] != 0;
        const size_t k = static_cast<size_t>(c ? at[1] : at[2]);
        if (floats)
            out.f[static_cast<size_t>(o)] = c ? a.f[k] : b.f[k];
        else
            out.i[static_cast<size_t>(o)] = c ? a.i[k] : b.i[k];
    });
    ctx.set(0, std::move(out));
}

void logical_not(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    Tensor out = ctx.output(0, x.shape);
    if (!x.f.empty() || !out.f.empty()) ctx.fail("x and the output must be bool");
    for (size_t k = 0; k < x.i.size(); ++k) out.i[k] = x.i[k] == 0;
    ctx.set(0, std::move(out));
}

void clip(OpContext& ctx) {
    const float lo = ctx.get_float("alpha", 0.0f);
    const float hi = ctx.get_float("beta", 0.0f);
    map_floats(ctx, [lo, hi](float v) { return std::min(std::max(v, lo), hi); });
}

void cast(OpContext& ctx) {
    const std::string name = ctx.get_string("dtype", "");
    const mil::DataType to = ctx.out_dtype(0);
    if (name != coreml::mil_dtype_name(to))
        ctx.fail("dtype {} but the output is declared {}", name, coreml::mil_dtype_name(to));
    const Tensor& x = ctx.tensor("x");
    Tensor out = ctx.output(0, x.shape);
    for (int64_t k = 0; k < x.numel(); ++k) {
        const size_t j = static_cast<size_t>(k);
        const double v = x.f.empty() ? x.i[j] : x.f[j];
        if (is_float_type(to))
            out.f[j] = static_cast<float>(v);
        else if (to == mil::BOOL)
            out.i[j] = v != 0.0;
        else  // integers truncate toward zero, saturating at the int32 range
            out.i[j] = static_cast<int32_t>(
                std::clamp(std::trunc(std::isnan(v) ? 0.0 : v), -2147483648.0, 2147483647.0));
    }
    ctx.set(0, std::move(out));
}

}  // namespace anelm::milexec::ops
