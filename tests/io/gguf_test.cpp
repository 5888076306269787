// The GGUF reader: metadata of every type, tensors and their placement, and a
// one-line error for every way a file can be malformed or cut short.
#include "io/gguf.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "io/gguf_test_writer.h"
#include "test_support.h"

namespace anelm {
namespace {

using test::GgufTestWriter;

class Gguf : public ::testing::Test {
protected:
    void SetUp() override { dir_ = test::temp_dir("gguf"); }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string write(const std::string& bytes, const std::string& name = "t.gguf") {
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }
    // The message of the Error reading bytes throws; fails the test when none.
    std::string error_of(const std::string& bytes) {
        const std::string path = write(bytes);
        try {
            GgufFile file(path);
        } catch (const Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "no error";
        return {};
    }
    std::filesystem::path dir_;
};

GgufTestWriter sample() {
    GgufTestWriter w;
    w.string("general.architecture", "qwen3");
    w.u32("qwen3.block_count", 28);
    w.i32("signed", -7);
    w.u64("big", uint64_t{1} << 40);
    w.f32("qwen3.rope.freq_base", 1e6f);
    w.boolean("flag", true);
    w.strings("tokenizer.ggml.tokens", {"a", "", "ccc"});
    w.i32s("tokenizer.ggml.token_type", {1, 3, 6});
    w.f32s("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f});
    std::string f32(6 * 4, '\0');
    for (int i = 0; i < 6; ++i) {
        const float v = static_cast<float>(i) + 0.5f;
        std::memcpy(f32.data() + i * 4, &v, 4);
    }
    w.tensor("m.weight", {2, 3}, 0, f32);
    w.tensor("v.weight", {5}, 1, std::string(10, '\x3c'));
    return w;
}

TEST_F(Gguf, ReadsMetadataOfEveryTypeAndTensors) {
    const std::string path = write(sample().bytes());
    ASSERT_TRUE(is_gguf_file(path));
    const GgufFile f(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.get_string("general.architecture"), "qwen3");
    EXPECT_EQ(f.get_int("qwen3.block_count"), 28);
    EXPECT_EQ(f.get_int("signed"), -7);
    EXPECT_EQ(f.get_int("big"), int64_t{1} << 40);
    EXPECT_DOUBLE_EQ(f.get_float("qwen3.rope.freq_base"), 1e6);
    EXPECT_DOUBLE_EQ(f.get_float("qwen3.block_count"), 28.0);  // integers read as numbers
    EXPECT_EQ(f.find_bool("flag"), true);
    EXPECT_EQ(f.find_int("absent"), std::nullopt);
    EXPECT_EQ(f.strings("tokenizer.ggml.tokens"), (std::vector<std::string_view>{"a", "", "ccc"}));
    EXPECT_EQ(f.ints("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, 3, 6}));
    EXPECT_EQ(f.floats("tokenizer.ggml.scores"), (std::vector<float>{0.5f, -1.0f, 2.0f}));
    EXPECT_TRUE(f.strings("absent").empty());

    ASSERT_EQ(f.tensors().size(), 2u);
    const GgufTensor* m = f.find_tensor("m.weight");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->shape, (std::vector<int64_t>{2, 3}));  // outermost first
    EXPECT_EQ(m->n_bytes, 24u);
    float last;
    std::memcpy(&last, m->data + 20, 4);
    EXPECT_EQ(last, 5.5f);
    const GgufTensor* v = f.find_tensor("v.weight");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->n_bytes, 10u);
    EXPECT_EQ(v->offset % 32, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data) % 32, 0u);
}

TEST_F(Gguf, HonoursTheAlignmentKey) {
    GgufTestWriter w = sample();
    w.alignment(64);
    const GgufFile f(write(w.bytes()));
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.find_tensor("v.weight")->offset, 64u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.find_tensor("v.weight")->data) % 64, 0u);
}

TEST_F(Gguf, WrongTypesNameTheKey) {
    const GgufFile f(write(sample().bytes()));
    EXPECT_THROW(
        {
            try {
                (void)f.find_int("general.architecture");
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find(
                              "metadata general.architecture is string, expected an integer"),
                          std::string::npos)
                    << e.what();
                throw;
            }
        },
        Error);
    EXPECT_THROW((void)f.strings("tokenizer.ggml.scores"), Error);
    EXPECT_THROW((void)f.get_string("absent"), Error);
}

// Every prefix of a valid file is an Error (never a crash or an over-read,
// which the sanitizer build would catch).
TEST_F(Gguf, EveryTruncationIsAnError) {
    const std::string whole = sample().bytes();
    for (size_t n = 0; n < whole.size(); ++n) {
        // The bytes after the last tensor's are padding-free, so only the
        // complete file is valid.
        const std::string message = error_of(whole.substr(0, n));
        EXPECT_NE(message.find("t.gguf: "), std::string::npos) << n << ": " << message;
    }
}

TEST_F(Gguf, MalformedHeadersAreNamed) {
    const std::string whole = sample().bytes();
    auto patched = [&](size_t at, std::string bytes) {
        std::string b = whole;
        b.replace(at, bytes.size(), bytes);
        return b;
    };
    EXPECT_NE(error_of(patched(0, "GGUX")).find("not a GGUF file"), std::string::npos);
    EXPECT_NE(error_of(patched(4, std::string("\x01\0\0\0", 4))).find("GGUF version 1"),
              std::string::npos);
    EXPECT_NE(error_of(patched(4, std::string("\0\0\0\x03", 4))).find("big-endian"),
              std::string::npos);

    GgufTestWriter dup;
    dup.u32("k", 1);
    dup.u32("k", 2);
    EXPECT_NE(error_of(dup.bytes()).find("metadata k appears twice"), std::string::npos);

    GgufTestWriter bad_type;
    bad_type.raw("k", std::string("\x0d\0\0\0", 4));
    EXPECT_NE(error_of(bad_type.bytes()).find("metadata k has value type 13"), std::string::npos);

    GgufTestWriter huge_array;  // claims more strings than bytes remain
    huge_array.raw("k", std::string("\x09\0\0\0\x08\0\0\0\xff\xff\xff\xff\xff\xff\0\0", 16));
    EXPECT_NE(error_of(huge_array.bytes()).find("metadata k claims"), std::string::npos);

    GgufTestWriter bad_alignment;
    bad_alignment.u32("general.alignment", 48);
    EXPECT_NE(error_of(bad_alignment.bytes()).find("general.alignment is 48"), std::string::npos);
}

TEST_F(Gguf, MalformedTensorsAreNamed) {
    GgufTestWriter unknown;
    unknown.tensor("t.weight", {32}, 99, std::string(64, '\0'));
    EXPECT_NE(error_of(unknown.bytes()).find("tensor t.weight has type id 99"), std::string::npos);

    GgufTestWriter partial_block;  // Q8_0 rows hold whole blocks of 32
    partial_block.tensor("t.weight", {2, 40}, 8, std::string(200, '\0'));
    EXPECT_NE(error_of(partial_block.bytes()).find("tensor t.weight has rows of 40 elements"),
              std::string::npos);

    GgufTestWriter twice;
    twice.tensor("t.weight", {4}, 0, std::string(16, '\0'));
    twice.tensor("t.weight", {4}, 0, std::string(16, '\0'));
    EXPECT_NE(error_of(twice.bytes()).find("tensor t.weight appears twice"), std::string::npos);

    // The last tensor's data cut short.
    GgufTestWriter short_data;
    short_data.tensor("t.weight", {64}, 0, std::string(256, '\0'));
    const std::string b = short_data.bytes();
    EXPECT_NE(error_of(b.substr(0, b.size() - 4)).find("tensor t.weight needs bytes 0 .. 256"),
              std::string::npos);
}

}  // namespace
}  // namespace anelm
