#include "tokenizer/spm_merges.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace anelm {

std::vector<PieceMerge> merges_by_score(std::span<const std::string_view> pieces,
                                        std::span<const float> scores,
                                        const std::function<bool(int32_t)>& usable,
                                        float min_score) {
    const auto n = static_cast<int32_t>(pieces.size());
    std::unordered_map<std::string_view, int32_t> ids;
    ids.reserve(pieces.size());
    for (int32_t id = 0; id < n; ++id)
        if (usable(id)) ids.emplace(pieces[id], id);
    auto id_of = [&](std::string_view s) {
        const auto it = ids.find(s);
        return it == ids.end() ? -1 : it->second;
    };

    struct Ranked {
        float score;
        int32_t merged, left, right;
    };
    std::vector<Ranked> ranked;
    for (int32_t id = 0; id < n; ++id) {
        if (!usable(id) || !(scores[id] > min_score)) continue;
        const std::string_view text = pieces[id];
        if (text.empty()) continue;
        // Cut only between characters: a half is a piece, so it is whole UTF-8.
        for (size_t k = utf8::step(text, 0).length; k < text.size();
             k += utf8::step(text, k).length) {
            const int32_t left = id_of(text.substr(0, k)), right = id_of(text.substr(k));
            if (left >= 0 && right >= 0) ranked.push_back({scores[id], id, left, right});
        }
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.merged != b.merged) return a.merged < b.merged;
        return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    std::vector<PieceMerge> merges;
    merges.reserve(ranked.size());
    for (const Ranked& r : ranked) merges.push_back({r.left, r.right});
    return merges;
}

}  // namespace anelm
