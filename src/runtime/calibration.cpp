#include "runtime/calibration.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <utility>

#include "base/error.h"
#include "io/json_file.h"
#include "exec/cpu/executor.h"
#include "models/models.h"
#include "passes/hidden_output.h"
#include "quant/quantize_program.h"
#include "tokenizer/utf8.h"

namespace anelm {

std::vector<std::vector<int32_t>> calibration_windows(const std::string& path,
                                                      const Tokenizer& tokenizer, int64_t window,
                                                      int64_t max_tokens) {
    const std::string text = read_text_file(path);
    if (const size_t bad = utf8::find_invalid(text); bad != std::string::npos)
        fail("{}: not UTF-8 text (byte {})", path, bad);
    if (text.find('\0') != std::string::npos)
        fail("{}: not UTF-8 text (a NUL byte at {})", path, text.find('\0'));
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        fail("{}: empty; calibration needs text", path);
    const std::vector<int32_t> tokens = tokenizer.encode(text, true);
    const auto all = static_cast<int64_t>(tokens.size());
    const int64_t n = max_tokens > 0 ? std::min(all, max_tokens) : all;
    if (all < window)
        fail("{}: {} tokens, shorter than one calibration window of {} (--ctx)", path, all, window);
    // As the text begins: with BOS when the tokenizer adds one.
    const bool bos = !tokens.empty() && tokens.front() == tokenizer.bos_id();
    std::vector<std::vector<int32_t>> windows;
    for (int64_t at = 0; at < n; at += window) {
        windows.emplace_back(tokens.begin() + at, tokens.begin() + std::min(n, at + window));
        if (bos) windows.back().front() = tokenizer.bos_id();
    }
    return windows;
}

namespace {

// The statistics of each value some linear layer reads, shared by all of
// them, registered in `calibration` under the weights' names.
std::map<ir::ValueId, std::shared_ptr<quant::InputStats>> register_inputs(
    const ir::Program& program, const ir::Function& fn, quant::ModelCalibration& calibration) {
    std::map<ir::ValueId, std::shared_ptr<quant::InputStats>> by_value;
    for (const ir::Node& node : fn.nodes) {
        if (node.op != ir::Op::linear || node.weight == ir::no_weight) continue;
        const ir::ValueId input = node.inputs.at(0);
        auto& stats = by_value[input];
        if (!stats) stats = std::make_shared<quant::InputStats>(fn.nodes[input].width);
        calibration.stats.emplace(program.weights[node.weight].name, stats);
    }
    return by_value;
}

// Where the walk stops to quantize a job: at the first node reading its
// weight; jobs whose first readers share an input (q, k, v) stop together.
struct Stop {
    size_t node = 0;
    std::vector<size_t> jobs;
};

std::vector<Stop> stops_of(const ir::Program& program, const ir::Function& fn,
                           const std::vector<quant::WeightJob>& jobs) {
    const std::vector<size_t> first = ir::first_readers(program, fn);
    // By the input a linear reads, or the node itself for the others.
    std::map<std::pair<bool, size_t>, Stop> by_key;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const size_t at = first[static_cast<size_t>(jobs[j].weight)];
        if (at >= fn.nodes.size()) continue;  // the head: nothing after it to calibrate
        const ir::Node& node = fn.nodes[at];
        const bool linear = node.op == ir::Op::linear;
        const std::pair<bool, size_t> key{linear, linear ? node.inputs.at(0) : at};
        Stop& stop = by_key.try_emplace(key, Stop{at, {}}).first->second;
        stop.node = std::min(stop.node, at);
        stop.jobs.push_back(j);
    }
    std::vector<Stop> stops;
    for (auto& [key, stop] : by_key) stops.push_back(std::move(stop));
    std::sort(stops.begin(), stops.end(),
              [](const Stop& a, const Stop& b) { return a.node < b.node; });
    return stops;
}

}  // namespace

std::shared_ptr<const quant::ModelCalibration> calibrate(
    const ModelSpec& spec, const WeightStore& weights,
    const std::vector<std::vector<int32_t>>& windows, quant::CalibMethod method, int threads,
    const ProgressFn& progress, const quant::QuantSpec* sequential) {
    std::vector<int32_t> tokens;
    int64_t longest = 0;
    for (const auto& w : windows) {
        longest = std::max<int64_t>(longest, static_cast<int64_t>(w.size()));
        tokens.insert(tokens.end(), w.begin(), w.end());
    }
    if (longest == 0) fail("calibration: no tokens");
    // Every window in one call, each its own sequence, every row up to the
    // final norm: the LM head's input, and no logits.
    ProgramOptions po;
    po.n_ctx = longest;
    po.functions = {{"calibrate", static_cast<int64_t>(tokens.size()), true}};
    ir::Program program = build_program(spec, weights, po);
    ir::Function& fn = program.functions.front();

    auto calibration = std::make_shared<quant::ModelCalibration>();
    calibration->method = method;
    calibration->sequential = sequential != nullptr;
    calibration->tokens = static_cast<int64_t>(tokens.size());
    const auto by_value = register_inputs(program, fn, *calibration);
    passes::hidden_output(fn);

    ThreadPool pool(threads > 0 ? threads : ThreadPool::physical_cores());
    Executor executor(program, pool, Precision::f32, static_cast<int64_t>(windows.size()));
    std::vector<ExecState> states;
    std::vector<ExecSegment> segments;
    states.reserve(windows.size());
    for (const auto& w : windows) {
        states.push_back(executor.make_state());
        segments.push_back({static_cast<int64_t>(w.size()), 0, &states.back()});
    }
    executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
        const auto it = by_value.find(static_cast<ir::ValueId>(&node - fn.nodes.data()));
        if (it == by_value.end()) return;
        it->second->add(value.data(), static_cast<int64_t>(value.size()) / node.width, pool);
    });

    // Sequentially: the walk stops before each weight's first reader and
    // quantizes it, on statistics of inputs the quantized layers before made.
    const std::vector<quant::WeightJob> jobs =
        sequential ? quant::quantization_jobs(program, *sequential) : std::vector<quant::WeightJob>{};
    quant::GramFactorCache factors;
    size_t done = 0;
    const auto run_to = [&](size_t end) {
        executor.run_nodes(0, tokens, segments, done, end);
        done = end;
        if (progress) progress(static_cast<int64_t>(done), static_cast<int64_t>(fn.nodes.size()));
    };
    if (progress) progress(0, static_cast<int64_t>(fn.nodes.size()));
    for (const Stop& stop : stops_of(program, fn, jobs)) {
        run_to(stop.node);
        for (const size_t j : stop.jobs) {
            const quant::WeightJob& job = jobs[j];
            ir::Weight& w = program.weights[job.weight];
            // A tied embedding quantized as the head too is met first as the
            // table, before the head's inputs are seen: plain until then.
            const quant::InputStats* stats = calibration->find(w.name);
            const bool calibrated = job.linear && stats && stats->rows > 0;
            quant::quantize_job(program, job, pool, 0, calibrated ? calibration.get() : nullptr,
                                &factors, sequential->int8_dot);
            if (calibrated)
                calibration->made[w.name] = {w.view.data, job.choice, 0, sequential->int8_dot,
                                             w.quantized};
        }
    }
    run_to(fn.nodes.size());
    executor.set_observer(nullptr);
    return calibration;
}

}  // namespace anelm
