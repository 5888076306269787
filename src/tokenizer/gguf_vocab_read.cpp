#include "tokenizer/gguf_vocab_read.h"

#include <limits>

#include "base/error.h"
#include "tokenizer/hash_tables.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

void read_tokens(const GgufFile& gguf, GgufVocab& v) {
    const std::string& path = gguf.path();
    const std::vector<std::string_view> texts = gguf.strings("tokenizer.ggml.tokens");
    if (texts.empty()) fail("{}: metadata tokenizer.ggml.tokens is missing or empty", path);
    if (texts.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        fail("{}: metadata tokenizer.ggml.tokens has {} tokens, too many", path, texts.size());
    StringMap seen;
    seen.reserve(texts.size());
    v.tokens.reserve(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
        if (utf8::find_invalid(texts[i]) != std::string_view::npos)
            fail(
                "{}: metadata tokenizer.ggml.tokens[{}] is not UTF-8, which tokenizer.json "
                "cannot hold",
                path, i);
        // llama.cpp's name for an empty token, which no text can produce.
        v.tokens.push_back(texts[i].empty() ? fmt::format("[EMPTY_{}]", i) : std::string(texts[i]));
        if (const int32_t before = seen.find(v.tokens.back()); before >= 0)
            fail("{}: metadata tokenizer.ggml.tokens[{}] \"{}\" repeats token {}", path, i,
                 texts[i], before);
        seen.insert(v.tokens.back(), static_cast<int32_t>(i));
    }

    const std::vector<int64_t> types = gguf.ints("tokenizer.ggml.token_type");
    if (types.empty()) {
        v.types.assign(v.tokens.size(), GgufTokenType::normal);  // as llama.cpp without types
    } else if (types.size() != v.tokens.size()) {
        fail("{}: metadata tokenizer.ggml.token_type has {} entries for {} tokens", path,
             types.size(), v.tokens.size());
    }
    for (size_t i = 0; i < types.size(); ++i) {
        if (types[i] < 0 || types[i] > 6)
            fail("{}: metadata tokenizer.ggml.token_type[{}] is {}, not a token type (0 to 6)",
                 path, i, types[i]);
        // Undefined (0) is taken as normal: llama.cpp encodes to such tokens like any other.
        v.types.push_back(types[i] == 0 ? GgufTokenType::normal
                                        : static_cast<GgufTokenType>(types[i]));
    }
}

void read_scores(const GgufFile& gguf, GgufVocab& v) {
    v.scores = gguf.floats("tokenizer.ggml.scores");
    if (v.scores.empty())
        fail(
            "{}: metadata tokenizer.ggml.scores is missing: a SentencePiece vocabulary needs one "
            "score per token",
            gguf.path());
    if (v.scores.size() != v.tokens.size())
        fail("{}: metadata tokenizer.ggml.scores has {} entries for {} tokens", gguf.path(),
             v.scores.size(), v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.types[i] != GgufTokenType::byte) continue;
        // Byte fallback finds byte tokens by these names.
        const std::string& t = v.tokens[i];
        if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>' ||
            t.find_first_not_of("0123456789ABCDEF", 3) != 5)
            fail(
                "{}: metadata tokenizer.ggml.tokens[{}] \"{}\" is a byte token (type 6) not "
                "named <0xXX>",
                gguf.path(), i, t);
    }
}

void read_merges(const GgufFile& gguf, GgufVocab& v) {
    const std::string& path = gguf.path();
    const std::vector<std::string_view> merges = gguf.strings("tokenizer.ggml.merges");
    if (merges.empty()) fail("{}: metadata tokenizer.ggml.merges is missing or empty", path);
    // The halves and their join must be tokens the BPE model holds (unused ids are left out).
    StringMap ids;
    ids.reserve(v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i)
        if (v.types[i] != GgufTokenType::unused) ids.insert(v.tokens[i], static_cast<int32_t>(i));
    std::string joined;
    v.merges.reserve(merges.size());
    for (size_t k = 0; k < merges.size(); ++k) {
        const std::string_view m = merges[k];
        // As llama.cpp: the first space after the first byte separates the halves.
        const size_t space = m.find(' ', 1);
        if (space == std::string_view::npos)
            fail("{}: metadata tokenizer.ggml.merges[{}] \"{}\" is not two tokens and a space",
                 path, k, m);
        const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
        joined.assign(left).append(right);
        for (std::string_view part : {left, right, std::string_view(joined)})
            if (ids.find(part) < 0)
                fail("{}: metadata tokenizer.ggml.merges[{}] \"{}\": \"{}\" is not a token", path,
                     k, m, part);
        v.merges.emplace_back(left, right);
    }
}

void read_special_ids(const GgufFile& gguf, GgufVocab& v) {
    const auto n = static_cast<int64_t>(v.tokens.size());
    if (!v.byte_level) {
        // llama.cpp's defaults for SentencePiece vocabularies.
        v.unk = 0;
        v.bos = n > 1 ? 1 : -1;
        v.eos = n > 2 ? 2 : -1;
    }
    const std::pair<const char*, int32_t*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},     {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.unknown_token_id", &v.unk}, {"tokenizer.ggml.padding_token_id", &v.pad},
        {"tokenizer.ggml.eot_token_id", &v.eot},     {"tokenizer.ggml.eom_token_id", &v.eom},
    };
    for (const auto& [key, id] : keys) {
        // An id outside the vocabulary (converters write 0xFFFFFFFF for "none")
        // keeps the default, as in llama.cpp.
        const std::optional<int64_t> value = gguf.find_int(key);
        if (value && *value >= 0 && *value < n) *id = static_cast<int32_t>(*value);
    }

    const std::optional<bool> add_bos = gguf.find_bool("tokenizer.ggml.add_bos_token");
    const std::optional<bool> add_eos = gguf.find_bool("tokenizer.ggml.add_eos_token");
    // Without the key, llama.cpp's default, which adds nothing when there is no BOS.
    v.add_bos = add_bos ? *add_bos : (v.byte_level ? v.pre.add_bos : true) && v.bos >= 0;
    v.add_eos = add_eos.value_or(false);
    if (v.add_bos && v.bos < 0)
        fail(
            "{}: metadata tokenizer.ggml.add_bos_token is true but there is no BOS token "
            "(tokenizer.ggml.bos_token_id)",
            gguf.path());
    if (v.add_eos && v.eos < 0)
        fail(
            "{}: metadata tokenizer.ggml.add_eos_token is true but there is no EOS token "
            "(tokenizer.ggml.eos_token_id)",
            gguf.path());
}

}  // namespace

GgufVocab read_gguf_vocab(const GgufFile& gguf) {
    const std::string& path = gguf.path();
    const std::optional<std::string> model = gguf.find_string("tokenizer.ggml.model");
    if (!model)
        fail("{}: metadata tokenizer.ggml.model is missing: the file has no tokenizer", path);
    GgufVocab v;
    if (*model == "gpt2") {
        v.byte_level = true;
        const std::string pre = gguf.find_string("tokenizer.ggml.pre").value_or("");
        std::optional<GgufPreTokenizer> known = gguf_pre_tokenizer(pre);
        if (!known)
            fail(
                "{}: metadata tokenizer.ggml.pre is \"{}\", a pre-tokenizer anelm does not know "
                "(it knows {})",
                path, pre, gguf_pre_tokenizer_names());
        v.pre = std::move(*known);
    } else if (*model != "llama") {
        fail(
            "{}: metadata tokenizer.ggml.model is \"{}\"; anelm reads \"gpt2\" (byte-level BPE) "
            "and \"llama\" (SentencePiece) vocabularies",
            path, *model);
    }
    read_tokens(gguf, v);
    if (v.byte_level)
        read_merges(gguf, v);
    else
        read_scores(gguf, v);
    read_special_ids(gguf, v);
    v.add_space_prefix =
        v.byte_level ? false : gguf.find_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    return v;
}

}  // namespace anelm
