#include "runtime/calibration.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "io/json_file.h"
#include "passes/hidden_output.h"
#include "quant/output_target.h"
#include "quant/quantize_program.h"
#include "runtime/runtime_program.h"
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

// Where the walk stops to quantize jobs: at the first node reading their
// weight (the end for the LM head, which the pass does not run); the linear
// jobs whose first readers share an input (q, k, v) stop together.
struct Stop {
    size_t node = 0;
    std::optional<ir::ValueId> input;  // what the stop's linear jobs read
    std::vector<size_t> jobs;
};

std::vector<Stop> stops_of(const ir::Program& program, const ir::Function& fn,
                           const std::vector<quant::WeightJob>& jobs) {
    const std::vector<size_t> first = ir::first_readers(program, fn);
    // By the input a linear reads, or the node itself for the others.
    std::map<std::pair<bool, size_t>, Stop> by_key;
    for (size_t j = 0; j < jobs.size(); ++j) {
        size_t at = first[static_cast<size_t>(jobs[j].weight)];
        std::optional<ir::ValueId> input;
        if (at < fn.nodes.size() && fn.nodes[at].op == ir::Op::linear) {
            input = fn.nodes[at].inputs.at(0);
        } else if (at >= fn.nodes.size()) {
            at = fn.nodes.size();
            input = fn.outputs.at(0);  // the head reads the final norm
        }
        Stop& stop =
            by_key.try_emplace({input.has_value(), input ? *input : at}, Stop{at, input, {}})
                .first->second;
        stop.node = std::min(stop.node, at);
        stop.jobs.push_back(j);
    }
    std::vector<Stop> stops;
    for (auto& [key, stop] : by_key) stops.push_back(std::move(stop));
    std::sort(stops.begin(), stops.end(),
              [](const Stop& a, const Stop& b) { return a.node < b.node; });
    return stops;
}

// A program run on every window at once, node range after node range.
class BatchedRun {
public:
    BatchedRun(const ir::Program& program, ThreadPool& pool,
               const std::vector<std::vector<int32_t>>& windows)
        : executor_(program, pool, Precision::f32, static_cast<int64_t>(windows.size())) {
        states_.reserve(windows.size());
        for (const auto& w : windows) {
            states_.push_back(executor_.make_state());
            segments_.push_back({static_cast<int64_t>(w.size()), 0, &states_.back()});
            tokens_.insert(tokens_.end(), w.begin(), w.end());
        }
    }
    Executor& executor() { return executor_; }
    int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }
    // Runs the nodes from where the last call ended to `end`.
    void run_to(size_t end) {
        executor_.run_nodes(0, tokens_, segments_, done_, end);
        done_ = end;
    }

private:
    Executor executor_;
    std::vector<ExecState> states_;
    std::vector<ExecSegment> segments_;
    std::vector<int32_t> tokens_;
    size_t done_ = 0;
};

// Every window in one call, each its own sequence, every row up to the final
// norm: the LM head's input, and no logits.
ir::Program calibration_program(const ModelSpec& spec, const WeightStore& weights,
                                const std::vector<std::vector<int32_t>>& windows) {
    int64_t longest = 0, total = 0;
    for (const auto& w : windows) {
        longest = std::max<int64_t>(longest, static_cast<int64_t>(w.size()));
        total += static_cast<int64_t>(w.size());
    }
    if (longest == 0) fail("calibration: no tokens");
    ProgramOptions po;
    po.n_ctx = longest;
    po.functions = {{"calibrate", total, true}};
    return runtime_program(spec, weights, po);
}

}  // namespace

std::shared_ptr<const quant::ModelCalibration> calibrate(
    const ModelSpec& spec, const WeightStore& weights,
    const std::vector<std::vector<int32_t>>& windows, quant::CalibMethod method, int threads,
    const ProgressFn& progress, const quant::QuantSpec* sequential) {
    ir::Program program = calibration_program(spec, weights, windows);
    ir::Function& fn = program.functions.front();
    auto calibration = std::make_shared<quant::ModelCalibration>();
    calibration->method = method;
    calibration->sequential = sequential != nullptr;
    const auto by_value = register_inputs(program, fn, *calibration);
    // Before the head goes, so that a tied head's own weight is split off;
    // a GGUF's block matrices left alone run as stored (also for convert,
    // whose packages take them dense).
    quant::QuantSpec as_run = sequential ? *sequential : quant::QuantSpec{};
    as_run.run_blocks = true;
    const std::vector<quant::WeightJob> jobs = quant::quantization_jobs(program, as_run);
    passes::hidden_output(fn);

    ThreadPool pool(threads > 0 ? threads : ThreadPool::physical_cores());
    BatchedRun run(program, pool, windows);
    calibration->tokens = run.tokens();
    for (const auto& window : windows)
        for (const int32_t token : window) {
            const auto id = static_cast<size_t>(token);
            if (id >= calibration->token_counts.size()) calibration->token_counts.resize(id + 1);
            ++calibration->token_counts[id];
        }
    const auto value_id = [](const ir::Function& f, const ir::Node& node) {
        return static_cast<ir::ValueId>(&node - f.nodes.data());
    };
    run.executor().set_observer([&](const ir::Node& node, std::span<const float> value) {
        const auto it = by_value.find(value_id(fn, node));
        if (it == by_value.end()) return;
        it->second->add(value.data(), static_cast<int64_t>(value.size()) / node.width, pool);
    });
    const auto report = [&](size_t node) {
        if (progress) progress(static_cast<int64_t>(node), static_cast<int64_t>(fn.nodes.size()));
    };
    report(0);
    if (!sequential) {
        run.run_to(fn.nodes.size());
        report(fn.nodes.size());
        return calibration;
    }

    // Sequentially, beside the f32 model: the walk stops before each weight's
    // first reader and quantizes it on the statistics of the inputs the
    // quantized layers before it made, aimed at the f32 model's outputs
    // (quant/output_target.h) where the input's whole Gram matrix is kept
    // and the calibration has rows enough for it.
    const std::vector<Stop> stops = stops_of(program, fn, jobs);
    std::map<ir::ValueId, std::vector<float>>
        f32_rows;  // a stop's input, until the quantized run meets it
    std::map<ir::ValueId, quant::CrossStats> crosses;
    for (const Stop& stop : stops) {
        if (!stop.input) continue;
        const quant::InputStats& stats = *by_value.at(*stop.input);
        if (stats.has_gram() && run.tokens() >= quant::target_rows_per_input * stats.n_in)
            f32_rows[*stop.input];
    }
    std::optional<ir::Program> f32_program;
    std::optional<BatchedRun> f32_run;
    if (!f32_rows.empty()) {
        f32_program.emplace(calibration_program(spec, weights, windows));
        quant::quantization_jobs(*f32_program, quant::QuantSpec{});  // blocks as stored
        ir::Function& f32_fn = f32_program->functions.front();
        passes::hidden_output(f32_fn);
        f32_run.emplace(*f32_program, pool, windows);
        f32_run->executor().set_observer(
            [&, nodes = &f32_fn](const ir::Node& node, std::span<const float> value) {
                const auto it = f32_rows.find(value_id(*nodes, node));
                if (it != f32_rows.end()) it->second.assign(value.begin(), value.end());
            });
    }
    run.executor().set_observer([&](const ir::Node& node, std::span<const float> value) {
        const ir::ValueId id = value_id(fn, node);
        const auto it = by_value.find(id);
        if (it == by_value.end()) return;
        const int64_t rows = static_cast<int64_t>(value.size()) / node.width;
        it->second->add(value.data(), rows, pool);
        const auto f32 = f32_rows.find(id);
        if (f32 == f32_rows.end()) return;
        crosses.try_emplace(id, node.width)
            .first->second.add(f32->second.data(), value.data(), rows, pool);
        f32_rows.erase(f32);
    });
    quant::GramFactorCache factors;
    for (const Stop& stop : stops) {
        if (f32_run) f32_run->run_to(stop.node);
        run.run_to(stop.node);
        report(stop.node);
        if (const auto c = stop.input ? crosses.find(*stop.input) : crosses.end();
            c != crosses.end()) {
            quant::InputStats& stats = *by_value.at(*stop.input);
            stats.target = quant::target_map(c->second, stats, pool);
            crosses.erase(c);
        }
        for (const size_t j : stop.jobs) {
            const quant::WeightJob& job = jobs[j];
            ir::Weight& w = program.weights[job.weight];
            // A tied embedding quantized as the head too is met first as the
            // table, before the head's inputs are seen: plain until then.
            const quant::InputStats* stats = calibration->find(w.name);
            const bool calibrated = job.linear ? stats && stats->rows > 0 : true;
            quant::quantize_job(program, job, pool, 0, calibrated ? calibration.get() : nullptr,
                                &factors, sequential->int8_dot);
            if (calibrated)
                calibration->made[w.name] = {
                    w.view, w.storage, job.choice, 0, sequential->int8_dot, w.quantized};
        }
    }
    run.run_to(fn.nodes.size());
    report(fn.nodes.size());
    return calibration;
}

}  // namespace anelm
