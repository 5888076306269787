// The ANE lowering of a program into the three parts of ANEMLL's layout:
// the embeddings, transformer chunks with `infer` (one token) and `prefill`
// (a batch) sharing one KV state, and the LM head split into pieces (logits, or
// each piece's argmax in the model). The program must have a one-token
// function named "decode": its nodes are lowered once per MIL function.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anemll/convert_readme.h"
#include "coreml/mil_builder.h"
#include "coreml/package.h"
#include "ir/program.h"
#include "lower/ane_numerics.h"

namespace anelm::lower {

struct PackageContext;

struct AneOptions {
    int64_t batch = 64;   // tokens of one prefill call
    bool argmax = false;  // the LM head returns each piece's argmax
    bool rotate = false;  // chunks also get infer_rotate and prefill_rotate (sliding window)
    // Tokens of a `verify` function in every package (speculative decoding): it
    // writes the KV state as prefill does and returns every row's result; 0: none.
    int64_t verify = 0;
    // Gemma 4's per-layer table stays outside the packages: the embeddings (or
    // monolithic) function takes its looked-up rows as the input
    // per_layer_token_embd [1, T, layers x width] instead of gathering them.
    bool per_layer_rows_input = false;
    std::map<std::string, std::string> metadata;  // Metadata.userDefined of every package
    std::string author = "anelm";
    std::string description;  // Metadata.shortDescription
    AneNumerics numerics;
};

// A Core ML model in memory with its blobs, ready to write or to run.
struct AnePackage {
    coreml::spec::Model model;
    std::shared_ptr<PackageContext> context;
    const coreml::BlobSet& blobs() const;
};

int64_t layer_count(const ir::Program& program);

// input_ids int32 [1, T] (T enumerated: 1, batch or verify) -> hidden_states fp16 [1, T, n_embd].
AnePackage lower_embeddings(const ir::Program& program, const AneOptions& options);
// Layers [first, end): infer and prefill (and verify); the chunk holding the last
// layer also applies the final norm in infer and verify, and its prefill returns
// only the first row.
AnePackage lower_chunk(const ir::Program& program, int64_t first, int64_t end,
                       const AneOptions& options);
// hidden_states fp16 [1, 1, n_embd] (final-normed) -> logits1..N fp16 [1, 1, piece],
// or argmax_idx int32 [N] and argmax_val fp16 [N]: pieces of the given sizes.
// With verify, a second function `verify` does the same for [1, T, n_embd]:
// logits1..N [1, T, piece], or argmax_idx and argmax_val [T, N].
AnePackage lower_lm_head(const ir::Program& program, const std::vector<int64_t>& pieces,
                         const AneOptions& options);

// ANEMLL's single-file form: infer and prefill (and verify) from input_ids
// [1, T] through every layer to the LM head's outputs (prefill: logits of its
// first row, never argmax; verify: every row's), on the same KV state.
AnePackage lower_monolithic(const ir::Program& program, const std::vector<int64_t>& pieces,
                            const AneOptions& options);

// The end of the name of a value the embeddings return beside the hidden
// state and the chunks read (Gemma 4's per-layer inputs: per_layer_inp_rows).
inline constexpr std::string_view side_input_suffix = "_rows";

// The inputs a package's functions carry from call to call (conv windows,
// delta-rule states), and those the embeddings pass them, with their shapes;
// package names left empty.
std::vector<anemll::CarriedInput> carried_inputs(const AnePackage& package);

// Writes a lowered package (through a temporary folder renamed into place).
void write_ane_package(const AnePackage& package, const std::filesystem::path& dir,
                       bool overwrite = false);

}  // namespace anelm::lower
