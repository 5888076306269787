// What `anelm` says when it is given something other than a model, a model
// without a chat template, or a tokenizer that does not fit the model: one
// line naming the file, exit 1, nothing on stdout.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "run_anelm.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

constexpr const char* expected_models =
    "(expected a Hugging Face folder, a GGUF file or a llama2.c checkpoint)";

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// llama2.c's tokenizer.bin of n pieces: " " (which encoding starts with), "t1", "t2", ...
std::string llama2c_tokenizer(int n) {
    std::string out;
    auto put = [&](const void* p) { out.append(static_cast<const char*>(p), 4); };
    const int32_t max_len = 8;
    put(&max_len);
    for (int i = 0; i < n; ++i) {
        const std::string piece = i == 0 ? " " : "t" + std::to_string(i);
        const float score = -static_cast<float>(i);
        const auto len = static_cast<int32_t>(piece.size());
        put(&score);
        put(&len);
        out += piece;
    }
    return out;
}

// Expects exit 1 with nothing on stdout and one line "anelm: error: <message>"
// on stderr that contains every part.
void expect_refused(const std::string& args, std::initializer_list<std::string> parts) {
    SCOPED_TRACE(args);
    const auto r = test::run_anelm(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("anelm: error: ")) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    for (const std::string& part : parts)
        EXPECT_NE(r.err.find(part), std::string::npos) << r.err << "\nmissing: " << part;
}

class WrongInput : public ::testing::Test {
protected:
    void SetUp() override { dir_ = test::temp_dir("wrong-input"); }
    fs::path dir_;
};

TEST_F(WrongInput, FilesThatAreNoModelAreNamed) {
    const fs::path readme = dir_ / "README.md";
    write_file(readme, "# anelm\n\nConverts language models.\n");
    const fs::path tokenizer = dir_ / "tokenizer.json";
    write_file(tokenizer, R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}}})");
    const fs::path garbage = dir_ / "model.bin";
    write_file(garbage, std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
    const fs::path bare = dir_ / "bare";
    fs::create_directories(bare);
    write_file(bare / "tokenizer.json", "{}");
    for (const char* command : {"info ", "generate -p hi ", "chat ", "doctor "}) {
        expect_refused(command + quoted(readme),
                       {readme.string() + ": not a model file but text " + expected_models});
        expect_refused(command + quoted(tokenizer),
                       {tokenizer.string() + ": not a model file but a tokenizer"});
        expect_refused(command + quoted(garbage),
                       {garbage.string() + ": not a model file " + expected_models});
        expect_refused(command + quoted(bare),
                       {bare.string() + ": no config.json in this folder", expected_models});
    }
}

TEST_F(WrongInput, TruncatedCheckpointSaysHowLongItShouldBe) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    std::ifstream in(test::shared_path("models/stories260K/stories260K.bin"), std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    const fs::path cut = dir_ / "cut.bin";
    write_file(cut, head);
    expect_refused("info " + quoted(cut), {cut.string() + ": file is 4096 bytes", "needs 1056540"});
}

TEST_F(WrongInput, CheckpointWithoutChatTemplate) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const fs::path model = test::shared_path("models/stories260K/stories260K.bin");
    const fs::path tok = test::shared_path("models/stories260K/tok512.bin");
    const fs::path messages = dir_ / "messages.json";
    write_file(messages, R"([{"role": "user", "content": "Once upon a time"}])");
    const std::string no_template =
        model.string() + ": no chat template; use generate, or --template FILE";
    expect_refused("template " + quoted(model) + " --messages " + quoted(messages), {no_template});
    expect_refused("chat " + quoted(model) + " --tokenizer " + quoted(tok), {no_template});
    expect_refused("generate " + quoted(model) + " --tokenizer " + quoted(tok) + " --chat -p hi",
                   {no_template});

    // --template gives it one.
    const fs::path jinja = dir_ / "plain.jinja";
    write_file(jinja, "{% for m in messages %}{{ m.content }}.{% endfor %}");
    auto r = test::run_anelm("template " + quoted(model) + " --template " + quoted(jinja) +
                             " --messages " + quoted(messages));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "Once upon a time.");
    r = test::run_anelm("generate " + quoted(model) + " --tokenizer " + quoted(tok) +
                        " --chat --template " + quoted(jinja) + " -p 'Once upon a time' -n 20");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("Once upon a time.")) << r.out;
    // A template file must be text.
    expect_refused("template " + quoted(model) + " --template " + quoted(model) + " --messages " +
                       quoted(messages),
                   {model.string() + ": not a text file (expected a Jinja chat template)"});
}

TEST_F(WrongInput, TokenizerWithIdsTheModelCannotEmbedIsRefused) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const fs::path model = test::shared_path("models/stories260K/stories260K.bin");
    const fs::path big = dir_ / "tok600.bin";
    write_file(big, llama2c_tokenizer(600));
    const fs::path text = dir_ / "text.txt";
    write_file(text, "Once upon a time\n");
    for (const std::string& command : {std::string("generate -p 'Once upon' "),
                                       "perplexity -f " + quoted(text) + " ", std::string("chat ")})
        expect_refused(
            command + quoted(model) + " --tokenizer " + quoted(big),
            {big.string() + ": the tokenizer has 600 ids", model.string(), "embeds only 512"});
    // Fewer ids than embedding rows is a padded vocabulary, and fine.
    const fs::path small = dir_ / "tok300.bin";
    write_file(small, llama2c_tokenizer(300));
    const auto r = test::run_anelm("generate " + quoted(model) + " --tokenizer " + quoted(small) +
                                   " -p 't1 t2' -n 8 --temp 0");
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(WrongInput, InfoPrintsParametersInUnits) {
    const fs::path model = dir_ / "tiny";
    const auto synth = test::run_anelm("synth tiny-llama -o " + quoted(model));
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    const auto r = test::run_anelm("info " + quoted(model));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("parameters     ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    // tiny-llama has 2 layers of width 64 and 640 embedding rows: some 100K parameters.
    EXPECT_TRUE(line.ends_with("K)")) << line;
    EXPECT_EQ(line.find(" B)"), std::string::npos) << line;
}

}  // namespace
}  // namespace anelm
