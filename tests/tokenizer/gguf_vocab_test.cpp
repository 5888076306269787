// The tokenizer of a GGUF file's metadata, as Hugging Face files loaded from
// memory: llama.cpp's own vocab-only llama-spm GGUF, and byte-level GGUF files
// written here from the Qwen3 and Llama 3 tokenizer.json the way llama.cpp's
// converter writes them, against llama.cpp's test strings and the vectors made
// with Hugging Face's tokenizers; then the errors for metadata anelm cannot read.
#include "tokenizer/gguf_vocab.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "io/gguf_test_writer.h"
#include "tokenizer/gguf_vocab_writer.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* vocab_dir = "tokenizers/llama.cpp-vocab-tests/";
constexpr const char* spm_gguf = "tokenizers/llama.cpp-vocab-tests/ggml-vocab-llama-spm.gguf";

// How many of the 46 test strings encode to the .out ids (no BOS).
size_t check_vocab_vectors(const Tokenizer& tok, const std::string& name) {
    const std::string base = std::string(vocab_dir) + "ggml-vocab-" + name + ".gguf";
    const auto inputs = read_inputs(shared_path(base + ".inp"));
    const auto outputs = read_outputs(shared_path(base + ".out"));
    EXPECT_EQ(inputs.size(), 46u);
    EXPECT_EQ(inputs.size(), outputs.size());
    size_t passed = 0;
    for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
        const bool ok = tok.encode(inputs[i], false) == outputs[i];
        EXPECT_TRUE(ok) << name << " case " << i << ": \"" << inputs[i] << "\"";
        passed += ok;
    }
    std::cout << base << " from GGUF metadata: " << passed << "/" << inputs.size() << " pass\n";
    return passed;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// ---- SentencePiece: llama.cpp's ggml-vocab-llama-spm.gguf ----

class GgufSpm : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!fs::exists(shared_path(spm_gguf))) return;
        tok_ = load_tokenizer(shared_path(spm_gguf).string());
    }
    static void TearDownTestSuite() { tok_.reset(); }
    void SetUp() override { ANELM_REQUIRE_SHARED(spm_gguf); }
    static inline std::unique_ptr<Tokenizer> tok_;
};

TEST_F(GgufSpm, MatchesLlamaCppTestStrings) {
    EXPECT_EQ(check_vocab_vectors(*tok_, "llama-spm"), 46u);
}

TEST_F(GgufSpm, AddsBosAndDecodesBack) {
    EXPECT_EQ(tok_->n_vocab(), 32000);
    EXPECT_EQ(tok_->bos_id(), 1);
    EXPECT_EQ(tok_->eos_ids(), std::vector<int32_t>{2});
    EXPECT_TRUE(tok_->is_special(1));
    EXPECT_EQ(tok_->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
    // A special token cut out of the text, and a space before the text after it.
    std::vector<int32_t> hi = tok_->encode("Hi", false), twice = hi;
    twice.push_back(2);
    twice.insert(twice.end(), hi.begin(), hi.end());
    EXPECT_EQ(tok_->encode("Hi</s>Hi", false), twice);
    for (const std::string& text :
         read_inputs(shared_path(std::string(vocab_dir) + "ggml-vocab-llama-spm.gguf.inp")))
        EXPECT_EQ(tok_->decode(tok_->encode(text, false)), text);
}

TEST_F(GgufSpm, WritesLlamaStyleFiles) {
    const GgufTokenizerFiles files = gguf_tokenizer_files(GgufFile(shared_path(spm_gguf)));
    const auto tok = nlohmann::json::parse(files.tokenizer_json);
    EXPECT_EQ(tok["model"]["type"], "BPE");
    EXPECT_EQ(tok["model"]["byte_fallback"], true);
    EXPECT_EQ(tok["model"]["unk_token"], "<unk>");
    EXPECT_EQ(tok["model"]["vocab"].size(), 32000u);
    EXPECT_EQ(tok["model"]["merges"][0], "\xE2\x96\x81 t");  // "▁t", the best score
    EXPECT_EQ(tok["added_tokens"].size(), 3u);
    EXPECT_EQ(tok["normalizer"]["normalizers"][0]["type"], "Prepend");
    const auto config = nlohmann::json::parse(files.tokenizer_config_json);
    EXPECT_EQ(config["bos_token"], "<s>");
    EXPECT_EQ(config["eos_token"], "</s>");
    EXPECT_EQ(config["unk_token"], "<unk>");
    EXPECT_EQ(config["add_bos_token"], true);
    EXPECT_EQ(config["add_eos_token"], false);
    EXPECT_FALSE(config.contains("chat_template"));

    // Written to a folder and loaded from there, the same tokenizer.
    const fs::path dir = temp_dir("gguf-spm-files");
    write_gguf_tokenizer_files(GgufFile(shared_path(spm_gguf)), dir.string());
    const auto from_files = load_tokenizer(dir.string());
    const std::string text = "Once upon a time, 3333 caf\xC3\xA9s <s> \xF0\x9F\xA6\x99\n";
    EXPECT_EQ(from_files->encode(text, true), tok_->encode(text, true));
    EXPECT_EQ(from_files->eos_ids(), tok_->eos_ids());
    fs::remove_all(dir);
}

// ---- Byte-level BPE: GGUF files made from Hugging Face tokenizer.json ----

std::string write_gguf_from_hf(const std::string& name, const std::string& pre) {
    GgufTestWriter w;
    w.string("general.architecture", "test");
    add_hf_tokenizer(w, shared_path("tokenizers/" + name + "/tokenizer.json"),
                     shared_path("tokenizers/" + name + "/tokenizer_config.json"), pre);
    const fs::path dir = temp_dir("gguf-vocab-" + name);
    const std::string path = (dir / (name + ".gguf")).string();
    w.write(path);
    return path;
}

struct ByteLevelCase {
    const char* model;  // shared/tokenizers/<model>
    const char* pre;    // tokenizer.ggml.pre
    const char* vocab;  // ggml-vocab-<vocab>.gguf.inp / .out
};

void PrintTo(const ByteLevelCase& c, std::ostream* os) {
    *os << c.model;
}

// Each model's GGUF file is written and loaded once for the tests that use it.
class GgufByteLevel : public ::testing::TestWithParam<ByteLevelCase> {
protected:
    struct Built {
        std::string path;
        GgufTokenizerFiles files;
        std::unique_ptr<Tokenizer> tok;
    };
    static void TearDownTestSuite() {
        for (auto& [name, b] : built_) fs::remove_all(fs::path(b.path).parent_path());
        built_.clear();
    }
    void SetUp() override {
        ANELM_REQUIRE_SHARED(std::string("tokenizers/") + GetParam().model + "/tokenizer.json");
        Built& b = built_[GetParam().model];
        if (!b.tok) {
            const auto start = std::chrono::steady_clock::now();
            b.path = write_gguf_from_hf(GetParam().model, GetParam().pre);
            const GgufFile gguf(b.path);
            b.files = gguf_tokenizer_files(gguf);
            // From the texts just made (load_gguf_tokenizer would make them again).
            HfTokenizerTexts texts{b.files.tokenizer_json, b.files.tokenizer_config_json, {}};
            if (!b.files.generation_config_json.empty())
                texts.generation_config_json = b.files.generation_config_json;
            b.tok = std::make_unique<HfTokenizer>(texts, b.path);
            const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
            std::cout << GetParam().model << ": GGUF written, tokenizer made from it in "
                      << took.count() << " s\n";
        }
        path_ = b.path;
        files_ = &b.files;
        tok_ = b.tok.get();
    }
    static inline std::map<std::string, Built> built_;
    std::string path_;
    const GgufTokenizerFiles* files_ = nullptr;
    const Tokenizer* tok_ = nullptr;
};

TEST_P(GgufByteLevel, MatchesLlamaCppAndHuggingFace) {
    EXPECT_EQ(check_vocab_vectors(*tok_, GetParam().vocab), 46u);

    const std::string rel =
        std::string("tokenizers/") + GetParam().model + "/hf-tokenizers-vectors.jsonl";
    const auto rows = read_jsonl(shared_path(rel));
    EXPECT_EQ(rows.size(), 161u);
    size_t passed = 0;
    for (const auto& row : rows) {
        const std::string input = row["input"];
        const auto ids = row["ids"].get<std::vector<int32_t>>();
        std::vector<int32_t> unspecial;
        for (int32_t id : ids)
            if (!tok_->is_special(id)) unspecial.push_back(id);
        const bool ok_ids = tok_->encode(input, false) == ids;
        const bool ok_special =
            tok_->encode(input, true) == row["ids_with_special"].get<std::vector<int32_t>>();
        const bool ok_decoded = tok_->decode(ids) == row["decoded"].get<std::string>();
        const bool ok_skip =
            tok_->decode(unspecial) == row["decoded_skip_special"].get<std::string>();
        EXPECT_TRUE(ok_ids) << "ids of " << row["input"].dump();
        EXPECT_TRUE(ok_special) << "ids_with_special of " << row["input"].dump();
        EXPECT_TRUE(ok_decoded) << "decoded of " << row["input"].dump();
        EXPECT_TRUE(ok_skip) << "decoded_skip_special of " << row["input"].dump();
        passed += ok_ids && ok_special && ok_decoded && ok_skip;
    }
    std::cout << rel << " from GGUF metadata: " << passed << "/" << rows.size()
              << " vectors pass\n";
}

// The special tokens and the texts that tokenizer_config.json gets.
TEST_P(GgufByteLevel, ConfigAsTheHuggingFaceOne) {
    const std::string dir = std::string("tokenizers/") + GetParam().model + "/";
    const Tokenizer& hf = shared_tokenizer(GetParam().model);
    EXPECT_EQ(tok_->bos_id(), hf.bos_id());
    EXPECT_EQ(tok_->eos_ids(), hf.eos_ids());
    const auto hf_config =
        nlohmann::json::parse(read_file(shared_path(dir + "tokenizer_config.json")));
    const auto config = nlohmann::json::parse(files_->tokenizer_config_json);
    EXPECT_EQ(config["chat_template"], hf_config["chat_template"]);
    EXPECT_EQ(config["eos_token"], hf_config["eos_token"]);
    EXPECT_EQ(config["clean_up_tokenization_spaces"], hf_config["clean_up_tokenization_spaces"]);
    EXPECT_EQ(GgufFile(path_).find_string("tokenizer.chat_template"),
              hf_config["chat_template"].get<std::string>());
    // Every token of the Hugging Face file has its id and string here too.
    for (int32_t id = 0; id < hf.n_vocab(); ++id)
        ASSERT_EQ(tok_->token_to_piece(id), hf.token_to_piece(id)) << id;
    const auto tok = scan_tokenizer_json(files_->tokenizer_json, nullptr, nullptr);
    const auto hf_tok =
        scan_tokenizer_json(read_file(shared_path(dir + "tokenizer.json")), nullptr, nullptr);
    EXPECT_EQ(tok["pre_tokenizer"], hf_tok["pre_tokenizer"]);
    EXPECT_EQ(tok["normalizer"], hf_tok["normalizer"]);
    EXPECT_EQ(tok["model"]["ignore_merges"], hf_tok["model"]["ignore_merges"]);
}

INSTANTIATE_TEST_SUITE_P(Models, GgufByteLevel,
                         ::testing::Values(ByteLevelCase{"qwen3", "qwen2", "qwen2"},
                                           ByteLevelCase{"llama3", "llama-bpe", "llama-bpe"}),
                         [](const auto& info) { return std::string(info.param.model); });

// ---- Small files written here ----

// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then pieces.
GgufTestWriter small_spm(const std::vector<std::pair<std::string, int32_t>>& pieces) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(fmt::format("<0x{:02X}>", b));
        types.push_back(6);
    }
    for (const auto& [text, type] : pieces) {
        tokens.push_back(text);
        types.push_back(type);
    }
    std::vector<float> scores(tokens.size(), 0.0f);
    for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i);
    GgufTestWriter w;
    w.string("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", tokens);
    w.f32s("tokenizer.ggml.scores", scores);
    w.i32s("tokenizer.ggml.token_type", types);
    return w;
}

std::string written(const GgufTestWriter& w, const std::string& name) {
    const std::string path = (temp_dir("gguf-vocab-small") / (name + ".gguf")).string();
    w.write(path);
    return path;
}

TEST(GgufSmall, SentencePieceWithoutSpacePrefixAndUserDefinedTokens) {
    const std::string sp = "\xE2\x96\x81";  // "▁"
    GgufTestWriter w = small_spm({{"a", 1},
                                  {"b", 1},
                                  {sp, 1},
                                  {"ab", 1},
                                  {sp + "a", 1},
                                  {sp + "ab", 1},
                                  {"<tag>", 4},
                                  {"<end_of_turn>", 3}});
    w.boolean("tokenizer.ggml.add_space_prefix", false);
    w.u32("tokenizer.ggml.eot_token_id", 266);
    w.string("tokenizer.chat_template", "{{ messages }}");
    const std::string path = written(w, "spm");
    const auto tok = load_tokenizer(path);
    // No space before the text; user-defined tokens cut out of the raw text
    // without a space after them; unknown characters as bytes.
    EXPECT_EQ(tok->encode("ab ab<tag>ab", true), (std::vector<int32_t>{1, 262, 264, 265, 262}));
    EXPECT_EQ(tok->encode("ac", false), (std::vector<int32_t>{259, 3 + 'c'}));
    EXPECT_EQ(tok->decode(std::vector<int32_t>{262, 264, 265}), "ab ab<tag>");
    EXPECT_FALSE(tok->is_special(265));
    EXPECT_TRUE(tok->is_special(266));
    // EOS with the end-of-turn token.
    EXPECT_EQ(tok->eos_ids(), (std::vector<int32_t>{2, 266}));
    EXPECT_EQ(GgufFile(path).find_string("tokenizer.chat_template"), "{{ messages }}");
    const GgufTokenizerFiles files = gguf_tokenizer_files(GgufFile(path));
    EXPECT_EQ(nlohmann::json::parse(files.generation_config_json)["eos_token_id"],
              nlohmann::json::array({2, 266}));
    EXPECT_EQ(nlohmann::json::parse(files.tokenizer_config_json)["chat_template"],
              "{{ messages }}");
    fs::remove_all(fs::path(path).parent_path());
}

// A byte-level vocabulary: GPT-2's 256 byte characters, then `merged`.
GgufTestWriter small_gpt2(const std::string& pre, const std::vector<std::string>& merges,
                          const std::vector<std::string>& merged) {
    std::vector<std::string> tokens;
    uint32_t shifted = 256;  // bytes without a printable character of their own
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        tokens.emplace_back();
        utf8::append(tokens.back(), printable ? b : shifted++);
    }
    tokens.insert(tokens.end(), merged.begin(), merged.end());
    GgufTestWriter w;
    w.string("tokenizer.ggml.model", "gpt2");
    w.string("tokenizer.ggml.pre", pre);
    w.strings("tokenizer.ggml.tokens", tokens);
    w.strings("tokenizer.ggml.merges", merges);
    return w;
}

TEST(GgufSmall, ByteLevelDefaults) {
    const std::string path = written(small_gpt2("gpt-2", {"h e", "he l"}, {"he", "hel"}), "gpt2");
    const auto tok = load_tokenizer(path);
    EXPECT_EQ(tok->encode("hel lo", true), (std::vector<int32_t>{257, ' ', 'l', 'o'}));
    EXPECT_EQ(tok->decode(std::vector<int32_t>{257, ' ', 'l', 'o'}), "hel lo");
    EXPECT_EQ(tok->bos_id(), -1);  // add_bos defaults to false for "gpt2"
    EXPECT_TRUE(tok->eos_ids().empty());
    EXPECT_TRUE(gguf_tokenizer_files(GgufFile(path)).generation_config_json.empty());
    fs::remove_all(fs::path(path).parent_path());
}

// ---- Errors: one line naming the file and the key ----

void expect_error(const GgufTestWriter& w, const std::vector<std::string>& parts) {
    const std::string path = written(w, "bad");
    const std::string what = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(what.find(path), std::string::npos) << what;
    for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    fs::remove_all(fs::path(path).parent_path());
}

TEST(GgufErrors, UnknownModel) {
    for (const char* model : {"bert", "t5", "rwkv", "none"}) {
        GgufTestWriter w;
        w.string("tokenizer.ggml.model", model);
        w.strings("tokenizer.ggml.tokens", {"a", "b"});
        expect_error(w, {"tokenizer.ggml.model", std::string("\"") + model + "\""});
    }
}

TEST(GgufErrors, UnknownPreTokenizer) {
    expect_error(small_gpt2("deepseek-coder", {"h e"}, {"he"}),
                 {"tokenizer.ggml.pre", "\"deepseek-coder\"", "qwen2"});
}

TEST(GgufErrors, ScoresOfAnotherLength) {
    GgufTestWriter w;
    w.string("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.f32s("tokenizer.ggml.scores", {0, 0, 0});
    expect_error(w, {"tokenizer.ggml.scores", "3", "4 tokens"});
}

TEST(GgufErrors, TokenTypesOfAnotherLength) {
    GgufTestWriter w = small_gpt2("gpt-2", {"h e"}, {"he"});
    w.i32s("tokenizer.ggml.token_type", {1, 1});
    expect_error(w, {"tokenizer.ggml.token_type", "2 entries"});
}

TEST(GgufErrors, MergeOfUnknownTokens) {
    expect_error(small_gpt2("gpt-2", {"h e", "he zz"}, {"he", "hezz"}),
                 {"tokenizer.ggml.merges[1]", "\"zz\" is not a token"});
    // The merged token must be in the vocabulary too.
    expect_error(small_gpt2("gpt-2", {"a b"}, {}),
                 {"tokenizer.ggml.merges[0]", "\"ab\" is not a token"});
}

TEST(GgufErrors, NoTokenizer) {
    GgufTestWriter w;
    w.string("general.architecture", "llama");
    expect_error(w, {"tokenizer.ggml.model", "missing"});
}

}  // namespace
}  // namespace anelm::test
