// llama2.c's tokenizer.bin exported as Hugging Face files: loaded back with our
// tokenizer.json reader, it encodes as run.c does and decodes back to the text.
#include "tokenizer/llama2c_export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "llama2c_cases.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

namespace fs = std::filesystem;

// tok512 exported once into a temporary folder.
class Llama2cExport : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!fs::exists(shared_path(tok512))) return;
        dir_ = temp_dir("llama2c-export");
        names_ = write_llama2c_hf_files(shared_path(tok512).string(), dir_.string(), 512);
        hf_ = load_tokenizer((dir_ / "tokenizer.json").string());
        bin_ = load_tokenizer(shared_path(tok512).string());
    }
    static void TearDownTestSuite() {
        hf_.reset();
        bin_.reset();
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    void SetUp() override { ANELM_REQUIRE_SHARED(tok512); }

    static inline fs::path dir_;
    static inline std::vector<std::string> names_;
    static inline std::unique_ptr<Tokenizer> hf_, bin_;
};

TEST_F(Llama2cExport, WritesLlama2StyleFiles) {
    EXPECT_EQ(names_, (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
    const auto tok = nlohmann::json::parse(read_file(dir_ / "tokenizer.json"));
    const auto& model = tok["model"];
    EXPECT_EQ(model["type"], "BPE");
    EXPECT_EQ(model["byte_fallback"], true);
    EXPECT_EQ(model["fuse_unk"], true);
    EXPECT_EQ(model["unk_token"], "<unk>");
    EXPECT_EQ(model["vocab"].size(), 512u);
    EXPECT_EQ(model["vocab"]["<s>"], 1);
    EXPECT_EQ(model["vocab"]["<0x0A>"], 13);
    EXPECT_EQ(model["vocab"]["\xE2\x96\x81t"], 259);  // run.c's " t"
    // The highest-scoring piece's merge first, as "left right" strings.
    ASSERT_FALSE(model["merges"].empty());
    EXPECT_EQ(model["merges"][0], "\xE2\x96\x81 t");
    for (const auto& merge : model["merges"]) ASSERT_TRUE(merge.is_string()) << merge.dump();
    EXPECT_TRUE(tok["pre_tokenizer"].is_null());
    EXPECT_EQ(tok["added_tokens"].size(), 3u);

    const auto config = nlohmann::json::parse(read_file(dir_ / "tokenizer_config.json"));
    EXPECT_EQ(config["tokenizer_class"], "LlamaTokenizerFast");
    EXPECT_EQ(config["bos_token"], "<s>");
    EXPECT_EQ(config["eos_token"], "</s>");
    EXPECT_EQ(config["unk_token"], "<unk>");
    EXPECT_EQ(config["add_bos_token"], true);
    EXPECT_EQ(config["add_eos_token"], false);
    EXPECT_EQ(config["model_max_length"], 512);

    EXPECT_EQ(hf_->n_vocab(), 512);
    EXPECT_EQ(hf_->bos_id(), 1);
    EXPECT_EQ(hf_->eos_ids(), std::vector<int32_t>{2});
}

// Text that is not UTF-8 has no Hugging Face form (a Python or Rust string
// cannot hold it), so those run.c cases are left out.
TEST_F(Llama2cExport, EncodesAsRunC) {
    size_t passed = 0, checked = 0;
    for (const Llama2cCase& c : llama2c_cases()) {
        if (utf8::find_invalid(c.text) != std::string::npos) continue;
        ++checked;
        EXPECT_EQ(hf_->encode(c.text, true), c.ids) << c.text;
        const std::vector<int32_t> no_bos(c.ids.begin() + 1, c.ids.end());
        EXPECT_EQ(hf_->encode(c.text, false), no_bos) << c.text;
        passed += hf_->encode(c.text, true) == c.ids;
    }
    EXPECT_EQ(checked + 1, llama2c_cases().size());
    std::cout << "tokenizer.json of " << tok512 << ": " << passed << "/" << checked
              << " run.c encodings match\n";
}

const std::string story =
    "Once upon a time, in a small town, there lived a little girl named Lily. She loved to play "
    "outside with her big red ball.\n\nOne day, Lily's mom said: \"Lily, it is 3:45 - time to come "
    "home!\" Lily was sad, but she said \"OK, Mom.\"\n\tThey ate soup (hot!) and 12 cookies...  "
    "Then they went to bed.   The end.\n"
    "Caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 "
    "\xC2\xA0nbsp\xE2\x80\x8A"
    "hair ~[x]|<y>% \\ tail  ";

TEST_F(Llama2cExport, EncodesALongerTextAsTheBinTokenizer) {
    EXPECT_EQ(hf_->encode(story, true), bin_->encode(story, true));
    EXPECT_EQ(hf_->encode(story, false), bin_->encode(story, false));
}

// Texts glued from random pieces of the vocabulary (spaces, repeats and
// single characters included) meet many merge orders.
TEST_F(Llama2cExport, EncodesRandomPieceTextsAsTheBinTokenizer) {
    std::mt19937 rng(18);
    std::uniform_int_distribution<int32_t> piece(3 + 256, bin_->n_vocab() - 1);
    std::uniform_int_distribution<int> length(1, 24);
    size_t differ = 0;
    for (int n = 0; n < 2000; ++n) {
        std::string text;
        for (int k = length(rng); k > 0; --k) text += bin_->token_to_piece(piece(rng));
        const bool same = hf_->encode(text, true) == bin_->encode(text, true);
        EXPECT_TRUE(same) << '"' << text << '"';
        differ += !same;
        if (differ > 5) break;
    }
}

TEST_F(Llama2cExport, DecodesBackToTheText) {
    std::vector<std::string> texts = {story};
    for (const Llama2cCase& c : llama2c_cases())
        if (utf8::find_invalid(c.text) == std::string::npos) texts.push_back(c.text);
    for (const std::string& text : texts) {
        const std::vector<int32_t> ids = hf_->encode(text, false);
        EXPECT_EQ(hf_->decode(ids), text);
        StreamDecoder stream(*hf_);
        std::string streamed;
        for (int32_t id : ids) streamed += stream.push(id);
        EXPECT_EQ(streamed + stream.flush(), text);
    }
    // With BOS, as transformers' decode(skip_special_tokens=False) prints it.
    EXPECT_EQ(hf_->decode(llama2c_cases()[0].ids), "<s> Once upon a time");
}

// A tokenizer.bin whose byte tokens are not where run.c looks for them.
TEST(Llama2cExportErrors, RejectsMisplacedByteTokens) {
    const auto dir = temp_dir("llama2c-export-bad");
    const auto path = (dir / "tok.bin").string();
    {
        std::ofstream out(path, std::ios::binary);
        auto put = [&](float score, const std::string& piece) {
            const auto length = static_cast<int32_t>(piece.size());
            out.write(reinterpret_cast<const char*>(&score), 4);
            out.write(reinterpret_cast<const char*>(&length), 4);
            out.write(piece.data(), length);
        };
        const int32_t max_token_length = 8;
        out.write(reinterpret_cast<const char*>(&max_token_length), 4);
        for (const char* special : {"<unk>", "\n<s>\n", "\n</s>\n"}) put(0, special);
        for (int b = 0; b < 256; ++b) put(0, fmt::format("<0x{:02X}>", b == 7 ? 8 : b));
        put(-1, " a");
    }
    try {
        llama2c_to_hf(path, 64);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_NE(what.find("token 10 "), std::string::npos) << what;
        EXPECT_NE(what.find("<0x07>"), std::string::npos) << what;
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace anelm::test
