#include <algorithm>
#include <cmath>

#include "exec/mil/ops.h"

namespace anelm::milexec::ops {

namespace {

std::vector<int64_t> reshaped(OpContext& ctx, const std::vector<int64_t>& in) {
    const int64_t rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> out;
    if (ctx.type() == "reshape") {
        const std::vector<int64_t> shape = ctx.get_ints("shape");
        int64_t infer = -1;
        for (size_t d = 0; d < shape.size(); ++d) {
            int64_t v = shape[d];
            if (v == 0) {  // copies the input's dimension at the same position
                if (static_cast<int64_t>(d) >= rank) ctx.fail("shape 0 at {} beyond rank", d);
                v = in[d];
            }
            if (v < -1) ctx.fail("shape {} has a negative dimension", shape_text(shape));
            if (v == -1) {
                if (infer >= 0) ctx.fail("more than one -1 in shape");
                infer = static_cast<int64_t>(d);
                v = 1;  // until the known dimensions are counted
            }
            out.push_back(v);
        }
        if (infer >= 0) {
            const int64_t known = ctx.numel(out);
            out[static_cast<size_t>(infer)] = known ? shape_numel(in) / known : 0;
        }
    } else if (ctx.type() == "squeeze") {
        std::vector<bool> drop(in.size(), false);
        if (ctx.has("axes")) {
            for (int64_t a : ctx.get_ints("axes")) {
                const int64_t d = normalize_axis(ctx, a, rank);
                if (in[static_cast<size_t>(d)] != 1) ctx.fail("axis {} has size {}", a, in[d]);
                drop[static_cast<size_t>(d)] = true;
            }
        } else {
            for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
        }
        for (size_t d = 0; d < in.size(); ++d)
            if (!drop[d]) out.push_back(in[d]);
    } else {  // expand_dims: axes count in the output's rank
        const std::vector<int64_t> axes = ctx.get_ints("axes");
        const int64_t out_rank = rank + static_cast<int64_t>(axes.size());
        std::vector<bool> added(static_cast<size_t>(out_rank), false);
        for (int64_t a : axes) added[static_cast<size_t>(normalize_axis(ctx, a, out_rank))] = true;
        size_t next = 0;
        for (int64_t d = 0; d < out_rank; ++d)
            out.push_back(added[static_cast<size_t>(d)] ? 1 : in[next++]);
    }
    if (ctx.numel(out) != shape_numel(in))
        ctx.fail("cannot reshape {} to {}", shape_text(in), shape_text(out));
    return out;
}

// fill, range_1d and tile take their output's size from values rather than
// from an input's size: more elements than this are refused before allocating.
constexpr int64_t max_computed_elements = int64_t{1} << 31;

Tensor computed_output(OpContext& ctx, const std::vector<int64_t>& shape) {
    if (ctx.numel(shape) > max_computed_elements)
        ctx.fail("output shape {} has more than 2^31 elements", shape_text(shape));
    return ctx.output(0, shape);
}

template <typename T>
void copy_values(const std::vector<T>& from, int64_t at, std::vector<T>& to, int64_t to_at,
                 int64_t n) {
    std::copy_n(from.begin() + at, n, to.begin() + to_at);
}

}  // namespace

void reshape(OpContext& ctx) {
    const Slot& x = ctx.slot("x");
    std::vector<int64_t> shape = reshaped(ctx, x.shape());
    if (x.weight && !x.weight->palettized && ctx.out_dtype(0) == mil::FLOAT16) {
        // A weight stays fp16: a view with the new shape, no copy.
        auto w = std::make_shared<Weight>();
        w->shape = shape;
        w->bits = x.weight->bits;
        w->base = x.weight;
        Slot s;
        s.weight = std::move(w);
        return ctx.set_slot(0, std::move(s));
    }
    Tensor out = ctx.take("x");
    out.shape = std::move(shape);
    out.dtype = ctx.out_dtype(0);
    ctx.set_moved(0, std::move(out));
}

void transpose(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const std::vector<int64_t> perm = ctx.get_ints("perm");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (static_cast<int64_t>(perm.size()) != rank) ctx.fail("perm must have {} entries", rank);
    const std::vector<int64_t> in_strides = strides_of(x.shape);
    std::vector<int64_t> shape(perm.size());
    std::array<std::vector<int64_t>, 1> strides = {std::vector<int64_t>(perm.size())};
    std::vector<bool> seen(perm.size(), false);
    for (size_t d = 0; d < perm.size(); ++d) {
        const int64_t p = normalize_axis(ctx, perm[d], rank);
        if (seen[static_cast<size_t>(p)]) ctx.fail("perm repeats axis {}", p);
        seen[static_cast<size_t>(p)] = true;
        shape[d] = x.shape[static_cast<size_t>(p)];
        strides[0][d] = in_strides[static_cast<size_t>(p)];
    }
    Tensor out = ctx.output(0, shape);
    for_each_offset<1>(shape, strides, [&](int64_t o, const std::array<int64_t, 1>& at) {
        if (x.f.empty())
            out.i[static_cast<size_t>(o)] = x.i[static_cast<size_t>(at[0])];
        else
            out.f[static_cast<size_t>(o)] = x.f[static_cast<size_t>(at[0])];
    });
    ctx.set_moved(0, std::move(out));
}

// interleave: equal shapes, input k's slices along the axis land at k, k + n, k + 2n, ...
namespace {

// A carried state whose layers were updated where they lie
// (CompiledOp::carried_input): when every value is its layer's view of the
// input, the input's buffer is the output.
bool concat_carried(OpContext& ctx) {
    if (ctx.op().carried_input < 0) return false;
    Slot& in = ctx.carried_input();
    const int n = ctx.count("values");
    if (!in.tensor || n == 0 || in.tensor->numel() % n != 0) return false;
    const int64_t size = in.tensor->numel() / n;
    for (int k = 0; k < n; ++k) {
        const Slot& v = ctx.slot("values", k);
        if (!v.block || v.block->state != in.tensor.get() || v.block->offset != k * size ||
            shape_numel(v.block->shape) != size)
            return false;
    }
    Slot out;
    out.tensor = std::move(in.tensor);
    in = Slot{};
    ctx.set_slot(0, std::move(out));
    return true;
}

}  // namespace

void concat(OpContext& ctx) {
    if (concat_carried(ctx)) return;
    const bool interleave = ctx.get_bool("interleave", false);
    const int n = ctx.count("values");
    const Tensor& first = ctx.tensor("values", 0);
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    const int64_t axis = normalize_axis(ctx, ctx.get_int("axis"), rank);
    std::vector<int64_t> shape = first.shape;
    shape[static_cast<size_t>(axis)] = 0;
    std::vector<const Tensor*> parts;
    for (int k = 0; k < n; ++k) {
        const Tensor& t = ctx.tensor("values", k);
        for (int64_t d = 0; d < rank; ++d)
            if (t.shape.size() != first.shape.size() ||
                (d != axis &&
                 t.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)]))
                ctx.fail("values {} and 0 differ in shape: {} and {}", k, shape_text(t.shape),
                         shape_text(first.shape));
        if (t.f.empty() != first.f.empty()) ctx.fail("values differ in type");
        if (interleave && t.shape != first.shape) ctx.fail("interleaved values differ in shape");
        shape[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
        parts.push_back(&t);
    }
    Tensor out = ctx.output(0, shape);
    const AxisSplit s = split_at(shape, axis);
    // Interleaving copies blocks of one slice, one input after the other.
    const int64_t slices = interleave ? first.shape[static_cast<size_t>(axis)] : 1;
    int64_t at = 0;
    for (int64_t j = 0; j < slices; ++j)
        for (const Tensor* t : parts) {
            const int64_t block = (interleave ? 1 : t->shape[static_cast<size_t>(axis)]) * s.inner;
            const int64_t from = j * block, part = slices * block;
            for (int64_t o = 0; o < s.outer; ++o) {
                if (t->f.empty())
                    copy_values(t->i, o * part + from, out.i, o * s.n * s.inner + at, block);
                else
                    copy_values(t->f, o * part + from, out.f, o * s.n * s.inner + at, block);
            }
            at += block;
        }
    ctx.set_moved(0, std::move(out));
}

// Equal shapes joined along a new axis (numpy's stack).
void stack(OpContext& ctx) {
    const int n = ctx.count("values");
    const Tensor& first = ctx.tensor("values", 0);
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    const int64_t axis = normalize_axis(ctx, ctx.get_int("axis"), rank + 1);
    std::vector<int64_t> shape = first.shape;
    shape.insert(shape.begin() + axis, n);
    Tensor out = ctx.output(0, shape);
    const AxisSplit s = split_at(shape, axis);  // s.n == n; each value is s.outer blocks of s.inner
    for (int k = 0; k < n; ++k) {
        const Tensor& t = ctx.tensor("values", k);
        if (t.shape != first.shape || t.f.empty() != out.f.empty())
            ctx.fail("values {} and 0 differ: {} and {}", k, shape_text(t.shape),
                     shape_text(first.shape));
        for (int64_t o = 0; o < s.outer; ++o) {
            const int64_t to = (o * n + k) * s.inner;
            if (t.f.empty())
                copy_values(t.i, o * s.inner, out.i, to, s.inner);
            else
                copy_values(t.f, o * s.inner, out.f, to, s.inner);
        }
    }
    ctx.set_moved(0, std::move(out));
}

void split(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const int64_t axis =
        normalize_axis(ctx, ctx.get_int("axis"), static_cast<int64_t>(x.shape.size()));
    const AxisSplit s = split_at(x.shape, axis);
    std::vector<int64_t> sizes;
    if (ctx.has("split_sizes")) {
        sizes = ctx.get_ints("split_sizes");
    } else {
        const int64_t parts = ctx.get_int("num_splits", ctx.n_outputs());
        if (parts <= 0 || s.n % parts != 0) ctx.fail("{} does not split into {}", s.n, parts);
        sizes.assign(static_cast<size_t>(parts), s.n / parts);
    }
    int64_t total = 0;
    for (int64_t v : sizes) total += v;
    if (total != s.n || static_cast<int>(sizes.size()) != ctx.n_outputs())
        ctx.fail("split sizes do not cover {} with {} outputs", s.n, ctx.n_outputs());
    int64_t at = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
        std::vector<int64_t> shape = x.shape;
        shape[static_cast<size_t>(axis)] = sizes[k];
        Tensor out = ctx.output(static_cast<int>(k), shape);
        const int64_t block = sizes[k] * s.inner;
        for (int64_t o = 0; o < s.outer; ++o) {
            if (x.f.empty())
                copy_values(x.i, o * s.n * s.inner + at, out.i, o * block, block);
            else
                copy_values(x.f, o * s.n * s.inner + at, out.f, o * block, block);
        }
        at += block;
        ctx.set_moved(static_cast<int>(k), std::move(out));
    }
}

void tile(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const std::vector<int64_t> reps = ctx.get_ints("reps");
    if (reps.size() != x.shape.size()) ctx.fail("reps must have {} entries", x.shape.size());
    std::vector<int64_t> shape(x.shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
        if (reps[d] < 0 || __builtin_mul_overflow(x.shape[d], reps[d], &shape[d]))
            ctx.fail("reps {} do not fit x {}", shape_text(reps), shape_text(x.shape));
    Tensor out = computed_output(ctx, shape);
    const std::vector<int64_t> in_strides = strides_of(x.shape);
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t o = 0; o < out.numel(); ++o) {
        int64_t at = 0;
        for (size_t d = 0; d < shape.size(); ++d) at += idx[d] % x.shape[d] * in_strides[d];
        if (x.f.empty())
            out.i[static_cast<size_t>(o)] = x.i[static_cast<size_t>(at)];
        else
            out.f[static_cast<size_t>(o)] = x.f[static_cast<size_t>(at)];
        for (size_t d = shape.size(); d-- > 0;) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
    ctx.set_moved(0, std::move(out));
}

void band_part(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    if (x.shape.size() < 2) ctx.fail("x must have rank 2 or more");
    const int64_t lower = ctx.get_int("lower", -1), upper = ctx.get_int("upper", -1);
    const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    Tensor out = ctx.output(0, x.shape);
    for (int64_t k = 0; k < x.numel(); ++k) {
        const int64_t i = k / cols % rows, j = k % cols;
        const bool keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
        const size_t n = static_cast<size_t>(k);
        if (x.f.empty())
            out.i[n] = keep ? x.i[n] : 0;
        else
            out.f[n] = keep ? x.f[n] : 0.0f;
    }
    ctx.set(0, std::move(out));
}

void fill(OpContext& ctx) {
    const std::vector<int64_t> shape = ctx.get_ints("shape");
    const float value = ctx.get_float("value", 0.0f);
    Tensor out = computed_output(ctx, shape);
    std::fill(out.f.begin(), out.f.end(), value);
    std::fill(out.i.begin(), out.i.end(), static_cast<int32_t>(value));
    ctx.set(0, std::move(out));
}

// start, start + step, ... up to end (exclusive).
void range_1d(OpContext& ctx) {
    const double start = ctx.get_float("start", 0.0f), end = ctx.get_float("end", 0.0f),
                 step = ctx.get_float("step", 1.0f);
    if (step == 0.0) ctx.fail("step is 0");
    const double count = std::max(0.0, std::ceil((end - start) / step));
    // Compared as a double: a count past int64 has no integer value.
    if (count > static_cast<double>(max_computed_elements))
        ctx.fail("{} to {} in steps of {} is more than 2^31 elements", start, end, step);
    const int64_t n = static_cast<int64_t>(count);
    Tensor out = computed_output(ctx, {n});
    for (int64_t k = 0; k < n; ++k) {
        const double v = start + static_cast<double>(k) * step;
        if (out.f.empty())
            out.i[static_cast<size_t>(k)] = static_cast<int32_t>(v);
        else
            out.f[static_cast<size_t>(k)] = static_cast<float>(v);
    }
    ctx.set(0, std::move(out));
}

}  // namespace anelm::milexec::ops
