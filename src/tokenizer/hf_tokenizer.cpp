#include "tokenizer/hf_tokenizer.h"

#include <mutex>

#include "tokenizer/utf8.h"

namespace anelm {

// Buffers of one encode call.
struct HfTokenizer::Work {
    std::vector<AddedTokenMatcher::Segment> segments, normalized_segments;
    std::string normalized;
    PieceList pieces, scratch;
    BpeModel::Scratch bpe;
    bool use_cache = false;
};

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special) const {
    std::string repaired;
    if (utf8::find_invalid(text) != std::string_view::npos) {
        repaired = utf8::repair(text);
        text = repaired;
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 8);
    if (add_special) ids = affixes_.before;
    std::unique_lock<std::mutex> cache_lock(model_.cache_mutex(), std::try_to_lock);
    Work work;
    work.use_cache = cache_lock.owns_lock();
    if (raw_matcher_->empty()) {
        encode_segment(text, true, work, ids);
    } else {
        raw_matcher_->split(text, work.segments);
        for (const auto& seg : work.segments) {
            if (seg.id >= 0)
                ids.push_back(seg.id);
            else
                encode_segment(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0, work,
                               ids);
        }
    }
    if (add_special) ids.insert(ids.end(), affixes_.after.begin(), affixes_.after.end());
    return ids;
}

// One stretch between raw-text added tokens: normalize, cut out the added tokens
// that match normalized text, pre-tokenize and encode the rest.
void HfTokenizer::encode_segment(std::string_view text, bool at_start, Work& work,
                                 std::vector<int32_t>& ids) const {
    if (!normalizer_ && normalized_matcher_->empty()) {
        encode_pieces(text, at_start, work, ids);
        return;
    }
    std::string normalized(text);
    if (normalizer_) normalizer_->normalize(normalized);
    if (normalized_matcher_->empty()) {
        encode_pieces(normalized, at_start, work, ids);
        return;
    }
    work.normalized_segments.clear();
    normalized_matcher_->split(normalized, work.normalized_segments);
    for (const auto& seg : work.normalized_segments) {
        if (seg.id >= 0)
            ids.push_back(seg.id);
        else
            encode_pieces(std::string_view(normalized).substr(seg.begin, seg.end - seg.begin),
                          at_start && seg.begin == 0, work, ids);
    }
}

void HfTokenizer::encode_pieces(std::string_view text, bool at_start, Work& work,
                                std::vector<int32_t>& ids) const {
    if (!pre_tokenizer_) {
        model_.encode_word(text, ids, work.bpe, work.use_cache);
        return;
    }
    work.pieces.clear();
    work.pieces.add(text, at_start);
    pre_tokenizer_->apply(work.pieces, work.scratch);
    for (const auto& piece : work.pieces.pieces)
        model_.encode_word(work.pieces.view(piece), ids, work.bpe, work.use_cache);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
    return decode_window(ids, true, false);
}

std::string HfTokenizer::decode_window(std::span<const int32_t> ids, bool at_start,
                                       bool keep_truncated_tail) const {
    DecodeState state;
    state.at_start = at_start;
    state.keep_truncated_tail = keep_truncated_tail;
    return decode_state(ids, state);
}

std::string HfTokenizer::token_bytes(int32_t id) const {
    DecodeState state;
    state.at_start = false;
    state.keep_invalid = true;
    return decode_state(std::span<const int32_t>(&id, 1), state);
}

std::string HfTokenizer::decode_state(std::span<const int32_t> ids, DecodeState& state) const {
    state.tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (const AddedToken* added = added_by_id(id)) {
            state.tokens.push_back(added->content);
        } else {
            const std::string_view piece = model_.id_to_token(id);
            if (!piece.empty()) state.tokens.emplace_back(piece);
        }
    }
    std::string text;
    if (!decoder_) {
        // No decoder: Hugging Face joins the token strings with spaces.
        for (size_t k = 0; k < state.tokens.size(); ++k) {
            if (k > 0) text += ' ';
            text += state.tokens[k];
        }
        return text;
    }
    decoder_->apply(state);
    for (const std::string& t : state.tokens) text += t;
    return text;
}

const AddedToken* HfTokenizer::added_by_id(int32_t id) const {
    if (added_by_id_.empty()) return nullptr;
    const auto it = added_by_id_.find(id);
    return it == added_by_id_.end() ? nullptr : &added_[it->second];
}

std::string HfTokenizer::token_to_piece(int32_t id) const {
    if (const AddedToken* added = added_by_id(id)) return added->content;
    return std::string(model_.id_to_token(id));
}

int32_t HfTokenizer::token_to_id(std::string_view piece) const {
    const auto it = added_by_content_.find(std::string(piece));
    return it != added_by_content_.end() ? it->second : model_.token_to_id(piece);
}

bool HfTokenizer::is_special(int32_t id) const {
    const AddedToken* added = added_by_id(id);
    return added && added->special;
}

}  // namespace anelm
