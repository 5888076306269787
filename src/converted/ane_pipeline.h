// Runs an ANEMLL-layout model (embeddings, chunks with infer and prefill on one
// shared KV state, LM head) on the CPU with the MIL interpreter, the way
// ANEMLL's runners drive it on a Mac: full batches of `batch` tokens through
// prefill with rows of the causal mask, the rest one token at a time through
// infer, then the LM head's logits pieces concatenated, or its per-piece
// argmax mapped to a vocabulary id through the piece sizes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anemll/anemll_layout.h"
#include "anemll/per_layer_table.h"
#include "coreml/blob_table.h"
#include "coreml/package.h"
#include "exec/mil/function.h"
#include "runtime/token_model.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

// One package's model and where its blobs are: a package read from disk, or
// one built in memory.
struct AnePart {
    const coreml::spec::Model* model = nullptr;
    const coreml::BlobTable* blobs = nullptr;
};

struct AnePipelineShape {
    int64_t n_ctx = 0;                 // the causal mask's width (context_length)
    int64_t batch = 0;                 // tokens of one prefill call
    std::vector<int64_t> head_pieces;  // LM head piece sizes, in output order
    bool argmax = false;               // the head returns argmax_idx / argmax_val
    // From this position on, the chunks' infer_rotate and prefill_rotate run
    // instead of infer and prefill, as the runners switch (0: never).
    int64_t rotate_from = 0;
    // Tokens of the packages' verify functions (speculative decoding); 0: none.
    int64_t verify = 0;
};

class AnePipeline : public TokenModel {
public:
    // `dot`: how the palettized weights' products sum (milexec::QuantDot).
    AnePipeline(AnePart embeddings, const std::vector<AnePart>& chunks, AnePart head,
                AnePipelineShape shape, milexec::Rounding rounding, ThreadPool* pool = nullptr,
                milexec::QuantDot dot = milexec::QuantDot::exact);
    // ANEMLL's monolithic form: one package from token ids to the head's outputs.
    AnePipeline(AnePart monolithic, AnePipelineShape shape, milexec::Rounding rounding,
                ThreadPool* pool = nullptr, milexec::QuantDot dot = milexec::QuantDot::exact);
    ~AnePipeline() override;

    std::span<const float> prefill(std::span<const int32_t> tokens) override;
    std::span<const float> decode(int32_t token) override;
    int64_t pos() const override { return pos_; }
    int64_t n_ctx() const override { return shape_.n_ctx; }
    // The caches are indexed by position, so any earlier position will do until
    // the rotate functions have shifted them; then only a restart. Packages
    // with carried states (conv windows, delta-rule matrices) restart only.
    void rewind(int64_t pos) override;
    bool can_rewind(int64_t pos) const override;
    void reset();
    // Gemma 4's per-layer table, kept beside the packages: its rows are looked
    // up for the embeddings (or monolithic) function that takes them.
    void set_per_layer_table(const anemll::PerLayerTable* table) { per_layer_ = table; }
    // A state of the packages (the KV cache), as the interpreter holds it.
    const milexec::Tensor& state(const std::string& name) const { return states_.at(name); }
    bool has_state(const std::string& name) const { return states_.contains(name); }
    // The states chunk `chunk` carries as inputs and outputs, as its last call left them.
    const std::map<std::string, milexec::Tensor>& carried(size_t chunk) const {
        return carried_.at(chunk);
    }
    // Up to `verify` tokens in one pass of the verify functions, which write
    // the cache for all T rows (a short call is padded with its last token):
    // a row past the position the loop rewinds to is written again before any
    // query reaches it, since the cache is indexed by position and the mask
    // hides later keys. Only where T rows fit before the context's end and
    // the rotate point (past which the cache cannot move back).
    int64_t verify_tokens() const override { return shape_.verify; }
    bool can_verify(int64_t n) const override;
    std::span<const float> verify(std::span<const int32_t> tokens) override;

private:
    void run_batch(std::span<const int32_t> tokens);  // prefill, output discarded
    // Whether the prompt's last `rows` tokens before its final one go through
    // one prefill call padded to the batch, as ANEMLL's runners do: the padded
    // rows write cache positions past the prompt, which the mask hides and
    // later tokens overwrite first. Not where carried states would take in the
    // padding, nor where the padded rows would reach the context's end or the
    // rotate point; and not for a few rows, which infer computes sooner.
    bool can_pad_batch(size_t rows) const;
    bool carries_states_ = false;
    std::span<const float> run_token(int32_t token);  // infer and the head
    // The chunks' functions from token ids (the embeddings first, unless
    // monolithic); a call that fails restarts a pipeline with carried states.
    milexec::Tensor run_chunks(const std::vector<std::unique_ptr<milexec::Function>>& fns,
                               std::span<const int32_t> tokens);
    milexec::Tensor run_chunks_once(const std::vector<std::unique_ptr<milexec::Function>>& fns,
                                    std::span<const int32_t> tokens);
    // One token's head outputs into logits_.
    std::span<const float> read_head(const std::map<std::string, milexec::Tensor>& out);
    // Row `row` of head outputs for `rows` tokens into `logits` (n_vocab values).
    void read_head_row(const std::map<std::string, milexec::Tensor>& out, int64_t row, int64_t rows,
                       std::span<float> logits) const;

    AnePipelineShape shape_;
    std::unique_ptr<milexec::Function> embeddings_, head_;  // null when monolithic
    std::unique_ptr<milexec::Function> head_verify_;        // null without verify
    std::vector<std::unique_ptr<milexec::Function>> infer_, prefill_, verify_;
    std::vector<std::unique_ptr<milexec::Function>> infer_rotate_, prefill_rotate_;
    // The functions for a call at the current position.
    const std::vector<std::unique_ptr<milexec::Function>>& functions(bool batch) const;
    milexec::States states_;
    // States carried as function inputs and outputs (conv windows, the delta
    // rule's matrices), per chunk and input name; empty until the first call.
    std::map<size_t, std::map<std::string, milexec::Tensor>> carried_;
    std::map<std::string, milexec::Tensor> last_outputs_;  // monolithic infer's head outputs
    std::vector<float> logits_;
    std::vector<float> verify_logits_;  // [tokens, n_vocab]
    const anemll::PerLayerTable* per_layer_ = nullptr;
    // The table's rows for `tokens` into `in`, when `fn` takes them.
    void add_per_layer_rows(const milexec::Function& fn, std::span<const int32_t> tokens,
                            std::map<std::string, milexec::Tensor>& in) const;
    int64_t pos_ = 0;
};

// A converted directory: meta.yaml, the packages it names (an .mlpackage
// standing in for each .mlmodelc that is not there), run as above, and the
// tokenizer and stop ids from the files convert copied beside them.
class ConvertedModel {
public:
    // tokenizer_path overrides the folder's tokenizer.bin (a llama2.c
    // conversion's, which run.c's rules go with) or tokenizer.json.
    ConvertedModel(const std::string& dir, const std::string& tokenizer_path,
                   milexec::Rounding rounding, ThreadPool* pool = nullptr,
                   milexec::QuantDot dot = milexec::QuantDot::exact);
    AnePipeline& pipeline() { return *pipeline_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    // generation_config.json's eos ids, else the tokenizer's; BOS with a
    // llama2.c tokenizer, as run.c stops.
    const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
    int64_t vocab_size() const { return layout_.vocab_size; }
    const anemll::ConvertLayout& layout() const { return layout_; }

private:
    std::unique_ptr<Tokenizer> tokenizer_;
    std::vector<int32_t> stop_ids_;
    std::vector<std::unique_ptr<coreml::Package>> packages_;
    std::unique_ptr<AnePipeline> pipeline_;
    std::unique_ptr<anemll::PerLayerTable> per_layer_;
    anemll::ConvertLayout layout_;
};

// True when `path` is a folder holding meta.yaml.
bool is_converted_dir(const std::string& path);

}  // namespace anelm
