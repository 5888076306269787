#include "synth/family.h"

#include <fmt/format.h>

#include "base/error.h"
#include "models/models.h"

namespace anelm::synth {

namespace {

// The split patterns of the Qwen2 and Llama 3 tokenizers; they differ in how many
// digits make one piece.
constexpr std::string_view qwen_split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view llama_split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// ChatML, without the tool and reasoning branches of the released templates.
constexpr std::string_view chatml_template =
    R"({% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

// Llama 3 headers and end-of-turn tokens, without the tool branches.
constexpr std::string_view llama3_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})";

// Gemma turns: <start_of_turn>role ... <end_of_turn>, the assistant's role named model.
constexpr std::string_view gemma_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %})";

std::vector<SpecialToken> qwen_specials(bool qwen3) {
    std::vector<SpecialToken> tokens = {
        {"<|endoftext|>"},         {"<|im_start|>"},          {"<|im_end|>"},
        {"<|object_ref_start|>"},  {"<|object_ref_end|>"},    {"<|box_start|>"},
        {"<|box_end|>"},           {"<|quad_start|>"},        {"<|quad_end|>"},
        {"<|vision_start|>"},      {"<|vision_end|>"},        {"<|vision_pad|>"},
        {"<|image_pad|>"},         {"<|video_pad|>"},         {"<tool_call>", false},
        {"</tool_call>", false},   {"<|fim_prefix|>", false}, {"<|fim_middle|>", false},
        {"<|fim_suffix|>", false}, {"<|fim_pad|>", false},    {"<|repo_name|>", false},
        {"<|file_sep|>", false},
    };
    if (qwen3) {
        for (const char* t : {"<tool_response>", "</tool_response>", "<think>", "</think>"})
            tokens.push_back({t, false});
    }
    return tokens;
}

Family qwen_family(bool qwen3) {
    Family f;
    f.specials = qwen_specials(qwen3);
    f.split_regex = qwen_split;
    f.nfc = true;
    f.config_bos = "<|endoftext|>";
    f.eos = "<|im_end|>";
    f.pad = "<|endoftext|>";
    f.config_eos = {"<|im_end|>"};
    f.generation_eos = {"<|im_end|>", "<|endoftext|>"};
    f.chat_template = chatml_template;
    f.tokenizer_class = "Qwen2Tokenizer";
    f.temperature = qwen3 ? 0.6 : 0.7;
    f.top_p = qwen3 ? 0.95 : 0.8;
    f.top_k = 20;
    f.repetition_penalty = qwen3 ? 1.0 : 1.05;
    return f;
}

Family llama3_family() {
    Family f;
    // Llama 3.1 and 3.2: the named tokens among the first eleven ids, reserved slots between.
    f.specials = {{"<|begin_of_text|>"},
                  {"<|end_of_text|>"},
                  {""},
                  {""},
                  {"<|finetune_right_pad_id|>"},
                  {""},
                  {"<|start_header_id|>"},
                  {"<|end_header_id|>"},
                  {"<|eom_id|>"},
                  {"<|eot_id|>"},
                  {"<|python_tag|>"}};
    f.split_regex = llama_split;
    f.add_bos = true;
    f.ignore_merges = true;
    f.config_bos = "<|begin_of_text|>";
    f.bos = "<|begin_of_text|>";
    f.eos = "<|eot_id|>";
    f.config_eos = {"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"};
    f.generation_eos = f.config_eos;
    f.chat_template = llama3_template;
    f.tokenizer_class = "PreTrainedTokenizerFast";
    f.temperature = 0.6;
    f.top_p = 0.9;
    return f;
}

Family gemma3_family() {
    Family f;
    f.specials = {{"<pad>"},  {"<eos>"},           {"<bos>"},        {"<unk>"},
                  {"<mask>"}, {"<start_of_turn>"}, {"<end_of_turn>"}};
    f.split_regex = llama_split;
    f.add_bos = true;
    f.config_bos = "<bos>";
    f.bos = "<bos>";
    f.eos = "<eos>";
    f.pad = "<pad>";
    f.config_eos = {"<eos>", "<end_of_turn>"};
    f.generation_eos = f.config_eos;
    f.chat_template = gemma_template;
    f.tokenizer_class = "GemmaTokenizer";
    f.top_p = 0.95;
    f.top_k = 64;
    return f;
}

// LFM2: ChatML turns after a start-of-text token.
constexpr std::string_view lfm2_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

Family lfm2_family() {
    Family f;
    f.specials = {{"<|pad|>"},          {"<|startoftext|>"}, {"<|endoftext|>"},
                  {"<|fim_pre|>"},      {"<|fim_mid|>"},     {"<|fim_suf|>"},
                  {"<|im_start|>"},     {"<|im_end|>"},      {"<|tool_list_start|>"},
                  {"<|tool_list_end|>"}};
    f.split_regex = llama_split;
    f.add_bos = true;
    f.ignore_merges = true;  // as llama.cpp's lfm2 pre-tokenizer
    f.config_bos = "<|startoftext|>";
    f.bos = "<|startoftext|>";
    f.eos = "<|im_end|>";
    f.pad = "<|pad|>";
    f.config_eos = {"<|im_end|>"};
    f.generation_eos = f.config_eos;
    f.chat_template = lfm2_template;
    f.tokenizer_class = "PreTrainedTokenizerFast";
    f.temperature = 0.3;
    f.top_k = 50;
    f.repetition_penalty = 1.05;
    return f;
}

}  // namespace

const Family& family_of(Arch arch) {
    static const Family llama = llama3_family();
    static const Family qwen2 = qwen_family(false);
    static const Family qwen3 = qwen_family(true);
    static const Family gemma3 = gemma3_family();
    static const Family lfm2 = lfm2_family();
    static const Family qwen3_5 = qwen_family(true);
    switch (arch) {
        case Arch::llama:
            return llama;
        case Arch::qwen2:
            return qwen2;
        case Arch::qwen3:
            return qwen3;
        case Arch::gemma3:
        case Arch::gemma4:  // the synthetic tokenizer and turns of Gemma 3
            return gemma3;
        case Arch::lfm2:
            return lfm2;
        case Arch::qwen3_5:
            return qwen3_5;
    }
    fail("synth: no tokenizer family for architecture {}", arch_name(arch));
}

std::vector<SpecialToken> special_tokens(const Family& family, int64_t count) {
    std::vector<SpecialToken> out;
    int reserved = 0;
    for (int64_t i = 0; i < count; ++i) {
        const bool named = i < static_cast<int64_t>(family.specials.size()) &&
                           !family.specials[static_cast<size_t>(i)].content.empty();
        if (named) {
            out.push_back(family.specials[static_cast<size_t>(i)]);
        } else {
            out.push_back({fmt::format("<|reserved_special_token_{}|>", reserved++), true});
        }
    }
    return out;
}

int32_t special_token_id(const Family& family, int64_t n_vocab_bpe, std::string_view content) {
    for (size_t i = 0; i < family.specials.size(); ++i)
        if (family.specials[i].content == content) return static_cast<int32_t>(n_vocab_bpe + i);
    fail("synth: no special token {}", content);
}

}  // namespace anelm::synth
