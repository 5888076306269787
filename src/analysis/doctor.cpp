#include "analysis/doctor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/half.h"
#include "io/tensor_values.h"
#include "passes/fp16_scale.h"
#include "runtime/runtime_program.h"

namespace anelm {

namespace {

constexpr double half_max = passes::f16_max;

int32_t layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    return static_cast<int32_t>(std::strtol(name.c_str() + 4, nullptr, 10));
}

double peak_of(std::span<const float> v) {
    double peak = 0;
    for (float x : v) {
        if (std::isnan(x)) return std::numeric_limits<double>::infinity();
        peak = std::max(peak, static_cast<double>(std::abs(x)));
    }
    return peak;
}

// max |a - b| / max |b|; infinite when a holds inf or NaN.
double relative_error(std::span<const float> a, std::span<const float> b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
        diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
        scale = std::max(scale, static_cast<double>(std::abs(b[i])));
    }
    return scale > 0 ? diff / scale : diff;
}

size_t argmax(std::span<const float> v) {
    return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// What each node of the function is, for the report.
struct NodeInfo {
    std::string kind;
    bool feeds_norm = false;
    int32_t layer = -1;
};

std::vector<NodeInfo> describe(const ir::Function& fn) {
    std::vector<NodeInfo> info(fn.nodes.size());
    for (const ir::Node& node : fn.nodes)
        if (node.op == ir::Op::rms_norm)
            info[static_cast<size_t>(node.inputs[0])].feeds_norm = true;
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
        const ir::Node& node = fn.nodes[i];
        const std::string_view op = ir::op_name(node.op);
        NodeInfo& n = info[i];
        n.layer = layer_of(node.name);
        if (node.op == ir::Op::embed || node.op == ir::Op::add || node.op == ir::Op::last_row)
            n.kind = "residual";
        else if (op.ends_with("_mul") && node.op != ir::Op::mul)
            n.kind = "mlp_hidden";  // silu(gate) * up and its GELU twin
        else if (n.feeds_norm)
            n.kind = "norm_input";
        else
            n.kind = "other";
    }
    return info;
}

// Attention, and attention over another layer's keys (Gemma 4's sharing layers).
bool reads_keys(ir::Op op) {
    return op == ir::Op::attention || op == ir::Op::shared_attention;
}

// The largest |q · k| * scale over the causal pairs of one attention node, from
// its query value and the keys the node has just written to the f16 cache.
double attention_score_peak(const ir::Program& program, const ir::Node& attn,
                            std::span<const float> q, int64_t rows, const ExecState& state) {
    const ir::Attrs& a = attn.attrs;
    const ir::StateDecl& decl = program.states[static_cast<size_t>(a.state)];
    const int64_t n_ctx = decl.shape[2];
    const int64_t slot = a.n_head_kv * n_ctx * a.head_dim;
    const uint16_t* keys = state.buffers[static_cast<size_t>(a.state)].data() + slot * a.layer;
    const int64_t group = a.n_head / a.n_head_kv;
    std::vector<float> k(static_cast<size_t>(rows * a.head_dim));
    double peak = 0;
    for (int64_t kv = 0; kv < a.n_head_kv; ++kv) {
        for (int64_t j = 0; j < rows * a.head_dim; ++j)
            k[j] = f16_to_f32(keys[kv * n_ctx * a.head_dim + j]);
        for (int64_t t = 0; t < rows; ++t)
            for (int64_t h = kv * group; h < (kv + 1) * group; ++h) {
                const float* qv = q.data() + t * a.n_head * a.head_dim + h * a.head_dim;
                for (int64_t j = 0; j <= t; ++j) {
                    float dot = 0;
                    for (int64_t d = 0; d < a.head_dim; ++d) dot += qv[d] * k[j * a.head_dim + d];
                    peak = std::max(peak, std::abs(static_cast<double>(dot) * a.scale));
                }
            }
    }
    return peak;
}

// Compares a device run's logits with f32's, row by row.
void compare_logits(std::span<const float> device, std::span<const float> f32, int64_t n_vocab,
                    DeviceRun& run) {
    const int64_t rows = static_cast<int64_t>(f32.size()) / n_vocab;
    for (int64_t r = 0; r < rows; ++r) {
        const auto d = device.subspan(r * n_vocab, n_vocab);
        const auto f = f32.subspan(r * n_vocab, n_vocab);
        const double error = relative_error(d, f);
        if (!std::isfinite(error)) run.non_finite = true;
        run.max_logit_error = std::max(run.max_logit_error, error);
        run.top1_agree += std::isfinite(error) && argmax(d) == argmax(f);
        ++run.tokens;
    }
}

class Doctor {
public:
    Doctor(const ModelSpec& spec, const WeightStore& weights,
           const std::vector<DoctorPrompt>& prompts, const DoctorOptions& options,
           const ProgressFn& progress)
        : spec_(spec),
          prompts_(prompts),
          options_(options),
          progress_(progress),
          pool_(options.threads > 0 ? options.threads : ThreadPool::physical_cores()) {
        int64_t longest = 0;
        for (const DoctorPrompt& p : prompts) {
            if (p.tokens.empty()) fail("doctor: prompt {} has no tokens", p.name);
            longest = std::max<int64_t>(longest, static_cast<int64_t>(p.tokens.size()));
        }
        if (prompts.empty()) fail("doctor: no calibration prompts");
        ProgramOptions po;
        po.n_ctx = longest;
        po.functions = {{"prefill", longest, true}};
        plain_ = runtime_program(spec, weights, po);
        info_ = describe(plain_.functions[0]);
        const auto& nodes = plain_.functions[0].nodes;
        value_of_node_.assign(nodes.size(), 0);
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i].op == ir::Op::input) continue;  // never observed
            report_.values.push_back({nodes[i].name, std::string(ir::op_name(nodes[i].op)),
                                      info_[i].kind, info_[i].layer});
            value_of_node_[i] = report_.values.size() - 1;
            if (reads_keys(nodes[i].op)) {
                report_.values.push_back({layer_prefix(nodes[i].name) + "attn_scores", "attention",
                                          "attention_scores", info_[i].layer});
            }
            if (nodes[i].op == ir::Op::gated_delta) {
                const std::string prefix = layer_prefix(nodes[i].name);
                for (const auto& [name, kind] : {std::pair{"softplus_input", "softplus_input"},
                                                 {"delta_state", "recurrent_state"},
                                                 {"delta_state_boosted", "recurrent_state"}})
                    report_.values.push_back(
                        {prefix + name, "gated_delta", kind, info_[i].layer, -half_max});
            }
        }
        tiny_.assign(report_.values.size(), {});
        report_.layers.resize(static_cast<size_t>(spec.n_layer));
        for (int32_t l = 0; l < spec.n_layer; ++l) report_.layers[l].layer = l;
    }

    // The f32 runs alone: the peaks and alpha.
    float residual_scale() {
        Executor f32(plain_, pool_, Precision::f32);
        for (const DoctorPrompt& prompt : prompts_) measure(f32, prompt);
        finish_peaks();
        return passes::residual_scale_for_peak(report_.residual_peak, options_.target);
    }

    DoctorReport run() {
        const auto start = std::chrono::steady_clock::now();
        total_runs_ = 3 * static_cast<int64_t>(prompts_.size());
        Executor f32(plain_, pool_, Precision::f32);
        Executor device(plain_, pool_, options_.device);
        std::vector<std::vector<float>> f32_logits;
        for (const DoctorPrompt& prompt : prompts_) {
            f32_logits.push_back(measure(f32, prompt));
            check_device(device, prompt, f32_logits.back());
        }
        finish_peaks();

        report_.alpha = passes::residual_scale_for_peak(report_.residual_peak, options_.target);
        ir::Program scaled = plain_;
        passes::scale_residual(scaled, report_.alpha);
        Executor scaled_device(scaled, pool_, options_.device);
        report_.scaled.alpha = report_.alpha;
        for (size_t p = 0; p < prompts_.size(); ++p)
            run_scaled(scaled_device, prompts_[p], f32_logits[p]);

        for (const DoctorPrompt& p : prompts_) {
            report_.prompts.push_back(p.name);
            report_.tokens += static_cast<int64_t>(p.tokens.size());
        }
        report_.architecture = arch_name(spec_.arch);
        report_.n_layer = spec_.n_layer;
        report_.device_precision = precision_name(options_.device);
        report_.target = options_.target;
        report_.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return report_;
    }

private:
    static std::string layer_prefix(const std::string& name) {
        const size_t dot = name.find('.', 4);
        return name.rfind("blk.", 0) == 0 && dot != std::string::npos ? name.substr(0, dot + 1)
                                                                      : "";
    }

    // The index of an observed node in the function `executor` runs (plain_ or
    // its scaled copy: both have the same nodes in the same order).
    static size_t node_index(const Executor& executor, const ir::Node& node) {
        return static_cast<size_t>(&node - executor.program().functions[0].nodes.data());
    }

    void step() {
        if (progress_) progress_(++runs_done_, total_runs_);
    }

    // The f32 run: peaks of every value and of the attention scores; keeps each
    // value for the device run to compare against. Returns the logits.
    std::vector<float> measure(Executor& executor, const DoctorPrompt& prompt) {
        const auto& nodes = plain_.functions[0].nodes;
        outputs_.assign(nodes.size(), {});
        ExecState state = executor.make_state();
        const auto rows = static_cast<int64_t>(prompt.tokens.size());
        executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
            const size_t i = node_index(executor, node);
            ValuePeak& v = report_.values[value_of_node_[i]];
            v.peak = std::max(v.peak, peak_of(value));
            count_tiny(value_of_node_[i], value, 1.0f);
            outputs_[i].assign(value.begin(), value.end());
            if (node.op == ir::Op::gated_delta) measure_delta(node, value_of_node_[i], rows, state);
            if (reads_keys(node.op)) {
                const auto& q = outputs_[static_cast<size_t>(node.inputs[0])];
                ValuePeak& scores = report_.values[value_of_node_[i] + 1];
                scores.peak =
                    std::max(scores.peak, attention_score_peak(plain_, node, q, rows, state));
            }
        });
        const auto logits = executor.run(0, prompt.tokens, 0, state);
        step();
        return {logits.begin(), logits.end()};
    }

    // Nonzero values that a half would hold as subnormals, once times `boost`.
    void count_tiny(size_t value, std::span<const float> v, float boost) {
        auto& [nonzero, tiny] = tiny_[value];
        for (float x : v) {
            const float a = std::abs(x) * boost;
            nonzero += a > 0;
            tiny += a > 0 && a < f16_min_normal;
        }
    }

    // A delta rule's hazards: how far its softplus input reaches (a + dt_bias),
    // and the state after the prompt, as an fp16 state would hold it and as
    // the ANE lowering stores it (boosted).
    void measure_delta(const ir::Node& node, size_t value, int64_t rows, const ExecState& state) {
        const ir::Attrs& a = node.attrs;
        const std::vector<float>& alpha = outputs_[static_cast<size_t>(node.inputs[2])];
        std::vector<float> dt_bias(static_cast<size_t>(a.n_head));
        read_f32(plain_.weights[static_cast<size_t>(node.bias)].view, 0, a.n_head, dt_bias.data());
        ValuePeak& softplus = report_.values[value + 1];
        for (size_t k = 0; k < alpha.size(); ++k)
            softplus.peak = std::max(softplus.peak,
                                     static_cast<double>(alpha[k] + dt_bias[k % dt_bias.size()]));
        const std::vector<int64_t>& shape = plain_.states[static_cast<size_t>(a.state)].shape;
        const int64_t slots = shape[2], per = shape[3];
        const auto* ring =
            reinterpret_cast<const float*>(state.buffers[static_cast<size_t>(a.state)].data());
        const std::span<const float> last(ring + (a.layer * slots + (rows - 1) % slots) * per,
                                          static_cast<size_t>(per));
        for (size_t k : {value + 2, value + 3}) {
            report_.values[k].peak = std::max(report_.values[k].peak, peak_of(last));
            count_tiny(k, last, k == value + 3 ? ir::delta_state_boost : 1.0f);
        }
    }

    // The unscaled device run: the first value whose relative error passes the
    // threshold, and how the logits compare.
    void check_device(Executor& executor, const DoctorPrompt& prompt, std::span<const float> f32) {
        DeviceRun& run = report_.unscaled;
        bool found = false;
        executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
            const size_t i = node_index(executor, node);
            if (found || (first_node_ >= 0 && static_cast<int64_t>(i) >= first_node_)) return;
            const double error = relative_error(value, outputs_[i]);
            if (!(error > options_.divergence)) return;
            found = true;
            first_node_ = static_cast<int64_t>(i);
            run.first_value = node.name;
            run.first_op = std::string(ir::op_name(node.op));
            run.first_layer = info_[i].layer;
            run.first_prompt = prompt.name;
            run.first_error = error;
        });
        ExecState state = executor.make_state();
        compare_logits(executor.run(0, prompt.tokens, 0, state), f32, spec_.n_vocab, run);
        outputs_.clear();
        step();
    }

    void run_scaled(Executor& executor, const DoctorPrompt& prompt, std::span<const float> f32) {
        executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
            const size_t i = node_index(executor, node);
            if (info_[i].layer < 0) return;
            LayerPeaks& l = report_.layers[static_cast<size_t>(info_[i].layer)];
            const double peak = peak_of(value);
            l.all_scaled = std::max(l.all_scaled, peak);
            if (info_[i].kind == "residual") l.residual_scaled = std::max(l.residual_scaled, peak);
        });
        ExecState state = executor.make_state();
        compare_logits(executor.run(0, prompt.tokens, 0, state), f32, spec_.n_vocab,
                       report_.scaled);
        step();
    }

    // Flags, per-layer maxima and the residual peak from the f32 measurements.
    void finish_peaks() {
        const auto& nodes = plain_.functions[0].nodes;
        for (size_t k = 0; k < report_.values.size(); ++k) {
            ValuePeak& v = report_.values[k];
            const auto [nonzero, tiny] = tiny_[k];
            v.subnormal = nonzero > 0 ? double(tiny) / double(nonzero) : 0.0;
            if (v.kind == "softplus_input") continue;  // a signed reach, not a magnitude
            v.overflows = v.peak > half_max;
            v.at_risk = v.peak > half_max / 4;
            if (v.kind == "residual")
                report_.residual_peak = std::max(report_.residual_peak, v.peak);
            if (v.layer < 0 || v.layer >= spec_.n_layer) continue;
            LayerPeaks& l = report_.layers[static_cast<size_t>(v.layer)];
            double* slot = v.kind == "residual"           ? &l.residual
                           : v.kind == "mlp_hidden"       ? &l.mlp_hidden
                           : v.kind == "attention_scores" ? &l.attention_scores
                                                          : nullptr;
            if (slot) *slot = std::max(*slot, v.peak);
        }
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (!info_[i].feeds_norm || info_[i].layer < 0) continue;
            LayerPeaks& l = report_.layers[static_cast<size_t>(info_[i].layer)];
            l.norm_input = std::max(l.norm_input, report_.values[value_of_node_[i]].peak);
        }
    }

    const ModelSpec& spec_;
    std::vector<std::pair<int64_t, int64_t>> tiny_;  // per value: nonzero, subnormal-sized
    const std::vector<DoctorPrompt>& prompts_;
    DoctorOptions options_;
    ProgressFn progress_;
    ThreadPool pool_;
    ir::Program plain_;
    std::vector<NodeInfo> info_;
    std::vector<size_t> value_of_node_;        // node index -> index into report_.values
    std::vector<std::vector<float>> outputs_;  // the f32 run's values, per node
    int64_t first_node_ = -1;
    int64_t runs_done_ = 0, total_runs_ = 0;
    DoctorReport report_;
};

}  // namespace

DoctorReport run_doctor(const ModelSpec& spec, const WeightStore& weights,
                        const std::vector<DoctorPrompt>& prompts, const DoctorOptions& options,
                        const ProgressFn& progress) {
    return Doctor(spec, weights, prompts, options, progress).run();
}

float measure_residual_scale(const ModelSpec& spec, const WeightStore& weights,
                             const std::vector<DoctorPrompt>& prompts,
                             const DoctorOptions& options) {
    return Doctor(spec, weights, prompts, options, {}).residual_scale();
}

}  // namespace anelm
