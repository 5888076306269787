#include "exec/cpu/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "base/error.h"
#include "base/half.h"
#include "io/tensor_values.h"
#include "kernels/kernels.h"
#include "quant/quantized_matrix.h"

namespace anelm {

const char* precision_name(Precision p) {
    switch (p) {
        case Precision::f32:
            return "f32";
        case Precision::f16:
            return "f16";
        case Precision::ane:
            return "ane";
    }
    return "?";
}

Precision precision_from_name(const std::string& name) {
    for (Precision p : {Precision::f32, Precision::f16, Precision::ane})
        if (name == precision_name(p)) return p;
    fail("unknown precision '{}' (expected f32, f16 or ane)", name);
}

namespace {

// y[t, o] = sum_i x[t, i] * W[o, i] on w's storage: ggml blocks or Core ML's codes.
void quant_matmul(const quant::QuantizedMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool) {
    if (w.kind == kernels::QuantKind::blocks)
        kernels::block_matmul(w.block_view(), x, n_tokens, y, pool);
    else
        kernels::quant_matmul(w.view(), x, n_tokens, y, pool);
}

// ys[k] = quant_matmul(*ws[k], x) for matrices of one input, multiplied together
// where the kernels can (not ggml blocks).
void quant_matmul_stacked(std::span<const quant::QuantizedMatrix* const> ws, const float* x,
                          int64_t n_tokens, std::span<float* const> ys, ThreadPool& pool) {
    const bool blocks = std::any_of(ws.begin(), ws.end(), [](const quant::QuantizedMatrix* w) {
        return w->kind == kernels::QuantKind::blocks;
    });
    if (blocks) {
        for (size_t k = 0; k < ws.size(); ++k) quant_matmul(*ws[k], x, n_tokens, ys[k], pool);
        return;
    }
    std::vector<kernels::QuantMatrix> views;
    views.reserve(ws.size());
    for (const quant::QuantizedMatrix* w : ws) views.push_back(w->view());
    kernels::quant_matmul_stacked(views, x, n_tokens, ys, pool);
}

}  // namespace

// Where each value of a function lives in the arena. Buffers are reused once
// the last reader of a value has run.
struct Executor::Plan {
    std::vector<size_t> offset;  // in floats
    size_t arena_floats = 0;
};

namespace {

int64_t max_rows(const ir::Function& fn, const ir::Node& n, int64_t max_segments) {
    return n.per_token ? fn.n_tokens : max_segments;
}

std::vector<size_t> plan_offsets(const ir::Function& fn, int64_t max_segments,
                                 size_t& arena_floats) {
    const size_t n = fn.nodes.size();
    std::vector<size_t> last_use(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (ir::ValueId in : fn.nodes[i].inputs) last_use[in] = std::max(last_use[in], i);
    for (ir::ValueId out : fn.outputs) last_use[out] = std::numeric_limits<size_t>::max();

    struct Slot {
        size_t offset, size;
    };
    std::vector<Slot> free_slots;
    std::vector<size_t> offset(n, 0), size(n, 0);
    arena_floats = 0;
    for (size_t i = 0; i < n; ++i) {
        const ir::Node& node = fn.nodes[i];
        if (node.op == ir::Op::input) continue;  // inputs live outside the arena
        const size_t need = static_cast<size_t>(max_rows(fn, node, max_segments) * node.width);
        // Smallest free slot that fits, else a new one at the end.
        auto best = free_slots.end();
        for (auto it = free_slots.begin(); it != free_slots.end(); ++it)
            if (it->size >= need && (best == free_slots.end() || it->size < best->size)) best = it;
        if (best != free_slots.end()) {
            offset[i] = best->offset;
            size[i] = best->size;
            free_slots.erase(best);
        } else {
            offset[i] = arena_floats;
            size[i] = (need + 15) & ~size_t{15};  // keep rows of buffers 64-byte aligned
            arena_floats += size[i];
        }
        for (ir::ValueId in : node.inputs)
            if (last_use[in] == i && fn.nodes[in].op != ir::Op::input)
                free_slots.push_back({offset[in], size[in]});
    }
    return offset;
}

// Element-wise ops over a prompt's rows (millions of exponentials) go to every
// thread; one token's row is too short to pay for the dispatch.
constexpr int64_t min_parallel_elements = int64_t{1} << 16;

kernels::Matrix as_matrix(const TensorView& w) {
    return {w.dtype, w.data, w.shape[0], w.shape[1]};
}

void row_to_f32(const TensorView& w, int64_t row, float* out) {
    const int64_t width = w.shape.back();
    if (w.dtype == DType::f16) {
        const auto* src = reinterpret_cast<const uint16_t*>(w.data) + row * width;
        kernels::f16_to_f32_row(src, width, out);
        return;
    }
    read_f32(w, row * width, width, out);
}

}  // namespace

Executor::Executor(const ir::Program& program, ThreadPool& pool, Precision precision,
                   int64_t max_segments, KvType kv)
    : program_(program),
      pool_(pool),
      precision_(precision),
      kv_(kv),
      max_segments_(std::max<int64_t>(max_segments, 1)) {
    kv_layouts_.resize(program.states.size());
    for (const ir::Function& fn : program.functions)
        for (const ir::Node& node : fn.nodes) {
            if (node.op != ir::Op::attention) continue;
            const ir::StateDecl& decl = program.states.at(static_cast<size_t>(node.attrs.state));
            KvLayout& l = kv_layouts_[static_cast<size_t>(node.attrs.state)];
            l = {kv, decl.shape[0] / 2, decl.shape[1] * decl.shape[2], decl.shape[3]};
        }
    plans_.assign(program.functions.size(), nullptr);
    weights_f32_.resize(program.weights.size());
    weights_f16_.resize(program.weights.size());
    weight_views_.resize(program.weights.size());
}

Executor::~Executor() {
    for (Plan* p : plans_) delete p;
}

int64_t Executor::n_ctx() const {
    return program_.states.empty() ? 0 : program_.states[0].shape[2];
}

ExecState Executor::make_state() const {
    ExecState state;
    for (size_t s = 0; s < program_.states.size(); ++s) {
        const ir::StateDecl& decl = program_.states[s];
        int64_t n = decl.dtype == DType::f32 ? 2 : 1;
        for (int64_t d : decl.shape) n *= d;
        if (const KvLayout* kv = kv_layout(s)) n = kv->units();
        state.buffers.emplace_back(static_cast<size_t>(n), uint16_t{0});
    }
    state.ends.assign(program_.states.size(), 0);
    return state;
}

const KvLayout* Executor::kv_layout(size_t s) const {
    return kv_layouts_[s].n_layer > 0 ? &kv_layouts_[s] : nullptr;
}

const Executor::Plan& Executor::plan_for(size_t fn) {
    if (!plans_[fn]) {
        auto* plan = new Plan;
        plan->offset = plan_offsets(program_.functions[fn], max_segments_, plan->arena_floats);
        plans_[fn] = plan;
    }
    return *plans_[fn];
}

const std::vector<float>& Executor::weight_f32(ir::WeightId id) {
    std::vector<float>& cached = weights_f32_[static_cast<size_t>(id)];
    if (cached.empty()) {
        const TensorView& w = weight_view(id);
        TensorView flat = w;
        flat.shape = {1, w.numel()};
        cached.resize(static_cast<size_t>(w.numel()));
        row_to_f32(flat, 0, cached.data());
    }
    return cached;
}

const TensorView& Executor::weight_view(ir::WeightId id) {
    const TensorView& stored = program_.weights[static_cast<size_t>(id)].view;
    if (precision_ != Precision::ane || stored.dtype == DType::f16) return stored;
    TensorView& view = weight_views_[static_cast<size_t>(id)];
    if (!view.data) {
        // Converted once, row by row through f32: bf16 and f32 values outside
        // the half range become inf, tiny ones subnormal or zero.
        std::vector<uint16_t>& half = weights_f16_[static_cast<size_t>(id)];
        const int64_t width = stored.shape.back();
        const int64_t rows = stored.numel() / width;
        half.resize(static_cast<size_t>(stored.numel()));
        std::vector<float> row(static_cast<size_t>(width));
        for (int64_t r = 0; r < rows; ++r) {
            row_to_f32(stored, r, row.data());
            kernels::f32_to_f16_row(row.data(), width, half.data() + r * width);
        }
        view = stored;
        view.dtype = DType::f16;
        view.data = reinterpret_cast<const std::byte*>(half.data());
    }
    return view;
}

std::span<const float> Executor::run(size_t fn_index, std::span<const int32_t> tokens, int64_t pos0,
                                     ExecState& state) {
    const ExecSegment one{static_cast<int64_t>(tokens.size()), pos0, &state};
    return run(fn_index, tokens, {&one, 1});
}

std::span<const float> Executor::run(size_t fn_index, std::span<const int32_t> tokens,
                                     std::span<const ExecSegment> segments) {
    return run_nodes(fn_index, tokens, segments, 0, program_.functions.at(fn_index).nodes.size());
}

std::span<const float> Executor::run_nodes(size_t fn_index, std::span<const int32_t> tokens,
                                           int64_t pos0, ExecState& state, size_t first,
                                           size_t end) {
    const ExecSegment one{static_cast<int64_t>(tokens.size()), pos0, &state};
    return run_nodes(fn_index, tokens, {&one, 1}, first, end);
}

std::span<const float> Executor::run_nodes(size_t fn_index, std::span<const int32_t> tokens,
                                           std::span<const ExecSegment> segments, size_t first,
                                           size_t end) {
    const ir::Function& fn = program_.functions.at(fn_index);
    if (first > end || end > fn.nodes.size())
        fail("function {}: nodes {}..{} of {}", fn.name, first, end, fn.nodes.size());
    const auto rows = static_cast<int64_t>(tokens.size());
    if (rows < 1 || rows > fn.n_tokens)
        fail("function {} takes 1 to {} tokens, got {}", fn.name, fn.n_tokens, rows);
    if (segments.empty() || static_cast<int64_t>(segments.size()) > max_segments_)
        fail("function {}: {} sequences at once, the executor takes 1 to {}", fn.name,
             segments.size(), max_segments_);
    int64_t segment_rows = 0;
    positions_.clear();
    for (const ExecSegment& seg : segments) {
        if (seg.rows < 1 || seg.pos0 < 0 || seg.pos0 + seg.rows > n_ctx())
            fail("the context of {} tokens is full (position {} + {} tokens)", n_ctx(), seg.pos0,
                 seg.rows);
        for (int64_t t = 0; t < seg.rows; ++t)
            positions_.push_back(static_cast<int32_t>(seg.pos0 + t));
        segment_rows += seg.rows;
    }
    if (segment_rows != rows)
        fail("function {}: the segments hold {} tokens, the call {}", fn.name, segment_rows, rows);
    segments_.assign(segments.begin(), segments.end());
    check_rings(segments);
    const Plan& plan = plan_for(fn_index);
    if (arena_.size() < plan.arena_floats) arena_.resize(plan.arena_floats);
    ids_.assign(tokens.begin(), tokens.end());

    // cos/sin of every rope table at this call's positions, shared by all layers.
    size_t rope_floats = 0;
    for (const auto& r : program_.ropes)
        rope_floats += r.inv_freq.size() * static_cast<size_t>(rows);
    rope_cos_.resize(rope_floats);
    rope_sin_.resize(rope_floats);
    size_t at = 0;
    for (const auto& r : program_.ropes)
        for (int64_t t = 0; t < rows; ++t)
            for (float f : r.inv_freq) {
                const float angle = static_cast<float>(positions_[t]) * f;
                rope_cos_[at] = std::cos(angle);
                rope_sin_[at++] = std::sin(angle);
            }
    if (precision_ == Precision::ane) {
        kernels::round_to_f16_row(rope_cos_.data(), static_cast<int64_t>(rope_floats));
        kernels::round_to_f16_row(rope_sin_.data(), static_cast<int64_t>(rope_floats));
    }

    stacked_begin_ = stacked_end_ = first;
    for (size_t i = first; i < end; ++i) {
        const ir::Node& node = fn.nodes[i];
        if (node.op == ir::Op::input) continue;
        const int64_t node_rows = node.per_token ? rows : n_segments();
        if (i >= stacked_end_) {
            stacked_begin_ = i;
            stacked_end_ = stack_linears(fn, plan, i, rows);
        }
        run_node(fn, plan, i, rows);
        float* out = arena_.data() + plan.offset[i];
        const int64_t n = node_rows * node.width;
        if (const float s = node.attrs.out_scale; s != 1.0f)
            for (int64_t k = 0; k < n; ++k) out[k] *= s;
        if (precision_ == Precision::ane) {
            store_as_device(node, out, n);
        } else if (precision_ == Precision::f16) {
            kernels::round_to_f16_row(out, n);
        }
        if (observer_) observer_(node, {out, static_cast<size_t>(n)});
    }
    for (const ExecSegment& seg : segments_)
        std::fill(seg.state->ends.begin(), seg.state->ends.end(), seg.pos0 + seg.rows);
    const auto out_index = static_cast<size_t>(fn.outputs.at(0));
    if (out_index >= end) return {};
    const ir::Node& out_node = fn.nodes[out_index];
    const int64_t out_rows = out_node.per_token ? rows : n_segments();
    return {arena_.data() + plan.offset[fn.outputs[0]],
            static_cast<size_t>(out_rows * out_node.width)};
}

void Executor::in_pieces(int64_t n, const std::function<void(int64_t begin, int64_t count)>& fn) {
    if (n < min_parallel_elements || pool_.size() == 1) return fn(0, n);
    const int64_t threads = pool_.size();
    const int64_t piece = ((n + threads - 1) / threads + 15) / 16 * 16;
    pool_.run(threads, [&](int64_t task, int) {
        const int64_t begin = std::min(n, task * piece);
        fn(begin, std::min(n, begin + piece) - begin);
    });
}

size_t Executor::stack_linears(const ir::Function& fn, const Plan& plan, size_t index,
                               int64_t rows) {
    const ir::Node& first = fn.nodes[index];
    const bool quantized = first.op == ir::Op::linear && program_.weights[first.weight].quantized;
    const auto stackable = [&](const ir::Node& node) {
        if (node.op != ir::Op::linear || node.inputs[0] != first.inputs[0] ||
            node.per_token != first.per_token)
            return false;
        const ir::Weight& w = program_.weights[node.weight];
        if (quantized) return w.quantized != nullptr;
        return !w.quantized && weight_view(node.weight).dtype == weight_view(first.weight).dtype;
    };
    if ((!quantized && rows != 1) || !stackable(first)) return index;
    size_t end = index + 1;
    while (end < fn.nodes.size() && stackable(fn.nodes[end])) ++end;
    if (end - index < 2) return index;
    const float* x = arena_.data() + plan.offset[first.inputs[0]];
    std::vector<float*> ys;
    for (size_t k = index; k < end; ++k) ys.push_back(arena_.data() + plan.offset[k]);
    if (quantized) {
        std::vector<const quant::QuantizedMatrix*> ws;
        for (size_t k = index; k < end; ++k)
            ws.push_back(program_.weights[fn.nodes[k].weight].quantized.get());
        quant_matmul_stacked(ws, x, first.per_token ? rows : n_segments(), ys, pool_);
        return end;
    }
    std::vector<kernels::Matrix> ws;
    for (size_t k = index; k < end; ++k) ws.push_back(as_matrix(weight_view(fn.nodes[k].weight)));
    kernels::matvec_stacked(ws, x, ys, pool_);
    return end;
}

void Executor::store_as_device(const ir::Node& node, float* out, int64_t n) {
    const float held =
        node.op == ir::Op::gated_delta ? ir::delta_query_boost * ir::delta_state_boost : 1.0f;
    if (held != 1.0f)
        for (int64_t k = 0; k < n; ++k) out[k] *= held;
    kernels::round_to_f16_row(out, n);
    flush_f16_subnormals(out, n);
    if (held != 1.0f)
        for (int64_t k = 0; k < n; ++k) out[k] /= held;
}

void Executor::run_node(const ir::Function& fn, const Plan& plan, size_t index, int64_t rows) {
    const ir::Node& node = fn.nodes[index];
    float* out = arena_.data() + plan.offset[index];
    auto in = [&](size_t k) -> float* { return arena_.data() + plan.offset[node.inputs[k]]; };
    auto in_node = [&](size_t k) -> const ir::Node& { return fn.nodes[node.inputs[k]]; };
    const int64_t n_rows = node.per_token ? rows : n_segments();
    const int64_t width = node.width;

    switch (node.op) {
        case ir::Op::input:
        case ir::Op::count:
            break;
        case ir::Op::embed: {
            const ir::Weight& w = program_.weights[node.weight];
            const TensorView& table = weight_view(node.weight);
            for (int64_t t = 0; t < n_rows; ++t) {
                const int32_t id = ids_[t];
                if (id < 0 || id >= table.shape[0])
                    fail("token id {} is outside the vocabulary of {}", id, table.shape[0]);
                if (w.quantized) {
                    w.quantized->decode_row(id, out + t * width);
                } else {
                    row_to_f32(table, id, out + t * width);
                }
            }
            break;
        }
        case ir::Op::linear: {
            const ir::Weight& w = program_.weights[node.weight];
            if (index >= stacked_begin_ && index < stacked_end_) {
                // The product is made (stack_linears).
            } else if (w.quantized) {
                quant_matmul(*w.quantized, in(0), n_rows, out, pool_);
            } else {
                kernels::matmul(as_matrix(weight_view(node.weight)), in(0), n_rows, out, pool_);
            }
            if (node.bias != ir::no_weight) {
                const std::vector<float>& bias = weight_f32(node.bias);
                for (int64_t t = 0; t < n_rows; ++t)
                    for (int64_t o = 0; o < width; ++o) out[t * width + o] += bias[o];
            }
            break;
        }
        case ir::Op::rms_norm: {
            if (node.weight == ir::no_weight)
                unit_gain_.resize(static_cast<size_t>(node.attrs.head_dim), 1.0f);
            const std::vector<float>& gain =
                node.weight == ir::no_weight ? unit_gain_ : weight_f32(node.weight);
            const auto group = node.weight == ir::no_weight ? node.attrs.head_dim
                                                            : static_cast<int64_t>(gain.size());
            const float* x = in(0);
            for (int64_t g = 0; g < n_rows * width; g += group)
                kernels::rms_norm(x + g, gain.data(), node.attrs.gain_offset, group, node.attrs.eps,
                                  out + g);
            break;
        }
        case ir::Op::add: {
            const float* a = in(0);
            const float* b = in(1);
            for (int64_t i = 0; i < n_rows * width; ++i) out[i] = a[i] + b[i];
            break;
        }
        case ir::Op::mul: {
            const float* a = in(0);
            const float* b = in(1);
            for (int64_t i = 0; i < n_rows * width; ++i) out[i] = a[i] * b[i];
            break;
        }
        case ir::Op::silu_mul:
            in_pieces(n_rows * width, [&](int64_t i, int64_t n) {
                kernels::silu_mul(in(0) + i, in(1) + i, n, out + i);
            });
            break;
        case ir::Op::gelu_tanh_mul:
            in_pieces(n_rows * width, [&](int64_t i, int64_t n) {
                kernels::gelu_tanh_mul(in(0) + i, in(1) + i, n, out + i);
            });
            break;
        case ir::Op::scale: {
            const float* x = in(0);
            for (int64_t i = 0; i < n_rows * width; ++i) out[i] = x[i] * node.attrs.scale;
            break;
        }
        case ir::Op::softcap: {
            const float* x = in(0);
            const float cap = node.attrs.softcap;
            for (int64_t i = 0; i < n_rows * width; ++i) out[i] = cap * std::tanh(x[i] / cap);
            break;
        }
        case ir::Op::rope: {
            const auto& a = node.attrs;
            const ir::RopeFreqs& freqs = program_.ropes[a.rope];
            size_t base = 0;
            for (int32_t r = 0; r < a.rope; ++r) base += program_.ropes[r].inv_freq.size() * rows;
            const size_t half = freqs.inv_freq.size();
            std::memcpy(out, in(0), static_cast<size_t>(n_rows * width) * sizeof(float));
            const auto rotated = static_cast<int64_t>(2 * half);
            for (int64_t t = 0; t < n_rows; ++t) {
                const float* cos = &rope_cos_[base + t * half];
                const float* sin = &rope_sin_[base + t * half];
                if (rotated == a.head_dim) {
                    kernels::rope(out + t * width, a.n_head, a.head_dim, cos, sin,
                                  freqs.interleaved);
                } else {  // the leading dims of each head only (partial rotary)
                    for (int64_t h = 0; h < a.n_head; ++h)
                        kernels::rope(out + t * width + h * a.head_dim, 1, rotated, cos, sin,
                                      freqs.interleaved);
                }
            }
            break;
        }
        case ir::Op::attention:
            run_attention(node, in(0), in(1), in(2), in_node(1).width, out);
            break;
        case ir::Op::shared_attention:
            run_attention(node, in(0), nullptr, nullptr, 0, out);
            break;
        case ir::Op::columns: {
            const int64_t in_width = in_node(0).width;
            for (int64_t t = 0; t < n_rows; ++t)
                std::memcpy(out + t * width, in(0) + t * in_width + node.attrs.col0,
                            static_cast<size_t>(width) * sizeof(float));
            break;
        }
        case ir::Op::causal_conv:
            run_causal_conv(node, in(0), out);
            break;
        case ir::Op::silu:
            for (int64_t i = 0; i < n_rows * width; ++i) {
                const float x = in(0)[i];
                out[i] = x / (1.0f + std::exp(-x));
            }
            break;
        case ir::Op::sigmoid_mul:
            for (int64_t i = 0; i < n_rows * width; ++i)
                out[i] = in(1)[i] / (1.0f + std::exp(-in(0)[i]));
            break;
        case ir::Op::gated_delta:
            run_gated_delta(node, in(0), in(1), in(2), out);
            break;
        case ir::Op::last_row: {
            int64_t end = 0;
            for (size_t k = 0; k < segments_.size(); ++k) {
                end += segments_[k].rows;
                std::memcpy(out + static_cast<int64_t>(k) * width, in(0) + (end - 1) * width,
                            static_cast<size_t>(width) * sizeof(float));
            }
            break;
        }
    }
}

// Each segment writes its K/V rows into its own cache and attends over it;
// the segments' attention runs as one dispatch.
void Executor::run_attention(const ir::Node& node, const float* q, const float* k, const float* v,
                             int64_t kv_width, float* out) {
    const auto& a = node.attrs;
    const auto& decl = program_.states[a.state];
    const int64_t n_ctx = decl.shape[2];
    const int64_t q_width = a.n_head * a.head_dim;
    const KvLayout& kv = *kv_layout(static_cast<size_t>(a.state));
    attention_calls_.clear();
    int64_t row0 = 0;
    for (const ExecSegment& seg : segments_) {
        uint16_t* cache = seg.state->buffers[a.state].data();
        for (int64_t t = 0; k && t < seg.rows; ++t)
            for (int64_t h = 0; h < a.n_head_kv; ++h) {
                const int64_t src = (row0 + t) * kv_width + h * a.head_dim;
                kv.write(cache, a.layer, h * n_ctx + seg.pos0 + t, k + src, v + src);
            }
        kernels::AttentionArgs args;
        args.q = q + row0 * q_width;
        kv.point(cache, a.layer, args);
        args.out = out + row0 * node.width;
        args.n_tokens = seg.rows;
        args.n_head = a.n_head;
        args.n_head_kv = a.n_head_kv;
        args.head_dim = a.head_dim;
        args.n_ctx = n_ctx;
        args.pos0 = seg.pos0;
        args.scale = a.scale;
        args.window = a.window;
        args.softcap = a.softcap;
        args.f16_scores = precision_ == Precision::ane;
        attention_calls_.push_back(args);
        row0 += seg.rows;
    }
    kernels::attention_batch(attention_calls_, pool_);
}

}  // namespace anelm
