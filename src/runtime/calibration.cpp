#include "runtime/calibration.h"

#include <fmt/core.h>

#include <map>

#include "base/error.h"
#include "io/json_file.h"
#include "runtime/session.h"
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

std::shared_ptr<const quant::ModelCalibration> calibrate(
    const ModelSpec& spec, const WeightStore& weights,
    const std::vector<std::vector<int32_t>>& windows, quant::CalibMethod method, int threads,
    const ProgressFn& progress) {
    int64_t longest = 0, total = 0;
    for (const auto& w : windows) {
        longest = std::max<int64_t>(longest, static_cast<int64_t>(w.size()));
        total += static_cast<int64_t>(w.size());
    }
    if (longest == 0) fail("calibration: no tokens");
    SessionOptions so;
    so.n_ctx = longest;
    so.threads = threads;
    // Every row reaches the LM head, whose inputs count too.
    so.all_logits = true;
    so.prefill_batch = std::min<int64_t>(longest, 512);
    Session session(spec, weights, so);

    // The statistics of each value some linear layer reads, shared by all of them.
    auto calibration = std::make_shared<quant::ModelCalibration>();
    calibration->method = method;
    const ir::Program& program = session.program();
    const ir::Function& fn = program.functions.front();
    std::map<ir::ValueId, std::shared_ptr<quant::InputStats>> by_value;
    for (const ir::Node& node : fn.nodes) {
        if (node.op != ir::Op::linear || node.weight == ir::no_weight) continue;
        const ir::ValueId input = node.inputs.at(0);
        auto& stats = by_value[input];
        if (!stats) stats = std::make_shared<quant::InputStats>(fn.nodes[input].width);
        calibration->stats.emplace(program.weights[node.weight].name, stats);
    }
    ThreadPool& pool = session.pool();
    session.executor().set_observer([&](const ir::Node& node, std::span<const float> value) {
        if (&node < fn.nodes.data() || &node >= fn.nodes.data() + fn.nodes.size()) return;
        const auto it = by_value.find(static_cast<ir::ValueId>(&node - fn.nodes.data()));
        if (it == by_value.end()) return;
        it->second->add(value.data(), static_cast<int64_t>(value.size()) / node.width, pool);
    });
    int64_t done = 0;
    if (progress) progress(0, total);
    for (const auto& w : windows) {
        session.reset();
        session.prefill(w);
        done += static_cast<int64_t>(w.size());
        calibration->tokens += static_cast<int64_t>(w.size());
        if (progress) progress(done, total);
    }
    session.executor().set_observer(nullptr);
    return calibration;
}

}  // namespace anelm
