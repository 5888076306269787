// llama.cpp's llama-spm test strings (Meta's Llama 2 SentencePiece vocabulary,
// ids made with Hugging Face transformers, no BOS) through llama2.c's encode:
// the vocabulary of ggml-vocab-llama-spm.gguf is written out as a llama2.c
// tokenizer.bin the way llama2.c's export.py does it ("▁" becomes " ", BOS and
// EOS become "\n<s>\n" and "\n</s>\n"), so the test shows that run.c's
// algorithm is SentencePiece BPE on a real 32k vocabulary.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

constexpr const char* dir = "tokenizers/llama.cpp-vocab-tests/";

// The few GGUF pieces this test needs: string and array key-values.
class GgufReader {
public:
    explicit GgufReader(std::string bytes) : d_(std::move(bytes)) {
        if (d_.compare(0, 4, "GGUF") != 0) throw std::runtime_error("not a GGUF file");
        pos_ = 8;
        const uint64_t n_tensors = u64();
        const uint64_t n_kv = u64();
        if (n_tensors != 0) throw std::runtime_error("expected a vocabulary-only GGUF");
        for (uint64_t k = 0; k < n_kv; ++k) {
            const std::string key = str();
            const uint32_t type = u32();
            if (key == "tokenizer.ggml.tokens") {
                tokens = string_array(type);
            } else if (key == "tokenizer.ggml.scores") {
                scores = numbers<float>(type, 6);
            } else if (key == "tokenizer.ggml.token_type") {
                types = numbers<int32_t>(type, 5);
            } else {
                skip(type);
            }
        }
    }
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;

private:
    template <typename T>
    T read() {
        T v;
        std::memcpy(&v, d_.data() + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    uint32_t u32() { return read<uint32_t>(); }
    uint64_t u64() { return read<uint64_t>(); }
    std::string str() {
        const uint64_t n = u64();
        std::string s = d_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    std::vector<std::string> string_array(uint32_t type) {
        if (type != 9 || u32() != 8) throw std::runtime_error("expected an array of strings");
        std::vector<std::string> out(u64());
        for (auto& s : out) s = str();
        return out;
    }
    template <typename T>
    std::vector<T> numbers(uint32_t type, uint32_t element) {
        if (type != 9 || u32() != element) throw std::runtime_error("unexpected array type");
        std::vector<T> out(u64());
        for (auto& v : out) v = read<T>();
        return out;
    }
    void skip(uint32_t type) {
        static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (type == 8) {
            str();
        } else if (type == 9) {
            const uint32_t element = u32();
            for (uint64_t n = u64(); n > 0; --n) skip(element);
        } else {
            pos_ += sizes[type];
        }
    }
    std::string d_;
    size_t pos_ = 0;
};

std::string write_llama2c_tokenizer(const GgufReader& g, const std::filesystem::path& path) {
    const std::string meta = "\xE2\x96\x81";
    std::vector<std::string> pieces;
    int32_t max_length = 0;
    for (size_t i = 0; i < g.tokens.size(); ++i) {
        const std::string& t = g.tokens[i];
        const bool control = g.types[i] == 3;  // <s>, </s>
        std::string p = control ? "\n" : "";
        for (size_t k = 0; k < t.size();) {
            const bool is_meta = t.compare(k, meta.size(), meta) == 0;
            p += is_meta ? ' ' : t[k];
            k += is_meta ? meta.size() : 1;
        }
        if (control) p += '\n';
        max_length = std::max(max_length, static_cast<int32_t>(p.size()));
        pieces.push_back(std::move(p));
    }
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&max_length), 4);
    for (size_t i = 0; i < pieces.size(); ++i) {
        const auto length = static_cast<int32_t>(pieces[i].size());
        out.write(reinterpret_cast<const char*>(&g.scores[i]), 4);
        out.write(reinterpret_cast<const char*>(&length), 4);
        out.write(pieces[i].data(), length);
    }
    return path.string();
}

TEST(LlamaSpmGguf, RunCEncodeMatchesSentencePiece) {
    ANELM_REQUIRE_SHARED(std::string(dir) + "ggml-vocab-llama-spm.gguf");
    const GgufReader gguf(read_file(shared_path(std::string(dir) + "ggml-vocab-llama-spm.gguf")));
    ASSERT_EQ(gguf.tokens.size(), 32000u);
    const auto tmp = temp_dir("spm");
    const auto tok = load_tokenizer(write_llama2c_tokenizer(gguf, tmp / "tokenizer.bin"));

    const std::string all =
        read_file(shared_path(std::string(dir) + "ggml-vocab-llama-spm.gguf.inp"));
    std::ifstream expected(shared_path(std::string(dir) + "ggml-vocab-llama-spm.gguf.out"));
    const std::string sep = "\n__ggml_vocab_test__\n";
    size_t passed = 0, total = 0;
    for (size_t start = 0, at; (at = all.find(sep, start)) != std::string::npos;
         start = at + sep.size()) {
        const std::string input = all.substr(start, at - start);
        std::string line;
        std::getline(expected, line);
        std::istringstream words(line);
        std::vector<int32_t> ids;
        for (int32_t id; words >> id;) ids.push_back(id);
        const bool ok = tok->encode(input, false) == ids;
        EXPECT_TRUE(ok) << "case " << total << ": \"" << input << "\"";
        passed += ok;
        ++total;
    }
    EXPECT_EQ(total, 46u);
    std::cout << dir << "ggml-vocab-llama-spm.gguf: " << passed << "/" << total << " pass\n";
    std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace anelm::test
