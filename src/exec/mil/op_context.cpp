#include "exec/mil/op_context.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace anelm::milexec {

const std::vector<int>& InputMap::at(std::string_view key) const {
    const auto it = find(key);
    if (it == end()) fail("no input {}", key);
    return it->second;
}

std::vector<int>& InputMap::operator[](std::string_view key) {
    for (Entry& e : entries_)
        if (e.first == key) return e.second;
    return entries_.emplace_back(std::string(key), std::vector<int>{}).second;
}

std::string OpContext::where() const {
    return fmt::format("function {}, op {} ({})", function_, op_.name, type());
}

int64_t OpContext::numel(const std::vector<int64_t>& shape) const {
    if (const std::optional<int64_t> n = coreml::element_count(shape)) return *n;
    return shape_numel(shape, where());  // throws; where() only formatted then
}

int OpContext::count(std::string_view key) const {
    auto it = op_.inputs.find(key);
    return it == op_.inputs.end() ? 0 : static_cast<int>(it->second.size());
}

int OpContext::slot_index(std::string_view key) const {
    auto it = op_.inputs.find(key);
    if (it == op_.inputs.end()) fail("missing input {}", key);
    return it->second[0];
}

const Slot& OpContext::value(int index) const {
    return run_value(slots_, constants_, index);
}

const Slot& OpContext::slot(std::string_view key, int k) const {
    auto it = op_.inputs.find(key);
    if (it == op_.inputs.end() || k >= static_cast<int>(it->second.size()))
        fail("missing input {}", key);
    const Slot& s = value(it->second[static_cast<size_t>(k)]);
    if (s.empty()) fail("input {} has no value", key);
    return s;
}

const Tensor& OpContext::tensor(std::string_view key, int k) {
    const Slot& s = slot(key, k);
    if (s.tensor) return *s.tensor;
    if (s.state) return *s.state;
    if (s.weight) return scratch_.emplace_back(weight_to_tensor(*s.weight));
    if (s.block) return scratch_.emplace_back(block_to_tensor(*s.block));
    fail("input {} is a string, not a tensor", key);
}

Tensor OpContext::take(std::string_view key) {
    const int index = slot_index(key);
    Slot& s = slots_[static_cast<size_t>(index)];
    const bool last_use =
        std::find(op_.release.begin(), op_.release.end(), index) != op_.release.end();
    int bindings = 0;
    for (const auto& [name, bound] : op_.inputs)
        bindings += static_cast<int>(std::count(bound.begin(), bound.end(), index));
    // Tensors in slots are created non-const (set, detach_readers, run's inputs):
    // the sole owner may move the values out.
    if (s.tensor && last_use && bindings == 1 && s.tensor.use_count() == 1)
        return std::move(const_cast<Tensor&>(*s.tensor));
    return tensor(key);
}

const Tensor* OpContext::column_mask() const {
    if (op_.column_mask < 0) return nullptr;
    const Slot& s = value(op_.column_mask);
    return s.tensor && !s.tensor->f.empty() ? s.tensor.get() : nullptr;
}

FloatSpan OpContext::floats(std::string_view key) {
    const Slot& s = slot(key);
    if (s.block) return {s.block->data(), s.block->shape};
    const Tensor& t = tensor(key);
    if (t.f.size() != static_cast<size_t>(t.numel())) fail("{} must be a float tensor", key);
    return {t.f.data(), t.shape};
}

int64_t OpContext::get_int(std::string_view key) {
    const Tensor& t = tensor(key);
    if (t.numel() != 1) fail("{} must be a scalar, got {}", key, shape_text(t.shape));
    return t.i.empty() ? static_cast<int64_t>(t.f[0]) : t.i[0];
}

int64_t OpContext::get_int(std::string_view key, int64_t fallback) {
    return has(key) ? get_int(key) : fallback;
}

std::vector<int64_t> OpContext::get_ints(std::string_view key) {
    const Tensor& t = tensor(key);
    if (!t.f.empty()) fail("{} must be integers", key);
    return {t.i.begin(), t.i.end()};
}

bool OpContext::get_bool(std::string_view key, bool fallback) {
    return has(key) ? get_int(key) != 0 : fallback;
}

std::vector<bool> OpContext::get_bools(std::string_view key, size_t n) {
    if (!has(key)) return std::vector<bool>(n, false);
    const Tensor& t = tensor(key);
    if (t.i.size() != n) fail("{} must hold {} values, got {}", key, n, t.numel());
    std::vector<bool> out(n);
    for (size_t k = 0; k < n; ++k) out[k] = t.i[k] != 0;
    return out;
}

float OpContext::get_float(std::string_view key, float fallback) {
    if (!has(key)) return fallback;
    const Tensor& t = tensor(key);
    if (t.numel() != 1) fail("{} must be a scalar, got {}", key, shape_text(t.shape));
    return t.f.empty() ? static_cast<float>(t.i[0]) : t.f[0];
}

std::string OpContext::get_string(std::string_view key, const std::string& fallback) {
    if (!has(key)) return fallback;
    const Slot& s = slot(key);
    if (s.text.empty()) fail("{} must be a string", key);
    return s.text;
}

mil::DataType OpContext::out_dtype(int i) const {
    return op_.declared.at(static_cast<size_t>(i)).dtype;
}

Tensor OpContext::output(int i, std::vector<int64_t> shape) const {
    // Checked before allocating, so a hostile shape fails without taking the memory.
    check_output(i, shape, out_dtype(i));
    numel(shape);
    return make_tensor(out_dtype(i), std::move(shape));
}

void OpContext::check_output(int i, const std::vector<int64_t>& shape, mil::DataType dtype) const {
    const DeclaredOutput& declared = op_.declared.at(static_cast<size_t>(i));
    const std::vector<int64_t>& want = declared.shape;
    bool ok = !declared.ranked || want.size() == shape.size();
    for (size_t d = 0; ok && declared.ranked && d < want.size(); ++d)
        ok = want[d] < 0 || want[d] == shape[d];
    if (!ok)
        fail("output {} has shape {}, declared {}", op_.op->outputs(i).name(), shape_text(shape),
             shape_text(want));
    if (dtype != declared.dtype)
        fail("output {} is {}, declared {}", op_.op->outputs(i).name(),
             coreml::mil_dtype_name(dtype), coreml::mil_dtype_name(declared.dtype));
}

void OpContext::set(int i, Tensor t) {
    check_output(i, t.shape, t.dtype);
    if (t.dtype == mil::FLOAT16) round_half_values(rounding_, t.f);
    store(i, std::move(t));
}

void OpContext::set_moved(int i, Tensor t) {
    if (op_.reads_float_constant) return set(i, std::move(t));
    for (const auto& [key, bound] : op_.inputs)
        for (int s : bound) {
            const Slot& in = value(s);
            if (in.weight ||
                (in.tensor && is_float_type(in.tensor->dtype) && in.tensor->dtype != t.dtype))
                return set(i, std::move(t));
        }
    check_output(i, t.shape, t.dtype);
    store(i, std::move(t));
}

void OpContext::store(int i, Tensor t) {
    Slot s;
    s.tensor = std::make_shared<Tensor>(std::move(t));
    slots_[static_cast<size_t>(op_.outputs[static_cast<size_t>(i)])] = std::move(s);
}

void OpContext::set_slot(int i, Slot s) {
    check_output(i, s.shape(), s.dtype());
    slots_[static_cast<size_t>(op_.outputs[static_cast<size_t>(i)])] = std::move(s);
}

void OpContext::detach_readers(const Tensor* state, int except_slot) {
    for (const int view : state_views_) {
        const auto k = static_cast<size_t>(view);
        Slot& s = slots_[k];
        if (s.block && s.block->state == state) {
            s.tensor = std::make_shared<Tensor>(block_to_tensor(*s.block));
            s.block.reset();
        }
        if (s.state != state || is_state_input_[k] || static_cast<int>(k) == except_slot) continue;
        s.tensor = std::make_shared<Tensor>(*state);
        s.state = nullptr;
    }
}

void round_as(const OpContext& ctx, Rounding rounding, float* v, int64_t n) {
    if (ctx.out_dtype(0) == mil::FLOAT16) round_half_values(rounding, {v, static_cast<size_t>(n)});
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
    if (axis < -rank || axis >= rank) ctx.fail("axis {} out of range for rank {}", axis, rank);
    return axis < 0 ? axis + rank : axis;
}

AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis) {
    AxisSplit s;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
        if (d < axis) s.outer *= shape[d];
        if (d == axis) s.n = shape[d];
        if (d > axis) s.inner *= shape[d];
    }
    return s;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
    return s;
}

std::vector<int64_t> broadcast_shape(const OpContext& ctx, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
    const size_t rank = std::max(a.size(), b.size());
    std::vector<int64_t> out(rank);
    for (size_t d = 0; d < rank; ++d) {
        const int64_t x = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
        const int64_t y = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
        if (x != y && x != 1 && y != 1)
            ctx.fail("shapes {} and {} do not broadcast", shape_text(a), shape_text(b));
        out[d] = x == 1 ? y : x;
    }
    return out;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out) {
    const std::vector<int64_t> own = strides_of(in);
    std::vector<int64_t> s(out.size(), 0);
    for (size_t d = 0; d < in.size(); ++d) {
        const size_t o = d + out.size() - in.size();
        s[o] = in[d] == 1 ? 0 : own[d];
    }
    return s;
}

int64_t last_column_unlike(const float* v, int64_t rows, int64_t cols, float value) {
    int64_t used = 0;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = cols; j-- > used;)
            if (v[r * cols + j] != value) {
                used = j + 1;
                break;
            }
    return used;
}

}  // namespace anelm::milexec
