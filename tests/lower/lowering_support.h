// Tiny models lowered into embeddings, two chunks and a split LM head, and run
// by the MIL interpreter the way ANEMLL's runners drive them (full prefill
// batches, the rest through infer).
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "ane/ane_pipeline.h"
#include "coreml/anemll_layout.h"
#include "lower/ane_lowering.h"
#include "models/models.h"
#include "passes/rope_halves.h"

namespace anelm::test {

inline constexpr int64_t lowering_ctx = 32;
inline constexpr int64_t lowering_batch = 4;

struct Lowered {
    lower::AnePackage embeddings, head;
    std::vector<lower::AnePackage> chunks;
    std::vector<int64_t> pieces;
};

inline ir::Program decode_program(const LoadedModel& m) {
    ProgramOptions po;
    po.n_ctx = lowering_ctx;
    po.functions = {{"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, po);
    passes::rope_halves(program);
    return program;
}

inline lower::AneOptions lowering_options(bool argmax, int64_t verify = 0) {
    lower::AneOptions options;
    options.batch = lowering_batch;
    options.argmax = argmax;
    options.verify = verify;
    return options;
}

// Chunks: layer 0, then the rest.
inline Lowered lower_all(const ir::Program& program, int64_t n_vocab,
                         const lower::AneOptions& options) {
    Lowered l{
        lower::lower_embeddings(program, options), {}, {}, coreml::lm_head_chunk_sizes(n_vocab, 4)};
    const int64_t n_layer = lower::layer_count(program);
    l.chunks.push_back(lower::lower_chunk(program, 0, 1, options));
    l.chunks.push_back(lower::lower_chunk(program, 1, n_layer, options));
    l.head = lower::lower_lm_head(program, l.pieces, options);
    return l;
}

inline AnePart part(const lower::AnePackage& p) {
    return AnePart{&p.model, &p.blobs()};
}

inline AnePipeline pipeline(const Lowered& l, bool argmax, milexec::Rounding rounding,
                            int64_t verify = 0) {
    std::vector<AnePart> chunks;
    for (const auto& c : l.chunks) chunks.push_back(part(c));
    AnePipelineShape shape{lowering_ctx, lowering_batch, l.pieces, argmax};
    shape.verify = verify;
    return AnePipeline(part(l.embeddings), chunks, part(l.head), shape, rounding);
}

inline int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace anelm::test
