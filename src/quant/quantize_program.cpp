#include "quant/quantize_program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "base/error.h"
#include "io/tensor_values.h"
#include "kernels/block_kernels.h"
#include "quant/quantize.h"

namespace anelm::quant {

namespace {

// What the spec calls the weight of an embed or linear node; none for others
// and for linear weights outside the three components.
std::optional<Component> node_component(const ir::Program& program, const ir::Node& node) {
    if (node.weight == ir::no_weight) return std::nullopt;
    if (node.op == ir::Op::embed) return Component::embed;
    if (node.op != ir::Op::linear) return std::nullopt;
    const std::optional<Component> c = tensor_component(program.weights[node.weight].name);
    // The embedding matrix used as a linear weight is a tied LM head.
    return c == Component::embed ? Component::head : c;
}

// A block type the CPU kernels do not multiply, as an f32 copy.
void dequantize_in_place(ir::Weight& w) {
    auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(w.view.numel()));
    read_f32(w.view, 0, w.view.numel(), values->data());
    w.view =
        TensorView{DType::f32, w.view.shape, reinterpret_cast<const std::byte*>(values->data())};
    w.storage = std::move(values);
}

}  // namespace

std::vector<WeightJob> quantization_jobs(ir::Program& program, const QuantSpec& spec) {
    // The components each weight is read as, in order of first use.
    std::map<ir::WeightId, std::vector<Component>> uses;
    for (const ir::Function& fn : program.functions)
        for (const ir::Node& node : fn.nodes)
            if (const auto c = node_component(program, node)) {
                auto& cs = uses[node.weight];
                if (std::find(cs.begin(), cs.end(), *c) == cs.end()) cs.push_back(*c);
            }

    const auto choice_of = [&](ir::WeightId id, Component c, const std::string& name) {
        const TensorView& w = program.weights[id].view;
        if (w.shape.size() != 2) return QuantChoice{};
        return spec.choice_for_weight(c, name, w.numel());
    };
    std::vector<WeightJob> jobs;
    for (const auto& [id, components] : uses) {
        const std::string name = program.weights[id].name;
        jobs.push_back({id, components[0], choice_of(id, components[0], name),
                        components[0] != Component::embed});
        const size_t first = jobs.size() - 1;
        for (size_t k = 1; k < components.size(); ++k) {
            const std::string split_name = name + ":" + component_name(components[k]);
            const QuantChoice choice = choice_of(id, components[k], split_name);
            if (choice == jobs[first].choice) {
                jobs[first].linear = true;  // the same bytes serve a linear node too
                continue;
            }
            // Another choice for the same bytes: a weight of its own for those nodes.
            const auto split = static_cast<ir::WeightId>(program.weights.size());
            // A copy keeps the bytes a pass may have rewritten the view into alive.
            ir::Weight own = program.weights[id];
            own.name = split_name;
            own.quantized = nullptr;
            program.weights.push_back(std::move(own));
            for (ir::Function& fn : program.functions)
                for (ir::Node& node : fn.nodes)
                    if (node.weight == id && node_component(program, node) == components[k])
                        node.weight = split;
            jobs.push_back({split, components[k], choice, true});
        }
    }
    std::erase_if(jobs, [](const WeightJob& j) { return j.choice.method == QuantMethod::none; });
    // A GGUF's blocks the spec leaves alone are multiplied as they are stored.
    for (ir::Weight& w : program.weights) {
        if (!spec.run_blocks || w.view.dtype != DType::blocks) continue;
        if (std::any_of(jobs.begin(), jobs.end(),
                        [&](const WeightJob& j) { return &program.weights[j.weight] == &w; }))
            continue;
        if (kernels::block_type_supported(w.view.block_type)) {
            w.quantized = std::make_shared<const QuantizedMatrix>(blocks_matrix(w.view));
        } else {
            dequantize_in_place(w);
        }
    }

    return jobs;
}

void quantize_job(ir::Program& program, const WeightJob& job, ThreadPool& pool, uint64_t seed,
                  const ModelCalibration* calibration, GramFactorCache* factors, bool int8_dot) {
    ir::Weight& w = program.weights[job.weight];
    if (calibration) {
        w.quantized = calibration->made_of(w.name, w.view, job.choice, seed, int8_dot);
        if (w.quantized) return;
    }
    try {
        const Calibration calib =
            calibration ? calibration->for_weight(w.name, job.component, job.linear, factors)
                        : Calibration{};
        QuantizedMatrix q = quantize_matrix(w.view, job.choice, pool, seed, {}, calib);
        if (int8_dot) q.use_int8_dot();
        w.quantized = std::make_shared<const QuantizedMatrix>(std::move(q));
    } catch (const Error& e) {
        fail("{}: {}", w.name, e.what());
    }
}

void quantize_program(ir::Program& program, const QuantSpec& spec, ThreadPool& pool,
                      const ProgressFn& progress, uint64_t seed,
                      const ModelCalibration* calibration) {
    const std::vector<WeightJob> jobs = quantization_jobs(program, spec);
    int64_t total = 0, done = 0;
    for (const WeightJob& job : jobs) total += program.weights[job.weight].view.numel();
    if (progress) progress(0, total);
    GramFactorCache factors;
    for (const WeightJob& job : jobs) {
        quantize_job(program, job, pool, seed, calibration, &factors, spec.int8_dot);
        done += program.weights[job.weight].view.numel();
        if (progress) progress(done, total);
    }
}

}  // namespace anelm::quant
