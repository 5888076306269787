// Which weights to quantize and how, per component as ANEMLL's converter
// splits a model: `embed` (token embeddings), `ffn` (every weight of the
// transformer layers), `head` (the LM head). Grammar in docs/quantization.md:
//
//   spec   := part ("," part)*                  later parts override earlier ones
//   part   := preset | component "=" choice | "min=" N
//   preset := none | lut4 | lut6 | lut8 | int8 | int4
//   choice := none | BITS | BITS ":" GROUP | BITS "," GROUP | int8 | int4
//
// BITS is a LUT width (1, 2, 3, 4, 6, 8), GROUP the output rows sharing one
// table (default 8; 0 = one table per tensor). BITS,GROUP is ANEMLL's spelling
// (convert's --lut-* options); a bare GROUP after "COMPONENT=BITS" is read as
// its group. Tensors with fewer than N elements (default 2048, as coremltools)
// stay f16; a weight whose rows do not split into whole groups keeps its group
// size, the last group holding the rest (the Core ML writer pads it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace anelm::quant {

enum class QuantMethod : uint8_t { none, lut, int8, int4 };

struct QuantChoice {
    QuantMethod method = QuantMethod::none;
    int nbits = 0;           // lut: 1, 2, 3, 4, 6 or 8
    int64_t group_size = 8;  // lut: output rows per table, 0 = one table per tensor

    // "none", "lut4:8", "lut6:0", "int8", "int4".
    std::string name() const;
    bool operator==(const QuantChoice&) const = default;
};

constexpr int64_t default_group_size = 8;
constexpr int64_t default_min_elements = 2048;

enum class Component : uint8_t { embed, ffn, head };
const char* component_name(Component c);

struct QuantSpec {
    QuantChoice embed, ffn, head;
    int64_t min_elements = default_min_elements;
    // The CPU multiplies the quantized weights by integer dot products
    // (kernels::int8_dot_applies); not part of the text form, which names
    // only what is stored.
    bool int8_dot = false;
    // A GGUF's block matrices the spec leaves alone are multiplied as stored,
    // by the CPU's block kernels; false leaves them dense for whoever reads
    // their values (the ane precision, the Core ML writer). Not part of the
    // text form either.
    bool run_blocks = true;
    // Choices for single weights, by the weight's name in the program (a tied
    // LM head split off from its embedding: "<name>:head"), over the
    // component's: a recipe --quant auto chose. Not part of the text form.
    std::map<std::string, QuantChoice> per_weight;

    const QuantChoice& choice(Component c) const;
    // The choice for a weight of numel elements: none below min_elements.
    QuantChoice choice_for(Component c, int64_t numel) const;
    // per_weight's choice for the weight named `name`, else choice_for.
    QuantChoice choice_for_weight(Component c, const std::string& name, int64_t numel) const;
    // A spec text that parses back to this spec.
    std::string to_string() const;
};

// The bits a weight [n_out, n_in] takes stored as `choice`: codes, tables
// (f16 entries, a table per group of rows) and scales; 16 per weight for none.
double stored_bits(const QuantChoice& choice, int64_t n_out, int64_t n_in);

// Throws Error "quant spec: PART: what was expected" naming the bad part.
QuantSpec parse_quant_spec(std::string_view text);

// One choice: none, BITS, BITS:GROUP, BITS,GROUP, int8 or int4. Throws Error
// "WHAT: ..." listing the accepted forms.
QuantChoice parse_quant_choice(std::string_view text, std::string_view what);

// The component of a Hugging Face tensor name: model.embed_tokens.weight is
// embed, lm_head.weight head, model.layers.N.*.weight ffn; others none. Only
// rank-2 tensors among them are linear weights. A ":rows" suffix (rows of a
// stored matrix, ir::Builder::linear_rows) names the matrix's component.
std::optional<Component> tensor_component(std::string_view name);

}  // namespace anelm::quant
