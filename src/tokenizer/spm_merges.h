// SentencePiece vocabularies (llama2.c's tokenizer.bin, GGUF's "llama" model)
// carry a score per piece instead of merges; Hugging Face's BPE needs ranked
// merges. One merge per split of a piece into two pieces, ranked by the merged
// piece's score (highest first; ties by ids), as Hugging Face converts a
// SentencePiece model. Merging lowest rank first then picks the pair that
// SentencePiece (and run.c, and llama.cpp) picks, the highest-scoring
// concatenation, except where equal scores or overlapping splits leave a tie
// that those break by position.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace anelm {

struct PieceMerge {
    int32_t left, right;  // ids of the two halves, in rank order
};

// pieces[id] is the text of id ("▁" form) and scores[id] its score. Only ids
// with usable(id) take part, as a merged piece or as a half; a merged piece
// also needs a score above min_score.
std::vector<PieceMerge> merges_by_score(std::span<const std::string_view> pieces,
                                        std::span<const float> scores,
                                        const std::function<bool(int32_t)>& usable,
                                        float min_score);

}  // namespace anelm
