// A deterministic mix of English prose, source code and CJK text for tokenizer
// speed measurements, built from a fixed seed so every run (and the Hugging Face
// comparison script, which reads it from a file) encodes the same bytes.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/utf8.h"

namespace anelm::bench {

inline std::string mixed_text(size_t bytes) {
    static const std::vector<std::string> words = {
        "the",     "of",     "and",     "to",      "in",      "is",         "was",     "that",
        "for",     "on",     "with",    "as",      "by",      "model",      "token",   "language",
        "Neural",  "Engine", "quickly", "running", "doesn't", "we'll",      "numbers", "2024",
        "3.14159", "people", "through", "between", "however", "Tokenizers", "split",   "text",
        "into",    "pieces", "before",  "merging", "them",    "again"};
    static const std::vector<std::string> code = {
        "for (int i = 0; i < n; ++i) {\n    sum += x[i] * w[i];\n}\n",
        "def encode(self, text: str) -> list[int]:\n    return self._bpe(text)\n",
        "    if (!ok) return fail(\"{}: bad header\", path);\n",
        "const auto it = std::find_if(v.begin(), v.end(), [&](auto& e) { return e.id == id; });\n",
        "{\"name\": \"anelm\", \"version\": [0, 1, 0], \"tags\": [\"llm\", \"ane\"]}\n",
        "\tx = np.einsum('bhqd,bhkd->bhqk', q, k) / math.sqrt(d)\n"};
    std::mt19937 rng(20261202);
    std::string out;
    out.reserve(bytes + 256);
    while (out.size() < bytes) {
        switch (rng() % 3) {
            case 0:  // a sentence of prose
                for (int n = 8 + rng() % 16; n > 0; --n) {
                    out += words[rng() % words.size()];
                    out += n > 1 ? " " : ".\n";
                }
                break;
            case 1:
                out += code[rng() % code.size()];
                break;
            default:  // CJK ideographs and kana with full-width punctuation
                for (int n = 10 + rng() % 30; n > 0; --n) {
                    const uint32_t cp =
                        rng() % 4 == 0 ? 0x3041 + rng() % 86 : 0x4E00 + rng() % 3000;
                    utf8::append(out, cp);
                    if (rng() % 12 == 0) out += "\xE3\x80\x82";  // 。
                }
                out += "\n";
        }
    }
    return out;
}

}  // namespace anelm::bench
