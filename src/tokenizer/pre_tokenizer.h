// tokenizer.json "pre_tokenizer": cuts normalized text into the pieces
// ("words") that the model encodes one by one, and may rewrite them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace anelm {

struct PieceList {
    struct Piece {
        uint32_t begin, end;
        bool at_start;  // begins at offset 0 of the original input (Metaspace "first")
    };
    std::string text;
    std::vector<Piece> pieces;

    std::string_view view(const Piece& p) const {
        return std::string_view(text).substr(p.begin, p.end - p.begin);
    }
    void clear() {
        text.clear();
        pieces.clear();
    }
    void add(std::string_view s, bool at_start) {
        const auto begin = static_cast<uint32_t>(text.size());
        text.append(s);
        pieces.push_back({begin, static_cast<uint32_t>(text.size()), at_start});
    }
};

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Rewrites list; scratch is spare storage kept by the caller between calls.
    virtual void apply(PieceList& list, PieceList& scratch) const = 0;
};

// From the JSON object (null gives nullptr); an unsupported type is an error naming it.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& where);

}  // namespace anelm
