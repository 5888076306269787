#include "anemll/convert_readme.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace anelm::anemll {

namespace {

using quant::QuantChoice;
using quant::QuantMethod;

std::string lut_words(const QuantChoice& lut) {
    if (lut.method == QuantMethod::none) return "fp16";
    if (lut.group_size == 0) return fmt::format("LUT{} per tensor", lut.nbits);
    return fmt::format("LUT{} in groups of {}", lut.nbits, lut.group_size);
}

std::string head_outputs(const ConvertLayout& l) {
    if (l.argmax_in_model)
        return fmt::format("argmax_idx and argmax_val, the best of each of {} pieces",
                           l.split_lm_head);
    return fmt::format("logits1 to logits{}, the vocabulary in pieces", l.split_lm_head);
}

std::string functions_words(const ConvertLayout& l) {
    std::string words = fmt::format("infer (1 token), prefill ({} tokens)", l.batch_size);
    if (l.rotates())
        words += fmt::format(", and their _rotate forms past position {}", l.sliding_window);
    if (l.verify_tokens > 0)
        words += fmt::format(", verify ({} tokens, every row's result: speculative decoding)",
                             l.verify_tokens);
    return words;
}

std::string tokenizer_file_words(std::string_view name) {
    if (name == "tokenizer.json")
        return "the tokenizer in Hugging Face's form (Swift runner, app, fast tokenizers)";
    if (name == "tokenizer.model") return "SentencePiece model, for transformers' slow tokenizer";
    if (name == "tokenizer_config.json") return "tokenizer class, special tokens, chat template";
    if (name == "vocab.json") return "BPE vocabulary, for transformers' slow tokenizer";
    if (name == "merges.txt") return "BPE merges, for transformers' slow tokenizer";
    if (name == "tokenizer.bin") return "llama2.c's tokenizer, which anelm generate reads";
    if (name == "special_tokens_map.json" || name == "added_tokens.json")
        return "special and added tokens";
    if (name == "chat_template.jinja") return "the chat template";
    if (name == "generation_config.json") return "end-of-text ids and sampling defaults";
    if (name == "config.json") return "the source model's config (swift-transformers reads it)";
    return "from the source model";
}

// What the runners load, and what is missing for one of them.
std::string tokenizer_notes(std::span<const std::string> files) {
    auto has = [&](std::string_view name) { return std::ranges::find(files, name) != files.end(); };
    std::string t =
        "\nTokenizer\n"
        "chat.py and chat_full.py load it with transformers' AutoTokenizer and use_fast=False;\n"
        "the Swift runner and the app with swift-transformers, from tokenizer.json and\n"
        "tokenizer_config.json.\n";
    if (has("tokenizer.bin"))
        t +=
            "tokenizer.json and tokenizer_config.json hold llama2.c's tokenizer.bin in Hugging\n"
            "Face's form. Their class, LlamaTokenizerFast, makes transformers read tokenizer.json\n"
            "even with use_fast=False, so no tokenizer.model is needed.\n";
    if (!has("tokenizer.json"))
        t += "There is no tokenizer.json: the Swift runner and the app need one. transformers\n"
             "writes it: AutoTokenizer.from_pretrained(SOURCE).save_pretrained(THIS_FOLDER).\n";
    const bool slow_bpe = has("vocab.json") && has("merges.txt");
    if (!has("tokenizer.bin") && !has("tokenizer.model"))
        t += slow_bpe
                 ? "vocab.json and merges.txt serve a slow byte-level BPE class (Qwen2Tokenizer,\n"
                   "GPT2Tokenizer) under use_fast=False.\n"
                 : "There is no tokenizer.model. If tokenizer_config.json names a SentencePiece\n"
                   "class (LlamaTokenizer, GemmaTokenizer), use_fast=False needs it: copy it from\n"
                   "the original model, or add Fast to the class name so transformers reads\n"
                   "tokenizer.json.\n";
    return t;
}

// (name, what it is) for every file, packages first.
std::vector<std::pair<std::string, std::string>> file_lines(
    const ConvertLayout& l, std::span<const std::string> tokenizer_files) {
    std::vector<std::pair<std::string, std::string>> lines;
    if (l.monolithic) {
        lines.emplace_back(
            package_name(l.monolithic_stem()),
            fmt::format("the whole model: {}; outputs {}", functions_words(l), head_outputs(l)));
    } else {
        lines.emplace_back(package_name(l.embeddings_stem()),
                           fmt::format("token embeddings, for 1 or {} tokens; {}", l.batch_size,
                                       lut_words(l.lut_embed)));
        for (int c = 1; c <= l.n_chunks; ++c)
            lines.emplace_back(package_name(l.ffn_chunk_stem(c)),
                               fmt::format("layers, chunk {} of {}: {}; {}", c, l.n_chunks,
                                           functions_words(l), lut_words(l.lut_ffn)));
        lines.emplace_back(package_name(l.lm_head_stem()),
                           fmt::format("LM head: {}; {}", head_outputs(l), lut_words(l.lut_head)));
    }
    if (l.per_layer_bits > 0)
        lines.emplace_back(
            l.per_layer_table_file(),
            fmt::format(
                "per-layer embedding table, a row per token; {}",
                l.per_layer_bits == 16 ? "f16" : "int8 with an f16 scale per layer's slice"));
    lines.emplace_back("meta.yaml", "what the runners read: file names, sizes and flags");
    for (const std::string& name : tokenizer_files)
        lines.emplace_back(name, tokenizer_file_words(name));
    lines.emplace_back("README.txt", "this file");
    return lines;
}

// The path as one shell word: quoted when it holds anything but plain characters.
std::string shell_word(std::string_view s) {
    const bool plain = !s.empty() && std::ranges::all_of(s, [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("/._-+~").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(s);
    std::string quoted = "'";
    for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

std::string carried_words(std::string_view name) {
    if (name == "conv_state")
        return "each causal depthwise convolution's last inputs (kernel size - 1), per layer";
    if (name == "delta_state")
        return "each Gated DeltaNet layer's state matrices, per value head (stored times 64 "
               "against fp16 subnormals; opaque to the runner)";
    return "a state of the model";
}

// What a runner must pass the packages besides ANEMLL's inputs (Gemma 4):
// the per-layer table's rows to the embeddings, their per-layer inputs to
// the chunks.
std::string per_layer_notes(const ConvertLayout& l, std::span<const CarriedInput> passed) {
    std::string t = "\nPer-layer inputs\n";
    if (l.per_layer_bits > 0)
        t += fmt::format(
            "{} holds each token's per-layer embedding row (Gemma 4),\n"
            "too large for a package. The {} takes the prompt's rows as\n"
            "per_layer_token_embd fp16 [1, T, row width]:\n"
            "after the 40-byte header (\"ANELMPLT\", u32 version, u32 bits, u64 rows, cols,\n"
            "group) each row is {}.\n",
            l.per_layer_table_file(), l.monolithic ? "monolithic package" : "embeddings package",
            l.per_layer_bits == 16 ? "cols f16 values"
                                   : "cols int8 codes then an f16 scale per group (value = code "
                                     "x scale)");
    if (!passed.empty()) {
        t +=
            "The embeddings package returns, beside hidden_states, every layer's per-layer input;\n"
            "each chunk reads the layers' part it needs. A runner passes that output, unchanged,\n"
            "to every chunk with the hidden state, in infer and prefill alike:\n";
        for (const CarriedInput& c : passed)
            t += fmt::format("  {}: {} fp16 [{}]\n", c.package, c.name, fmt::join(c.shape, ", "));
        t += "The layers that reuse an earlier layer's K and V read that layer's rows of the KV\n"
             "state: create one state and pass it to every chunk, as ANEMLL's chat.py does.\n";
    }
    t += "ANEMLL's runners do not pass these inputs and cannot run this folder. anelm runs it:\n";
    return t;
}

// What a runner must do with the states the packages carry as inputs and outputs.
std::string carried_notes(std::span<const CarriedInput> carried, int64_t batch,
                          const std::string& dir) {
    std::string t =
        "\nStates beyond the KV cache\n"
        "This model carries state from token to token that is not a KV cache. The KV cache is\n"
        "the one MLState of each package (two MLStates in one graph fail at predict time on the\n"
        "ANE); the rest are plain inputs whose updated values come back as outputs:\n";
    for (const CarriedInput& c : carried)
        t += fmt::format("  {}: {} fp16 [{}] -> {}_out\n      {}\n", c.package, c.name,
                         fmt::join(c.shape, ", "), c.name, carried_words(c.name));
    t += fmt::format(
        "A runner must:\n"
        "  - start every one of them at zeros for a new conversation (with the KV state);\n"
        "  - pass each package, at every call of infer or prefill, the values its previous\n"
        "    call returned (both functions share them);\n"
        "  - call prefill only with full batches of {} real tokens and run the rest of a prompt\n"
        "    through infer one token at a time: a padding token would enter the state;\n"
        "  - never step back to an earlier position (no prompt-cache reuse of a shorter prefix,\n"
        "    no speculative verify) except by starting again from zeros.\n"
        "ANEMLL's runners (chat.py, chat_full.py, the Swift CLI and the app) do not know these\n"
        "models or these inputs and cannot run this folder. anelm runs it:\n"
        "  anelm generate {} -p \"Who are you?\"\n",
        batch, dir);
    return t;
}

}  // namespace

std::string convert_readme_text(const MetaYaml& meta, std::span<const std::string> tokenizer_files,
                                std::string_view out_dir, std::span<const CarriedInput> carried) {
    const ConvertLayout& l = meta.layout;
    const std::string dir = shell_word(out_dir);
    const std::string meta_path = shell_word(fmt::format("{}/meta.yaml", out_dir));
    std::string t;
    t += fmt::format("{} for the Apple Neural Engine, converted by anelm{}{}\n\n", meta.model_name,
                     meta.anelm_version.empty() ? "" : " ", meta.anelm_version);
    t += carried.empty() && l.per_layer_bits == 0
             ? "These Core ML packages follow ANEMLL's layout (https://github.com/Anemll/Anemll): "
               "its\nPython and Swift runners and the ANEMLL Chat app load this folder through "
               "meta.yaml.\n"
             : "These Core ML packages follow ANEMLL's layout (https://github.com/Anemll/Anemll), "
               "with\ninputs its runners do not pass (below).\n";
    t += fmt::format("Context length {}, prefill batch {}, {}.\n", l.context_length, l.batch_size,
                     l.monolithic
                         ? "one monolithic file"
                         : fmt::format("{} layer chunk{}", l.n_chunks, l.n_chunks == 1 ? "" : "s"));
    if (l.lut_embed.method != QuantMethod::none || l.lut_ffn.method != QuantMethod::none ||
        l.lut_head.method != QuantMethod::none)
        t += "LUTn: each weight is an n-bit index into a table of 2^n values, one table per\n"
             "group of output channels.\n";
    if (l.fp16_scale != 1)
        t +=
            fmt::format("The residual stream is scaled by {} inside the weights to stay in fp16.\n",
                        l.fp16_scale);

    t += "\nFiles\n";
    const auto lines = file_lines(l, tokenizer_files);
    size_t width = 0;
    for (const auto& [name, what] : lines) width = std::max(width, name.size());
    for (const auto& [name, what] : lines) t += fmt::format("  {:<{}}  {}\n", name, width, what);
    t += tokenizer_notes(tokenizer_files);
    std::vector<CarriedInput> returned, passed;
    for (const CarriedInput& c : carried) (c.returned ? returned : passed).push_back(c);
    const bool per_layer = !passed.empty() || l.per_layer_bits > 0;
    if (per_layer) t += per_layer_notes(l, passed);
    if (!returned.empty()) t += carried_notes(returned, l.batch_size, dir);
    if (returned.empty() && per_layer)
        t += fmt::format("  anelm generate {} -p \"Who are you?\"\n", dir);

    t += "\nCompile, on a Mac with Xcode's command line tools (the Swift runner and the app load\n"
         "compiled .mlmodelc folders; chat.py also loads the .mlpackage files as they are):\n";
    t += fmt::format("  cd {}\n", dir);
    for (const std::string& stem : l.package_stems())
        t += fmt::format("  xcrun coremlcompiler compile {} .\n", package_name(stem));

    // ANEMLL's runners cannot: carried_notes and per_layer_notes say so.
    if (!carried.empty() || l.per_layer_bits > 0) return t;
    t += "\nRun with ANEMLL's Python runner, from a checkout of its repository with its\n"
         "requirements installed:\n";
    t += fmt::format("  python tests/chat.py --meta {}\n", meta_path);
    t += fmt::format("  python tests/chat_full.py --meta {}   (keeps the conversation)\n",
                     meta_path);
    t += "\nRun with ANEMLL's Swift CLI, from anemll-swift-cli in that checkout:\n";
    t += fmt::format("  swift run -c release anemllcli --meta {} --prompt \"Who are you?\"\n",
                     meta_path);
    return t;
}

}  // namespace anelm::anemll
