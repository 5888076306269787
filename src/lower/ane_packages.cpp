#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "anemll/per_layer_table.h"
#include "base/error.h"
#include "coreml/write_package.h"
#include "lower/ane_lowering.h"
#include "lower/function_lowering.h"
#include "lower/program_parts.h"

namespace anelm::lower {

namespace mil = coreml::mil;
namespace spec = coreml::spec;
using coreml::MilParam;

namespace {

constexpr const char* opset = "CoreML8";
constexpr int spec_version = 9;  // iOS 18 / macOS 15

spec::ArrayFeatureType::ArrayDataType array_dtype(mil::DataType dtype) {
    switch (dtype) {
        case mil::FLOAT16:
            return spec::ArrayFeatureType::FLOAT16;
        case mil::FLOAT32:
            return spec::ArrayFeatureType::FLOAT32;
        case mil::INT32:
            return spec::ArrayFeatureType::INT32;
        default:
            fail("a model input or output cannot be {}", coreml::mil_dtype_name(dtype));
    }
}

// One input or output of a function: its MIL value, and for a flexible
// dimension the shapes it may take (the first is the default).
struct Io {
    MilValue value;
    std::vector<std::vector<int64_t>> shapes;
};

spec::FeatureDescription feature(const Io& io) {
    spec::FeatureDescription f;
    f.set_name(io.value.name);
    spec::ArrayFeatureType& a = *f.mutable_type()->mutable_multiarraytype();
    a.set_datatype(array_dtype(io.value.dtype));
    const bool flexible = !io.shapes.empty();
    for (int64_t d : flexible ? io.shapes[0] : io.value.shape) a.add_shape(d);
    for (const auto& s : io.shapes) {
        auto& shape = *a.mutable_enumeratedshapes()->add_shapes();
        for (int64_t d : s) shape.add_shape(d);
    }
    return f;
}

spec::FeatureDescription state_feature(const ir::StateDecl& decl) {
    spec::FeatureDescription f;
    f.set_name(decl.name);
    spec::ArrayFeatureType& a = *f.mutable_type()->mutable_statetype()->mutable_arraytype();
    a.set_datatype(spec::ArrayFeatureType::FLOAT16);
    for (int64_t d : decl.shape) a.add_shape(d);
    return f;
}

void add_input(mil::Function& fn, const MilValue& v) {
    mil::NamedValueType& in = *fn.add_inputs();
    in.set_name(v.name);
    *in.mutable_type() = coreml::tensor_value_type(v.dtype, v.shape);
}

void add_state_input(mil::Function& fn, const ir::StateDecl& decl) {
    mil::NamedValueType& in = *fn.add_inputs();
    in.set_name(decl.name);
    *in.mutable_type()->mutable_statetype()->mutable_wrappedtype() =
        coreml::tensor_value_type(mil::FLOAT16, decl.shape);
}

// The model shell: spec version, metadata, an empty ML Program.
spec::Model new_model(const AneOptions& options) {
    spec::Model model;
    model.set_specificationversion(spec_version);
    spec::Metadata& meta = *model.mutable_description()->mutable_metadata();
    meta.set_author(options.author);
    meta.set_shortdescription(options.description);
    for (const auto& [k, v] : options.metadata) (*meta.mutable_userdefined())[k] = v;
    model.mutable_mlprogram()->set_version(1);
    return model;
}

mil::Block& new_function(spec::Model& model, const std::string& name) {
    mil::Function& fn = (*model.mutable_mlprogram()->mutable_functions())[name];
    fn.set_opset(opset);
    return (*fn.mutable_block_specializations())[opset];
}

const ir::Function& decode_function(const ir::Program& program) {
    const ir::Function& fn = program.function("decode");
    if (fn.n_tokens != 1) fail("function decode takes {} tokens, expected 1", fn.n_tokens);
    return fn;
}

int64_t context_length(const ir::Program& program) {
    if (program.states.empty()) fail("the program has no KV state");
    return program.states[0].shape.at(2);
}

int64_t hidden_width(const ir::Function& fn, ir::ValueId id) {
    return fn.nodes.at(static_cast<size_t>(id)).width;
}

// The name a value the embeddings compute beside the hidden state (Gemma 4's
// per-layer inputs) has as their output and as the chunks' input.
std::string side_input_name(const ir::Function& fn, ir::ValueId id) {
    return mil_name(fn.nodes.at(static_cast<size_t>(id)).name) + std::string(side_input_suffix);
}

// Lowers the embeddings' nodes. With per_layer_rows_input, the per-layer
// table's lookup becomes a function input of its name: the rows, for T tokens.
std::optional<MilValue> lower_embedding_part(FunctionLowering& f, const ir::Function& fn,
                                             const ProgramParts& parts, const AneOptions& options,
                                             int64_t t) {
    std::optional<MilValue> rows;
    for (ir::ValueId id : parts.embedding) {
        const ir::Node& node = fn.nodes.at(static_cast<size_t>(id));
        if (!options.per_layer_rows_input || node.name != anemll::per_layer_lookup) {
            f.lower(id);
            continue;
        }
        if (node.attrs.out_scale != 1.0f)
            fail("{}: {} is scaled by {}; a looked-up input cannot be", fn.name, node.name,
                 node.attrs.out_scale);
        rows = MilValue{node.name, mil::FLOAT16, {1, t, node.width}};
        f.bind_rows(id, *rows);
    }
    if (options.per_layer_rows_input && !rows)
        fail("{}: no {} to take as an input", fn.name, anemll::per_layer_lookup);
    return rows;
}

}  // namespace

const coreml::BlobSet& AnePackage::blobs() const {
    return context->blobs;
}

int64_t layer_count(const ir::Program& program) {
    return static_cast<int64_t>(split_parts(decode_function(program)).layers.size());
}

AnePackage lower_embeddings(const ir::Program& program, const AneOptions& options) {
    const ir::Function& fn = decode_function(program);
    const ProgramParts parts = split_parts(fn);
    AnePackage pkg{new_model(options), std::make_shared<PackageContext>(
                                           program, context_length(program), options.numerics)};
    mil::Block& block = new_function(pkg.model, "main");
    FunctionLowering f(*pkg.context, fn, block, -1);
    f.input_ids = MilValue{"input_ids", mil::INT32, {1, -1}};
    const std::optional<MilValue> rows_input = lower_embedding_part(f, fn, parts, options, -1);
    const std::vector<ir::ValueId> outs = part_outputs(fn, parts.embedding);
    const ir::ValueId out_id = part_inputs(fn, parts.layers.at(0)).front();  // the hidden state
    MilValue out = f.value(out_id);
    std::vector<MilValue> outputs;
    mil::Operation& last = *block.mutable_operations()->rbegin();
    if (outs.size() == 1) {
        // The op computing the part's output is the last one; it takes the output's name.
        if (last.outputs(0).name() != out.name)
            fail("{}: the embeddings' output is not their last op", fn.name);
        last.mutable_outputs(0)->set_name("hidden_states");
        (*last.mutable_attributes())["name"]
            .mutable_immediatevalue()
            ->mutable_tensor()
            ->mutable_strings()
            ->set_values(0, "hidden_states");
        out.name = "hidden_states";
        outputs.push_back(out);
    } else {
        // Gemma 4's per-layer inputs leave beside the hidden state, as rows.
        for (ir::ValueId id : outs) {
            const std::string name = id == out_id ? "hidden_states" : side_input_name(fn, id);
            outputs.push_back(f.to_rows(f.channels(id), name));
        }
    }
    for (const MilValue& o : outputs) f.builder().output(o);

    mil::Function& mfn = pkg.model.mutable_mlprogram()->mutable_functions()->at("main");
    add_input(mfn, f.input_ids);
    spec::ModelDescription& d = *pkg.model.mutable_description();
    std::vector<std::vector<int64_t>> shapes{{1, 1}, {1, options.batch}};
    if (options.verify > 0 && options.verify != options.batch)
        shapes.push_back({1, options.verify});
    *d.add_input() = feature({f.input_ids, shapes});
    if (rows_input) {
        add_input(mfn, *rows_input);
        std::vector<std::vector<int64_t>> row_shapes;
        for (const auto& s : shapes) row_shapes.push_back({1, s[1], rows_input->shape[2]});
        *d.add_input() = feature({*rows_input, row_shapes});
    }
    for (const MilValue& o : outputs)
        *d.add_output() = feature({MilValue{o.name, o.dtype, {}}, {}});
    return pkg;
}

namespace {

// The verify functions write every row's KV and the host rewinds past the
// rejected ones; a carried state has no positions to rewind.
void refuse_verify_with_carried_states(const ir::Program& program, const AneOptions& options) {
    if (options.verify == 0) return;
    for (size_t i = 0; i < program.states.size(); ++i)
        if (is_carried_state(program, static_cast<int32_t>(i)))
            fail(
                "verify functions need a state that rolls back to any accepted row; {} is "
                "carried from token to token (convert this model without --verify)",
                program.states[i].name);
}

// Declares a function's inputs (first the given value, then positions, mask,
// write position, carried states and MLStates) and outputs in the program and
// the description.
void describe(AnePackage& pkg, const std::string& name, const FunctionLowering& f,
              const MilValue& first_input, const std::vector<MilValue>& outputs,
              const std::vector<MilValue>& side_inputs = {}) {
    mil::Function& mfn = pkg.model.mutable_mlprogram()->mutable_functions()->at(name);
    spec::FunctionDescription& fd = *pkg.model.mutable_description()->add_functions();
    fd.set_name(name);
    std::vector<MilValue> inputs{first_input};
    inputs.insert(inputs.end(), side_inputs.begin(), side_inputs.end());
    for (const MilValue& v : {f.position_ids, f.causal_mask, f.current_pos}) inputs.push_back(v);
    for (const auto& [state, c] : f.carried) inputs.push_back(c.input);
    for (const MilValue& v : inputs) {
        add_input(mfn, v);
        *fd.add_input() = feature({v, {}});
    }
    const ir::StateDecl& kv = pkg.context->kv.state;
    add_state_input(mfn, kv);
    *fd.add_state() = state_feature(kv);
    for (const MilValue& o : outputs) *fd.add_output() = feature({o, {}});
}

MilValue first_row(FunctionLowering& f, const MilValue& x) {
    return f.slice(x, {0, 0, 0, 0}, {1, static_cast<int32_t>(x.shape.at(1)), 1, 1}, "first_row");
}

// Pads a piece's logits [1, T, n] to [1, T, rows] with fp16's lowest value,
// which no real logit loses to in an argmax and which softmax turns into 0.
MilValue pad_logits(MilBuilder& b, const MilValue& logits, int64_t rows, const std::string& name) {
    const int64_t t = logits.shape.at(1), n = logits.shape.at(2);
    if (n == rows) return logits;
    const std::vector<float> lowest(static_cast<size_t>(t * (rows - n)), -65504.0f);
    const MilValue pad = b.const_f16(name + "_pad", {1, t, rows - n}, lowest);
    return b.op("concat", name,
                {{"values", std::vector<MilValue>{logits, pad}},
                 {"axis", MilParam::i32(2)},
                 {"interleave", MilParam::boolean(false)}},
                mil::FLOAT16, {1, t, rows});
}

// The LM head on x (channels, T tokens) split into pieces: logits1..N, or
// argmax_idx and argmax_val over the pieces (per token, for T > 1). Every
// piece's output has the first piece's rows (a shorter last piece is padded),
// as AnemllCore maps a piece's index i to piece * rows + i.
std::vector<MilValue> lower_head(FunctionLowering& f, const ir::Function& fn,
                                 const ProgramParts& parts, const MilValue& x,
                                 const std::vector<int64_t>& pieces, bool argmax) {
    const int64_t vocab = hidden_width(fn, fn.outputs.at(0));
    const int64_t total = std::accumulate(pieces.begin(), pieces.end(), int64_t{0});
    if (total != vocab) fail("LM head pieces add up to {}, the vocabulary has {}", total, vocab);
    const int64_t rows = pieces.at(0);
    if (std::ranges::any_of(pieces, [&](int64_t p) { return p > rows; }))
        fail("LM head pieces: a piece is larger than the first ({} rows)", rows);
    MilBuilder& b = f.builder();
    const int64_t t = x.shape.at(3);
    // One token's piece [1, piece, 1, 1] is reshaped, several tokens' turned to rows.
    auto as_rows = [&](const MilValue& piece, int64_t n, const std::string& name) {
        return t == 1 ? f.reshape(piece, {1, 1, n}, name) : f.to_rows(piece, name);
    };
    std::vector<MilValue> outputs, idx, val;
    int64_t row0 = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
        f.head_row0 = row0;
        f.head_rows = pieces[i];
        const std::string n = std::to_string(i + 1);
        f.name_suffix = "_" + n;  // each piece lowers the same nodes again
        f.bind(parts.final_norm.back(), x);
        for (ir::ValueId id : parts.head) f.lower(id);
        const MilValue& piece = f.value(fn.outputs.at(0));  // [1, piece, 1, T]
        const MilValue logits =
            pieces[i] == rows ? as_rows(piece, rows, "logits" + n)
                              : pad_logits(b, as_rows(piece, pieces[i], "logits" + n + "_real"),
                                           rows, "logits" + n);
        if (argmax) {
            idx.push_back(b.op("reduce_argmax", "argmax_idx_" + n,
                               {{"x", logits},
                                {"axis", MilParam::i32(-1)},
                                {"keep_dims", MilParam::boolean(false)}},
                               mil::INT32, {1, t}));
            val.push_back(b.op("reduce_max", "argmax_val_" + n,
                               {{"x", logits},
                                {"axes", MilParam::i32s({-1})},
                                {"keep_dims", MilParam::boolean(false)}},
                               mil::FLOAT16, {1, t}));
        } else {
            outputs.push_back(logits);
        }
        row0 += pieces[i];
    }
    f.name_suffix.clear();
    f.head_rows = 0;
    if (argmax) {
        const auto n = static_cast<int64_t>(pieces.size());
        // One token: [N]. Several: [T, N], each piece's [1, T] a column.
        auto gather_all = [&](const std::vector<MilValue>& values, const std::string& name,
                              mil::DataType dtype) {
            std::vector<MilValue> columns;
            for (const MilValue& v : values)
                columns.push_back(t == 1 ? v : f.reshape(v, {t, 1}, v.name + "_col"));
            const MilValue cat = b.op("concat", t == 1 ? name + "_all" : name,
                                      {{"values", columns},
                                       {"axis", MilParam::i32(1)},
                                       {"interleave", MilParam::boolean(false)}},
                                      dtype, {t, n});
            return t == 1 ? f.reshape(cat, {n}, name) : cat;
        };
        outputs.push_back(gather_all(idx, "argmax_idx", mil::INT32));
        outputs.push_back(gather_all(val, "argmax_val", mil::FLOAT16));
    }
    for (const MilValue& o : outputs) b.output(o);
    return outputs;
}

// What a chunk function computes: one token, a prompt batch whose result the
// runners discard, or a verify pass whose every row goes on to the head.
enum class Rows { one, batch, verify };

struct ChunkFunction {
    std::string name;
    Rows rows;
};

// A chunk's functions. The rotate forms, which the runners call from the
// sliding window's length on, compute the same as the others on our one
// full-length cache and share their weights; so does verify.
std::vector<ChunkFunction> chunk_functions(const AneOptions& options) {
    std::vector<ChunkFunction> fns{{"infer", Rows::one}, {"prefill", Rows::batch}};
    if (options.rotate) {
        fns.push_back({"infer_rotate", Rows::one});
        fns.push_back({"prefill_rotate", Rows::batch});
    }
    if (options.verify > 0) fns.push_back({"verify", Rows::verify});
    return fns;
}

int64_t tokens_of(Rows rows, const AneOptions& options) {
    return rows == Rows::one ? 1 : rows == Rows::batch ? options.batch : options.verify;
}

// A new chunk function, lowering `nodes` with the states they carry: bound to the
// inputs every chunk function reads besides its hidden state or tokens.
FunctionLowering chunk_function(AnePackage& pkg, const ir::Function& fn, const ChunkFunction& cf,
                                const AneOptions& options, const std::vector<ir::ValueId>& nodes) {
    const int64_t t = tokens_of(cf.rows, options);
    FunctionLowering f(*pkg.context, fn, new_function(pkg.model, cf.name), t);
    f.all_rows = cf.rows == Rows::verify;
    f.position_ids = MilValue{"position_ids", mil::INT32, {t}};
    f.causal_mask =
        MilValue{"causal_mask", mil::FLOAT16, {1, 1, t, context_length(pkg.context->program)}};
    f.current_pos = MilValue{"current_pos", mil::INT32, {1}};
    const ir::StateDecl& kv = pkg.context->kv.state;
    f.state_values[kv.name] = MilValue{kv.name, mil::FLOAT16, kv.shape};
    f.carry_states(nodes);
    return f;
}

}  // namespace

AnePackage lower_chunk(const ir::Program& program, int64_t first, int64_t end,
                       const AneOptions& options) {
    const ir::Function& fn = decode_function(program);
    const ProgramParts parts = split_parts(fn);
    const auto n_layer = static_cast<int64_t>(parts.layers.size());
    if (first < 0 || first >= end || end > n_layer)
        fail("layers {}..{} are not a chunk of a {}-layer model", first, end, n_layer);
    const bool last_chunk = end == n_layer;
    refuse_verify_with_carried_states(program, options);
    AnePackage pkg{new_model(options), std::make_shared<PackageContext>(
                                           program, context_length(program), options.numerics)};

    std::vector<ir::ValueId> nodes;
    for (int64_t l = first; l < end; ++l)
        nodes.insert(nodes.end(), parts.layers[l].begin(), parts.layers[l].end());
    // The hidden state comes in; so may values the embeddings computed beside
    // it (Gemma 4's per-layer inputs), as inputs named after them.
    std::vector<ir::ValueId> side = part_inputs(fn, nodes);
    const ir::ValueId in_id = side.front();
    side.erase(side.begin());
    const ir::ValueId out_id = part_output(fn, nodes);
    const int64_t h = hidden_width(fn, in_id);

    for (const ChunkFunction& cf : chunk_functions(options)) {
        const auto& [name, kind] = cf;
        FunctionLowering f = chunk_function(pkg, fn, cf, options, nodes);
        const int64_t t = f.n_tokens();
        const MilValue hidden{"hidden_states", mil::FLOAT16, {1, t, h}};
        f.bind(in_id, f.to_channels(hidden, "hidden_in"));
        std::vector<MilValue> side_inputs;
        for (ir::ValueId id : side) {
            const std::string n = side_input_name(fn, id);
            side_inputs.push_back(MilValue{n, mil::FLOAT16, {1, t, hidden_width(fn, id)}});
            f.bind(id, f.to_channels(side_inputs.back(), n + "_channels"));
        }
        for (ir::ValueId id : nodes) f.lower(id);
        MilValue out = f.value(out_id);
        if (last_chunk && kind != Rows::batch) {
            // The final norm runs here, in the last chunk's infer and verify.
            for (ir::ValueId id : parts.final_norm) f.lower(id);
            out = f.value(parts.final_norm.back());
        } else if (last_chunk) {
            // Only the first row leaves the last chunk's prefill: the runner discards it.
            out = first_row(f, out);
        }
        std::vector<MilValue> outputs{f.to_rows(out, "output_hidden_states")};
        f.builder().output(outputs[0]);
        for (const MilValue& o : f.carried_outputs()) outputs.push_back(o);
        describe(pkg, name, f, hidden, outputs, side_inputs);
    }
    pkg.model.mutable_description()->set_defaultfunctionname("infer");
    return pkg;
}

AnePackage lower_lm_head(const ir::Program& program, const std::vector<int64_t>& pieces,
                         const AneOptions& options) {
    const ir::Function& fn = decode_function(program);
    const ProgramParts parts = split_parts(fn);
    AnePackage pkg{new_model(options), std::make_shared<PackageContext>(
                                           program, context_length(program), options.numerics)};
    mil::Block& block = new_function(pkg.model, "main");
    const int64_t h = hidden_width(fn, parts.final_norm.back());
    // main for one token; with verify, a second function for T, and the model
    // described per function (main the default) as the chunks are.
    const bool multifunction = options.verify > 0;
    for (const auto& [name, t] :
         std::vector<std::pair<std::string, int64_t>>{{"main", 1}, {"verify", options.verify}}) {
        if (t == 0) continue;
        mil::Block& fn_block = name == "main" ? block : new_function(pkg.model, name);
        const MilValue hidden{"hidden_states", mil::FLOAT16, {1, t, h}};
        FunctionLowering f(*pkg.context, fn, fn_block, t);
        f.all_rows = t > 1;
        const std::vector<MilValue> outputs =
            lower_head(f, fn, parts, f.to_channels(hidden, "hidden_in"), pieces, options.argmax);
        add_input(pkg.model.mutable_mlprogram()->mutable_functions()->at(name), hidden);
        spec::ModelDescription& d = *pkg.model.mutable_description();
        if (!multifunction) {
            *d.add_input() = feature({hidden, {}});
            for (const MilValue& o : outputs) *d.add_output() = feature({o, {}});
            continue;
        }
        spec::FunctionDescription& fd = *d.add_functions();
        fd.set_name(name);
        *fd.add_input() = feature({hidden, {}});
        for (const MilValue& o : outputs) *fd.add_output() = feature({o, {}});
    }
    if (multifunction) pkg.model.mutable_description()->set_defaultfunctionname("main");
    return pkg;
}

AnePackage lower_monolithic(const ir::Program& program, const std::vector<int64_t>& pieces,
                            const AneOptions& options) {
    const ir::Function& fn = decode_function(program);
    const ProgramParts parts = split_parts(fn);
    refuse_verify_with_carried_states(program, options);
    AnePackage pkg{new_model(options), std::make_shared<PackageContext>(
                                           program, context_length(program), options.numerics)};
    const std::vector<ir::ValueId> embedded = part_outputs(fn, parts.embedding);
    std::vector<ir::ValueId> layers;
    for (const auto& l : parts.layers) layers.insert(layers.end(), l.begin(), l.end());
    const ir::ValueId stream = part_output(fn, layers);

    for (const ChunkFunction& cf : chunk_functions(options)) {
        const auto& [name, kind] = cf;
        FunctionLowering f = chunk_function(pkg, fn, cf, options, layers);
        const int64_t t = f.n_tokens();
        f.input_ids = MilValue{"input_ids", mil::INT32, {1, t}};
        const std::optional<MilValue> rows_input = lower_embedding_part(f, fn, parts, options, t);
        for (ir::ValueId id : embedded)
            if (f.in_rows(id))
                f.bind(id, embedded.size() == 1 ? f.to_channels(f.value(id), "hidden_in")
                                                : f.channels(id));
        for (ir::ValueId id : layers) f.lower(id);
        // Prefill's result is discarded by the runners: only its first row goes on.
        const bool batch = kind == Rows::batch;
        if (batch) f.bind(stream, first_row(f, f.value(stream)));
        for (ir::ValueId id : parts.final_norm) f.lower(id);
        std::vector<MilValue> outputs = lower_head(f, fn, parts, f.value(parts.final_norm.back()),
                                                   pieces, options.argmax && !batch);
        for (const MilValue& o : f.carried_outputs()) outputs.push_back(o);
        describe(pkg, name, f, f.input_ids, outputs,
                 rows_input ? std::vector<MilValue>{*rows_input} : std::vector<MilValue>{});
    }
    pkg.model.mutable_description()->set_defaultfunctionname("infer");
    return pkg;
}

std::vector<anemll::CarriedInput> carried_inputs(const AnePackage& package) {
    std::vector<anemll::CarriedInput> carried;
    const auto& functions = package.model.description().functions();
    if (functions.empty()) return carried;
    std::set<std::string> outputs;
    for (const auto& o : functions[0].output()) outputs.insert(o.name());
    for (const auto& in : functions[0].input()) {
        const auto& shape = in.type().multiarraytype().shape();
        if (outputs.contains(in.name() + "_out"))
            carried.push_back({"", in.name(), {shape.begin(), shape.end()}});
        else if (in.name().ends_with(side_input_suffix))
            carried.push_back({"", in.name(), {shape.begin(), shape.end()}, false});
    }
    return carried;
}

void write_ane_package(const AnePackage& package, const std::filesystem::path& dir,
                       bool overwrite) {
    coreml::write_package(dir, package.model, package.blobs(), overwrite);
}

}  // namespace anelm::lower
