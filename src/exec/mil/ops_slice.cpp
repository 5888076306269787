#include <algorithm>

#include "exec/mil/ops.h"
#include "kernels/kernels.h"

namespace anelm::milexec::ops {

namespace {

// The elements a slice selects: per axis its first index, step and count;
// squeezed axes (count 1) are dropped from the sliced shape.
struct Region {
    std::vector<int64_t> begin, stride, count;
    std::vector<bool> squeeze;

    std::vector<int64_t> shape() const {
        std::vector<int64_t> s;
        for (size_t d = 0; d < count.size(); ++d)
            if (!squeeze[d]) s.push_back(count[d]);
        return s;
    }
};

// slice_by_index and slice_update: begin/end/stride with begin_mask (start at
// the first element), end_mask (run to the last), squeeze_mask (one element,
// axis removed); negative indices count from the end, as in numpy.
Region index_region(OpContext& ctx, const std::vector<int64_t>& shape) {
    const size_t rank = shape.size();
    const std::vector<int64_t> begin = ctx.get_ints("begin"), end = ctx.get_ints("end");
    std::vector<int64_t> stride(rank, 1);
    if (ctx.has("stride")) stride = ctx.get_ints("stride");
    if (begin.size() != rank || end.size() != rank || stride.size() != rank)
        ctx.fail("begin, end and stride must have {} entries", rank);
    const std::vector<bool> begin_mask = ctx.get_bools("begin_mask", rank);
    const std::vector<bool> end_mask = ctx.get_bools("end_mask", rank);
    Region r{{}, stride, {}, ctx.get_bools("squeeze_mask", rank)};
    for (size_t d = 0; d < rank; ++d) {
        const int64_t n = shape[d], s = stride[d];
        if (s == 0) ctx.fail("stride 0 on axis {}", d);
        int64_t b = begin[d] < 0 ? begin[d] + n : begin[d];
        int64_t e = end[d] < 0 ? end[d] + n : end[d];
        int64_t count;
        if (s > 0) {
            if (begin_mask[d]) b = 0;
            if (end_mask[d]) e = n;
            b = std::clamp<int64_t>(b, 0, n);
            e = std::clamp<int64_t>(e, 0, n);
            count = e > b ? (e - b + s - 1) / s : 0;
        } else {
            if (begin_mask[d]) b = n - 1;
            if (end_mask[d]) e = -1;
            b = std::clamp<int64_t>(b, -1, n - 1);
            e = std::clamp<int64_t>(e, -1, n - 1);
            count = b > e ? (b - e - s - 1) / -s : 0;
        }
        if (r.squeeze[d]) {
            if (b < 0 || b >= n) ctx.fail("squeezed axis {} begins outside its {} elements", d, n);
            count = 1;
        }
        r.begin.push_back(b);
        r.count.push_back(count);
    }
    return r;
}

// Calls fn(k, at) for the k-th element of the region, at its offset in a
// row-major tensor of `shape`.
template <typename Fn>
void for_each_in_region(const Region& r, const std::vector<int64_t>& shape, Fn fn) {
    const std::vector<int64_t> own = strides_of(shape);
    int64_t base = 0;
    std::array<std::vector<int64_t>, 1> strides = {std::vector<int64_t>(shape.size())};
    for (size_t d = 0; d < shape.size(); ++d) {
        base += r.begin[d] * own[d];
        strides[0][d] = r.stride[d] * own[d];
    }
    std::vector<int64_t> count = r.count;
    if (shape_numel(count) == 0) return;
    collapse_axes<1>(count, strides);
    if (count.empty()) return fn(size_t{0}, static_cast<size_t>(base));
    // A run of the last axis at a time.
    const int64_t inner = count.back(), step = strides[0].back();
    count.pop_back();
    strides[0].pop_back();
    for_each_offset<1>(count, strides, [&](int64_t k, const std::array<int64_t, 1>& at) {
        for (int64_t j = 0; j < inner; ++j)
            fn(static_cast<size_t>(k * inner + j), static_cast<size_t>(base + at[0] + j * step));
    });
}

void slice_out(OpContext& ctx, const Tensor& x, const Region& r) {
    Tensor out = ctx.output(0, r.shape());
    if (x.f.empty() != out.f.empty()) ctx.fail("output type differs from x's");
    for_each_in_region(r, x.shape, [&](size_t k, size_t at) {
        if (x.f.empty())
            out.i[k] = x.i[at];
        else
            out.f[k] = x.f[at];
    });
    ctx.set_moved(0, std::move(out));
}

}  // namespace

// Where a region is one contiguous run of its tensor (single indices on the
// leading axes, then whole axes after the first partial one, steps of 1): its
// first element's offset, else -1.
int64_t contiguous_offset(const Region& r, const std::vector<int64_t>& shape) {
    const std::vector<int64_t> strides = strides_of(shape);
    int64_t offset = 0;
    bool whole_from_here = false;
    for (size_t d = shape.size(); d-- > 0;) {
        if (r.stride[d] != 1) return -1;
        if (whole_from_here && r.count[d] != 1) return -1;
        if (r.count[d] != shape[d]) whole_from_here = true;
        offset += r.begin[d] * strides[d];
    }
    return offset;
}

// A contiguous slice of a float state (a layer's rows of a KV cache) is read
// in place, as is a carried state's layer (CompiledOp::carried_layer) when it
// is exactly that layer's block; other slices copy just their part.
void slice_by_index(OpContext& ctx) {
    const Slot& xs = ctx.slot("x");
    const int64_t layer = ctx.op().carried_layer;
    const Tensor* whole = layer >= 0 ? xs.tensor.get() : xs.state;
    if (whole && !whole->f.empty()) {
        const Region r = index_region(ctx, xs.shape());
        const int64_t offset = contiguous_offset(r, xs.shape()), size = shape_numel(r.shape());
        if (offset >= 0 &&
            (layer < 0 || (offset == layer * size && size * xs.shape()[0] == whole->numel()))) {
            auto block = std::make_shared<StateBlock>();
            block->state = whole;
            block->offset = offset;
            block->shape = r.shape();
            Slot out;
            out.block = std::move(block);
            return ctx.set_slot(0, std::move(out));
        }
    }
    const Tensor& x = ctx.tensor("x");
    slice_out(ctx, x, index_region(ctx, x.shape));
}

void slice_by_size(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const std::vector<int64_t> begin = ctx.get_ints("begin"), size = ctx.get_ints("size");
    const size_t rank = x.shape.size();
    if (begin.size() != rank || size.size() != rank)
        ctx.fail("begin and size must have {} entries", rank);
    Region r{{}, std::vector<int64_t>(rank, 1), {}, std::vector<bool>(rank, false)};
    for (size_t d = 0; d < rank; ++d) {
        const int64_t b = begin[d] < 0 ? begin[d] + x.shape[d] : begin[d];
        const int64_t n = size[d] < 0 ? x.shape[d] - b : size[d];
        if (b < 0 || n < 0 || b + n > x.shape[d])
            ctx.fail("slice [{}, +{}) outside axis {} of {}", b, n, d, x.shape[d]);
        r.begin.push_back(b);
        r.count.push_back(n);
    }
    slice_out(ctx, x, r);
}

void slice_update(OpContext& ctx) {
    const Slot& xs = ctx.slot("x");
    const Tensor& update = ctx.tensor("update");
    const Region r = index_region(ctx, xs.shape());
    if (update.numel() != shape_numel(r.count))
        ctx.fail("update {} does not fill the slice {}", shape_text(update.shape),
                 shape_text(r.shape()));
    if (is_float_type(update.dtype) != is_float_type(xs.dtype()))
        ctx.fail("update and x differ in type");
    auto write = [&](Tensor& target) {
        for_each_in_region(r, target.shape, [&](size_t k, size_t at) {
            if (target.f.empty())
                target.i[at] = update.i[k];
            else
                target.f[at] = update.f[k];
        });
    };
    if (ctx.in_place() && xs.state) {
        // The state itself is updated; the write_state that follows has nothing to copy.
        Tensor* state = xs.state;
        ctx.detach_readers(state, ctx.slot_index("x"));
        write(*state);
        Slot out;
        out.state = state;
        return ctx.set_slot(0, std::move(out));
    }
    Tensor out = ctx.take("x");
    write(out);
    out.dtype = ctx.out_dtype(0);
    ctx.set_moved(0, std::move(out));
}

// With batch_dims b, the first b dimensions of x and indices pair up: each
// batch entry gathers from its own part of x with its own indices.
void gather(OpContext& ctx) {
    const Slot& xs = ctx.slot("x");
    const Tensor& indices = ctx.tensor("indices");
    if (!indices.f.empty()) ctx.fail("indices must be integers");
    const std::vector<int64_t>& xshape = xs.shape();
    const int64_t axis =
        normalize_axis(ctx, ctx.get_int("axis", 0), static_cast<int64_t>(xshape.size()));
    const int64_t batch_dims = ctx.get_int("batch_dims", 0);
    if (batch_dims < 0 || batch_dims > axis ||
        batch_dims > static_cast<int64_t>(indices.shape.size()) ||
        !std::equal(xshape.begin(), xshape.begin() + batch_dims, indices.shape.begin()))
        ctx.fail("batch_dims {} does not fit x {} and indices {}", batch_dims, shape_text(xshape),
                 shape_text(indices.shape));
    const int64_t batch = shape_numel({xshape.begin(), xshape.begin() + batch_dims});
    const AxisSplit s = split_at(xshape, axis);
    const int64_t outer = s.outer / batch;  // per batch entry
    std::vector<int64_t> shape(xshape.begin(), xshape.begin() + axis);
    shape.insert(shape.end(), indices.shape.begin() + batch_dims, indices.shape.end());
    shape.insert(shape.end(), xshape.begin() + axis + 1, xshape.end());
    Tensor out = ctx.output(0, shape);
    const bool in_place = xs.weight && !xs.weight->palettized;  // rows read from the fp16 bits
    const Tensor* x = in_place ? nullptr : &ctx.tensor("x");
    if (x && x->f.empty() != out.f.empty()) ctx.fail("output type differs from x's");
    const int64_t n_idx = indices.numel() / batch;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < n_idx; ++j) {
                int64_t row = indices.i[static_cast<size_t>(b * n_idx + j)];
                if (row < 0) row += s.n;
                if (row < 0 || row >= s.n) ctx.fail("index {} outside axis of {}", row, s.n);
                const int64_t from = ((b * outer + o) * s.n + row) * s.inner;
                const int64_t to = ((b * outer + o) * n_idx + j) * s.inner;
                if (in_place)
                    kernels::f16_to_f32_row(xs.weight->bits + from, s.inner, out.f.data() + to);
                else if (x->f.empty())
                    std::copy_n(x->i.begin() + from, s.inner, out.i.begin() + to);
                else
                    std::copy_n(x->f.begin() + from, s.inner, out.f.begin() + to);
            }
    ctx.set(0, std::move(out));
}

void gather_along_axis(OpContext& ctx) {
    const Tensor& x = ctx.tensor("x");
    const Tensor& indices = ctx.tensor("indices");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (!indices.f.empty() || static_cast<int64_t>(indices.shape.size()) != rank)
        ctx.fail("indices must be integers of rank {}", rank);
    const int64_t axis = normalize_axis(ctx, ctx.get_int("axis", 0), rank);
    Tensor out = ctx.output(0, indices.shape);
    const std::vector<int64_t> xs = strides_of(x.shape);
    std::vector<int64_t> idx(indices.shape.size(), 0);
    for (int64_t k = 0; k < indices.numel(); ++k) {
        int64_t at = 0;
        for (int64_t d = 0; d < rank; ++d) {
            int64_t v = idx[static_cast<size_t>(d)];
            if (d == axis) {
                v = indices.i[static_cast<size_t>(k)];
                if (v < 0) v += x.shape[static_cast<size_t>(d)];
                if (v < 0 || v >= x.shape[static_cast<size_t>(d)])
                    ctx.fail("index {} outside axis of {}", v, x.shape[static_cast<size_t>(d)]);
            } else if (v >= x.shape[static_cast<size_t>(d)]) {
                ctx.fail("indices {} do not fit x {}", shape_text(indices.shape),
                         shape_text(x.shape));
            }
            at += v * xs[static_cast<size_t>(d)];
        }
        if (x.f.empty())
            out.i[static_cast<size_t>(k)] = x.i[static_cast<size_t>(at)];
        else
            out.f[static_cast<size_t>(k)] = x.f[static_cast<size_t>(at)];
        for (size_t d = idx.size(); d-- > 0;) {
            if (++idx[d] < indices.shape[d]) break;
            idx[d] = 0;
        }
    }
    ctx.set(0, std::move(out));
}

}  // namespace anelm::milexec::ops
