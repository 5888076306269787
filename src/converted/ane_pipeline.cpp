#include "converted/ane_pipeline.h"

#include <filesystem>
#include <limits>
#include <numeric>

#include "anemll/converted_files.h"
#include "base/error.h"
#include "io/llama2c.h"
#include "models/hf_config.h"
#include "runtime/model.h"

namespace anelm {

namespace fs = std::filesystem;
using milexec::Tensor;

namespace {

// Whether a function takes a state as an input and returns it updated
// (NAME and NAME_out), as conv windows and delta-rule matrices are carried.
bool carries_states(const std::unique_ptr<milexec::Function>& fn) {
    return std::any_of(
        fn->inputs().begin(), fn->inputs().end(), [&](const milexec::TensorSpec& in) {
            return std::any_of(
                fn->outputs().begin(), fn->outputs().end(),
                [&](const milexec::TensorSpec& out) { return out.name == in.name + "_out"; });
        });
}

// A prefill call of a whole batch costs about as much as infer for a third of
// its rows, one at a time (on the interpreter, bench/README.md): fewer rows
// than that go through infer.
constexpr int64_t padded_batch_cost = 3;

std::unique_ptr<milexec::Function> function_of(const AnePart& part, const std::string& name,
                                               milexec::Rounding rounding, ThreadPool* pool,
                                               milexec::QuantDot dot) {
    return std::make_unique<milexec::Function>(part.model->mlprogram(), name, *part.blobs, rounding,
                                               pool, dot);
}

Tensor ints(std::vector<int64_t> shape, std::vector<int32_t> values) {
    Tensor t = milexec::make_tensor(coreml::mil::INT32, std::move(shape));
    t.i = std::move(values);
    return t;
}

// Rows [pos, pos + t) of the causal mask: 0 where a key is visible, -inf after.
Tensor causal_rows(int64_t pos, int64_t t, int64_t n_ctx) {
    Tensor m = milexec::make_tensor(coreml::mil::FLOAT16, {1, 1, t, n_ctx});
    for (int64_t r = 0; r < t; ++r)
        for (int64_t c = 0; c < n_ctx; ++c)
            m.f[static_cast<size_t>(r * n_ctx + c)] =
                c <= pos + r ? 0.0f : -std::numeric_limits<float>::infinity();
    return m;
}

std::vector<int32_t> positions(int64_t pos, int64_t t) {
    std::vector<int32_t> p(static_cast<size_t>(t));
    std::iota(p.begin(), p.end(), static_cast<int32_t>(pos));
    return p;
}

// Packages written before the rotate functions existed have only infer and prefill.
bool has_rotate_functions(const coreml::spec::Model& model) {
    return model.mlprogram().functions().contains("infer_rotate");
}

}  // namespace

AnePipeline::AnePipeline(AnePart embeddings, const std::vector<AnePart>& chunks, AnePart head,
                         AnePipelineShape shape, milexec::Rounding rounding, ThreadPool* pool,
                         milexec::QuantDot dot)
    : shape_(std::move(shape)) {
    embeddings_ = function_of(embeddings, "main", rounding, pool, dot);
    for (const AnePart& c : chunks) {
        infer_.push_back(function_of(c, "infer", rounding, pool, dot));
        prefill_.push_back(function_of(c, "prefill", rounding, pool, dot));
        if (shape_.rotate_from > 0) {
            infer_rotate_.push_back(function_of(c, "infer_rotate", rounding, pool, dot));
            prefill_rotate_.push_back(function_of(c, "prefill_rotate", rounding, pool, dot));
        }
        if (shape_.verify > 0) verify_.push_back(function_of(c, "verify", rounding, pool, dot));
    }
    head_ = function_of(head, "main", rounding, pool, dot);
    if (shape_.verify > 0) head_verify_ = function_of(head, "verify", rounding, pool, dot);
    carries_states_ = std::any_of(infer_.begin(), infer_.end(), carries_states);
    logits_.resize(static_cast<size_t>(
        std::accumulate(shape_.head_pieces.begin(), shape_.head_pieces.end(), int64_t{0})));
}

AnePipeline::AnePipeline(AnePart monolithic, AnePipelineShape shape, milexec::Rounding rounding,
                         ThreadPool* pool, milexec::QuantDot dot)
    : shape_(std::move(shape)) {
    infer_.push_back(function_of(monolithic, "infer", rounding, pool, dot));
    prefill_.push_back(function_of(monolithic, "prefill", rounding, pool, dot));
    if (shape_.rotate_from > 0) {
        infer_rotate_.push_back(function_of(monolithic, "infer_rotate", rounding, pool, dot));
        prefill_rotate_.push_back(function_of(monolithic, "prefill_rotate", rounding, pool, dot));
    }
    if (shape_.verify > 0)
        verify_.push_back(function_of(monolithic, "verify", rounding, pool, dot));
    carries_states_ = carries_states(infer_[0]);
    logits_.resize(static_cast<size_t>(
        std::accumulate(shape_.head_pieces.begin(), shape_.head_pieces.end(), int64_t{0})));
}

AnePipeline::~AnePipeline() = default;

void AnePipeline::reset() {
    states_.reset();
    carried_.clear();
    pos_ = 0;
}

Tensor AnePipeline::run_chunks(const std::vector<std::unique_ptr<milexec::Function>>& fns,
                               std::span<const int32_t> tokens) {
    try {
        return run_chunks_once(fns, tokens);
    } catch (...) {
        // The carried states were moved into the functions that failed: the
        // sequence cannot go on, only start again.
        if (carries_states_) reset();
        throw;
    }
}

Tensor AnePipeline::run_chunks_once(const std::vector<std::unique_ptr<milexec::Function>>& fns,
                                    std::span<const int32_t> tokens) {
    const auto t = static_cast<int64_t>(tokens.size());
    Tensor ids = ints({1, t}, {tokens.begin(), tokens.end()});
    Tensor hidden;
    // What the embeddings compute beside the hidden state (Gemma 4's per-layer
    // inputs): the chunks read it by name.
    std::map<std::string, Tensor> side;
    if (embeddings_) {
        std::map<std::string, Tensor> in{{"input_ids", ids}};
        add_per_layer_rows(*embeddings_, tokens, in);
        side = embeddings_->run(std::move(in), states_);
        hidden = std::move(side.at("hidden_states"));
        side.erase("hidden_states");
    }
    std::map<std::string, Tensor> out;
    for (size_t i = 0; i < fns.size(); ++i) {
        const milexec::Function& fn = *fns[i];
        std::map<std::string, Tensor> in{{"position_ids", ints({t}, positions(pos_, t))},
                                         {"causal_mask", causal_rows(pos_, t, shape_.n_ctx)},
                                         {"current_pos", ints({1}, {static_cast<int32_t>(pos_)})}};
        if (embeddings_)
            in["hidden_states"] = std::move(hidden);
        else
            in["input_ids"] = ids;
        if (!embeddings_) add_per_layer_rows(fn, tokens, in);
        // Any other input is one the embeddings returned, or a carried state:
        // zeros first, then what the last call returned.
        for (const milexec::TensorSpec& spec : fn.inputs()) {
            if (in.contains(spec.name)) continue;
            if (const auto s = side.find(spec.name); s != side.end()) {
                in[spec.name] = s->second;
                continue;
            }
            // Moved in: the output replaces it.
            auto [it, fresh] = carried_[i].try_emplace(spec.name);
            if (fresh) it->second = milexec::make_tensor(spec.dtype, spec.shape);
            in[spec.name] = std::move(it->second);
        }
        out = fn.run(std::move(in), states_);
        if (const auto carried = carried_.find(i); carried != carried_.end())
            for (auto& [name, state] : carried->second) {
                const auto next = out.find(name + "_out");
                if (next == out.end())
                    fail("{}: no {}_out for its input {}", fn.name(), name, name);
                state = std::move(next->second);
            }
        if (embeddings_) hidden = std::move(out.at("output_hidden_states"));
    }
    pos_ += t;
    if (embeddings_) return hidden;
    last_outputs_ = std::move(out);
    return {};
}

void AnePipeline::add_per_layer_rows(const milexec::Function& fn, std::span<const int32_t> tokens,
                                     std::map<std::string, Tensor>& in) const {
    for (const milexec::TensorSpec& spec : fn.inputs()) {
        if (spec.name != anemll::per_layer_lookup) continue;
        if (!per_layer_)
            fail("{}: takes {}, the per-layer table's rows, and no table was given", fn.name(),
                 spec.name);
        const auto t = static_cast<int64_t>(tokens.size());
        Tensor rows = milexec::make_tensor(coreml::mil::FLOAT16, {1, t, per_layer_->cols()});
        per_layer_->lookup(tokens, rows.f);
        in[spec.name] = std::move(rows);
    }
}

const std::vector<std::unique_ptr<milexec::Function>>& AnePipeline::functions(bool batch) const {
    const bool rotate = shape_.rotate_from > 0 && pos_ >= shape_.rotate_from;
    if (batch) return rotate ? prefill_rotate_ : prefill_;
    return rotate ? infer_rotate_ : infer_;
}

void AnePipeline::run_batch(std::span<const int32_t> tokens) {
    run_chunks(functions(true), tokens);
}

std::span<const float> AnePipeline::run_token(int32_t token) {
    if (pos_ >= shape_.n_ctx) fail("the context of {} tokens is full", shape_.n_ctx);
    Tensor hidden = run_chunks(functions(false), {&token, 1});
    if (!head_) return read_head(last_outputs_);
    return read_head(head_->run({{"hidden_states", hidden}}, states_));
}

std::span<const float> AnePipeline::read_head(const std::map<std::string, Tensor>& out) {
    read_head_row(out, 0, 1, logits_);
    return logits_;
}

void AnePipeline::read_head_row(const std::map<std::string, Tensor>& out, int64_t row, int64_t rows,
                                std::span<float> logits) const {
    const auto n_pieces = static_cast<int64_t>(shape_.head_pieces.size());
    if (shape_.argmax) {
        // Each piece's best: the largest value wins; its index is local to the piece.
        const Tensor& idx = out.at("argmax_idx");
        const Tensor& val = out.at("argmax_val");
        if (std::ssize(val.f) != rows * n_pieces || idx.i.size() != val.f.size())
            fail("argmax_idx/argmax_val: {}/{} values for {} pieces of {} tokens", idx.i.size(),
                 val.f.size(), n_pieces, rows);
        const auto at = [&](int64_t p) { return static_cast<size_t>(row * n_pieces + p); };
        int64_t best = 0;
        for (int64_t p = 1; p < n_pieces; ++p)
            if (val.f[at(p)] > val.f[at(best)]) best = p;
        const int64_t offset =
            std::accumulate(shape_.head_pieces.begin(),
                            shape_.head_pieces.begin() + static_cast<long>(best), int64_t{0});
        const int32_t local = idx.i[at(best)];
        if (local < 0 || local >= shape_.head_pieces[static_cast<size_t>(best)])
            fail("argmax_idx: {} in piece {} of {} ids", local, best + 1,
                 shape_.head_pieces[static_cast<size_t>(best)]);
        std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
        logits[static_cast<size_t>(offset + local)] = val.f[at(best)];
        return;
    }
    // A piece may be padded past the ids it holds: only those are read.
    size_t to = 0;
    for (int64_t p = 0; p < n_pieces; ++p) {
        const Tensor& piece = out.at(fmt::format("logits{}", p + 1));
        const auto ids = static_cast<size_t>(shape_.head_pieces[static_cast<size_t>(p)]);
        const size_t per_row = piece.f.size() / static_cast<size_t>(rows);
        if (per_row < ids)
            fail("logits{}: {} values per token, the piece holds {} ids", p + 1, per_row, ids);
        const auto from = piece.f.begin() + static_cast<long>(static_cast<size_t>(row) * per_row);
        std::copy_n(from, ids, logits.begin() + static_cast<long>(to));
        to += ids;
    }
}

std::span<const float> AnePipeline::verify(std::span<const int32_t> tokens) {
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t t = shape_.verify;
    if (!can_verify(n))
        fail("verify: {} tokens at position {}: the packages take 1 to {}, with {} positions free",
             n, pos_, t, t);
    const size_t vocab = logits_.size();
    verify_logits_.resize(static_cast<size_t>(n) * vocab);
    const auto row = [&](int64_t r) {
        return std::span<float>(verify_logits_).subspan(static_cast<size_t>(r) * vocab, vocab);
    };
    std::vector<int32_t> padded(tokens.begin(), tokens.end());
    padded.resize(static_cast<size_t>(t), tokens.back());
    const int64_t start = pos_;
    Tensor hidden = run_chunks(verify_, padded);
    pos_ = start + n;
    const std::map<std::string, Tensor> out =
        head_verify_ ? head_verify_->run({{"hidden_states", hidden}}, states_) : last_outputs_;
    for (int64_t r = 0; r < n; ++r) read_head_row(out, r, t, row(r));
    return verify_logits_;
}

std::span<const float> AnePipeline::prefill(std::span<const int32_t> tokens) {
    if (tokens.empty()) fail("prefill needs at least one token");
    if (pos_ + static_cast<int64_t>(tokens.size()) > shape_.n_ctx)
        fail("the prompt needs {} positions but the context holds {}", pos_ + tokens.size(),
             shape_.n_ctx);
    // The last token always goes through infer, which also yields the logits.
    size_t at = 0;
    const auto batch = static_cast<size_t>(shape_.batch);
    while (tokens.size() - 1 - at >= batch) {
        run_batch(tokens.subspan(at, batch));
        at += batch;
    }
    if (const size_t rest = tokens.size() - 1 - at; can_pad_batch(rest)) {
        std::vector<int32_t> padded(tokens.begin() + static_cast<long>(at),
                                    tokens.begin() + static_cast<long>(at + rest));
        padded.resize(batch, padded.back());
        const int64_t start = pos_;
        run_batch(padded);
        pos_ = start + static_cast<int64_t>(rest);
        at += rest;
    }
    for (; at + 1 < tokens.size(); ++at) run_token(tokens[at]);
    return run_token(tokens.back());
}

bool AnePipeline::can_pad_batch(size_t rows) const {
    const int64_t end = pos_ + shape_.batch;
    return static_cast<int64_t>(rows) * padded_batch_cost >= shape_.batch && end <= shape_.n_ctx &&
           (shape_.rotate_from == 0 || end <= shape_.rotate_from) && !carries_states_;
}

std::span<const float> AnePipeline::decode(int32_t token) {
    return run_token(token);
}

bool AnePipeline::can_verify(int64_t n) const {
    const int64_t end = pos_ + shape_.verify;
    return n >= 1 && n <= shape_.verify && end <= shape_.n_ctx &&
           (shape_.rotate_from == 0 || end <= shape_.rotate_from);
}

bool AnePipeline::can_rewind(int64_t pos) const {
    if (pos == 0 || pos == pos_) return true;
    // A carried state holds only the latest position.
    const bool rotated = shape_.rotate_from > 0 && pos_ > shape_.rotate_from;
    return pos > 0 && pos < pos_ && !rotated && carried_.empty();
}

void AnePipeline::rewind(int64_t pos) {
    if (!can_rewind(pos)) fail("cannot rewind the packages to position {} from {}", pos, pos_);
    if (pos == 0) carried_.clear();
    pos_ = pos;
}

bool is_converted_dir(const std::string& path) {
    return fs::is_directory(path) && fs::exists(fs::path(path) / "meta.yaml");
}

ConvertedModel::ConvertedModel(const std::string& dir, const std::string& tokenizer_path,
                               milexec::Rounding rounding, ThreadPool* pool,
                               milexec::QuantDot dot) {
    const anemll::ConvertedFiles files =
        anemll::find_converted_files((fs::path(dir) / "meta.yaml").string());
    const anemll::ConvertLayout& layout = files.meta.layout;
    // The layers and the head are read every token, from a private copy that
    // streams faster than the file's pages; the embeddings a row at a time.
    auto open = [&](const std::string& path,
                    coreml::BlobMemory memory = coreml::BlobMemory::private_copy) {
        packages_.push_back(std::make_unique<coreml::Package>(path, memory));
        return AnePart{&packages_.back()->model(), packages_.back().get()};
    };
    AnePipelineShape shape;
    shape.n_ctx = layout.context_length;
    shape.batch = layout.batch_size;
    shape.head_pieces = layout.lm_head_chunk_sizes;
    shape.argmax = layout.argmax_in_model;
    shape.verify = layout.verify_tokens;
    if (layout.monolithic) {
        const AnePart part = open(files.monolithic);
        if (has_rotate_functions(*part.model)) shape.rotate_from = layout.sliding_window;
        pipeline_ = std::make_unique<AnePipeline>(part, shape, rounding, pool, dot);
    } else {
        const AnePart embeddings = open(files.embeddings, coreml::BlobMemory::mapped);
        std::vector<AnePart> chunks;
        for (const std::string& c : files.chunks) chunks.push_back(open(c));
        if (has_rotate_functions(*chunks.at(0).model)) shape.rotate_from = layout.sliding_window;
        pipeline_ = std::make_unique<AnePipeline>(embeddings, chunks, open(files.lm_head), shape,
                                                  rounding, pool, dot);
    }
    layout_ = layout;
    if (layout.per_layer_bits > 0) {
        per_layer_ = std::make_unique<anemll::PerLayerTable>(
            (fs::path(dir) / layout.per_layer_table_file()).string());
        pipeline_->set_per_layer_table(per_layer_.get());
    }

    // A llama2.c conversion holds both: tokenizer.bin prints as run.c does.
    std::string tok = tokenizer_path;
    for (const char* name : {"tokenizer.bin", "tokenizer.json"})
        if (tok.empty() && fs::exists(fs::path(dir) / name)) tok = (fs::path(dir) / name).string();
    if (tok.empty())
        fail("{}: no tokenizer.json or tokenizer.bin (give one with --tokenizer)", dir);
    tokenizer_ = load_tokenizer(tok);
    check_tokenizer_fits(*tokenizer_, tok, layout.vocab_size, dir);
    ModelSpec spec;
    spec.n_vocab = layout.vocab_size;
    if (const fs::path gen = fs::path(dir) / "generation_config.json"; fs::exists(gen))
        load_generation_config(gen.string(), spec);
    if (fs::path(tok).extension() == ".bin")
        stop_ids_ = {llama2c_stop_id};
    else
        stop_ids_ = spec.eos_token_ids.empty() ? tokenizer_->eos_ids() : spec.eos_token_ids;
}

}  // namespace anelm
